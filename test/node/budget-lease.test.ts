import { describe, expect, it } from "vitest";
import { maxCostOf, roundUp } from "../../collector/gateway/model/cost.ts";
import { readModelRequest, routeOf } from "../../collector/gateway/model/apis.ts";
import { BudgetLeases, type Held, type LeaseReply, type LeaseServer, type Reservation } from "../../collector/gateway/lease.ts";
import { MAX_LEASE_MICROUSD } from "../../protocol/index.ts";
import { priceCall } from "../../protocol/price.ts";

/**
 * The server's lease rules (workers/workspace-object.ts, tested with real Durable Objects in
 * test/workers/budgets.test.ts) in memory, counting each request: one workspace budget, leases
 * that hold budget until they expire, priced calls that come off their run's leases.
 */
class Server implements LeaseServer {
  readonly leases = new Map<string, { run: string; microusd: number; expires: number }>();
  readonly asked: string[] = [];
  spent = 0;
  down = false;
  limit: number;
  now = 0;
  constructor(limit: number) {
    this.limit = limit;
  }
  held(): number {
    let n = this.spent;
    for (const l of this.leases.values()) if (l.expires > this.now) n += l.microusd;
    return n;
  }
  #check(add: number): LeaseReply | null {
    if (this.down) return { granted: false, unreachable: "connect ECONNREFUSED" };
    const after = this.held() + add;
    const reserved = after - this.spent;
    return add > 0 && after > this.limit
      ? {
          granted: false,
          exhausted: { budget: "daily", spent_microusd: after, reserved_microusd: reserved, limit_microusd: this.limit },
          room_microusd: Math.max(0, this.limit - (after - add)),
        }
      : null;
  }
  async open(run: string, microusd: number, ttlMs: number): Promise<LeaseReply> {
    this.asked.push(`open ${microusd}`);
    if (microusd > MAX_LEASE_MICROUSD) return { granted: false, rejected: "400 bad_request" };
    const no = this.#check(microusd);
    if (no) return no;
    const id = `lease_${String(this.leases.size + 1).padStart(32, "0")}`;
    this.leases.set(id, { run, microusd, expires: this.now + ttlMs });
    return { granted: true, lease_id: id, microusd, expires_ms: this.now + ttlMs, room_microusd: this.limit - this.held() };
  }
  async resize(id: string, add: number, ttlMs: number): Promise<LeaseReply> {
    this.asked.push(`resize ${add}`);
    if (Math.abs(add) > MAX_LEASE_MICROUSD) return { granted: false, rejected: "400 bad_request" };
    if (this.down) return { granted: false, unreachable: "connect ECONNREFUSED" };
    const l = this.leases.get(id);
    if (!l || l.expires <= this.now) return { granted: false, gone: true };
    const no = this.#check(add);
    if (no) return no;
    l.microusd = Math.max(0, l.microusd + add);
    l.expires = this.now + ttlMs;
    return { granted: true, lease_id: id, microusd: l.microusd, expires_ms: l.expires, room_microusd: this.limit - this.held() };
  }
  /** A call's frame reached the server and was priced. */
  price(run: string, microusd: number): void {
    this.spent += microusd;
    let left = microusd;
    for (const l of this.leases.values()) {
      if (l.run !== run || l.expires <= this.now) continue;
      const take = Math.min(l.microusd, left);
      l.microusd -= take;
      left -= take;
    }
  }
}

const RUN = `run_${"a".repeat(32)}`;

function holder(server: Server, o: { retryMs?: number; idleMs?: number; now?: () => number } = {}) {
  const logged: string[] = [];
  const leases = new BudgetLeases(server, { now: () => server.now, ttlMs: 60_000, log: (m) => logged.push(m), ...o });
  return { leases, logged };
}

function reserved(h: Held): Reservation {
  if ("refused" in h) throw new Error(`refused: ${h.refused}`);
  return h;
}

describe("the gateway's budget leases", () => {
  it("makes a run's first call wait for a lease, then reserves locally with no request per call, and replaces a reservation with the real cost", async () => {
    const server = new Server(1_000_000);
    const { leases } = holder(server);
    const first = leases.reserve(RUN, 1000);
    expect(first).toBeInstanceOf(Promise);
    const r1 = reserved(await first);
    // The first lease holds the call plus a slice of four calls.
    expect(server.asked).toEqual(["open 5000"]);
    expect(leases.slice(RUN)).toMatchObject({ held: 5000, reserved: 1000 });
    const r2 = leases.reserve(RUN, 1000);
    expect(r2).toEqual({ run: RUN, microusd: 1000 });
    expect(server.asked).toHaveLength(1);
    leases.done(r1, 300);
    leases.done(reserved(r2 as Held), 200);
    expect(leases.slice(RUN)).toMatchObject({ held: 4500, reserved: 0 });
    // The server prices the calls' frames: its lease shrinks by the same amounts, so nothing is held twice.
    server.price(RUN, 500);
    expect(server.held()).toBe(500 + 4500);
  });

  it("grows the slice in the background before it runs out, and renews a lease past half its life", async () => {
    const server = new Server(1_000_000);
    const { leases } = holder(server);
    reserved(await leases.reserve(RUN, 1000));
    reserved(leases.reserve(RUN, 1000) as Held);
    reserved(leases.reserve(RUN, 1000) as Held);
    expect(server.asked).toEqual(["open 5000"]);
    // Less than half a slice (2000) free after this one: a resize goes out, the call does not wait for it.
    const fourth = leases.reserve(RUN, 1000);
    expect(fourth).not.toBeInstanceOf(Promise);
    expect(server.asked).toEqual(["open 5000", "resize 4000"]);
    await new Promise((r) => setImmediate(r));
    expect(leases.slice(RUN)).toMatchObject({ held: 9000, reserved: 4000 });
    server.now += 40_000;
    reserved(leases.reserve(RUN, 1000) as Held);
    expect(server.asked.at(-1)).toBe("resize 0");
    // A call that does not fit while a renewal is out waits for it, then for the growth it needs.
    server.now += 1;
    expect(reserved(await leases.reserve(RUN, 20_000)).microusd).toBe(20_000);
    expect(server.asked.slice(-2)).toEqual(["resize 0", "resize 96000"]);
  });

  it("serves a burst past the slice with one request for all the waiting calls", async () => {
    const server = new Server(1_000_000);
    const { leases } = holder(server);
    const burst = await Promise.all(Array.from({ length: 20 }, () => leases.reserve(RUN, 1000)));
    expect(burst.every((h) => !("refused" in h))).toBe(true);
    expect(server.asked.length).toBeLessThanOrEqual(2);
    expect(leases.slice(RUN)?.reserved).toBe(20_000);
    expect(server.held()).toBeLessThanOrEqual(server.limit);
  });

  it("refuses a call the budget has no room for, after taking what room is left, and says which budget", async () => {
    const server = new Server(7000);
    const { leases } = holder(server, { retryMs: 1000 });
    const held = await Promise.all(Array.from({ length: 9 }, () => leases.reserve(RUN, 1000)));
    const granted = held.filter((h) => !("refused" in h));
    const refused = held.filter((h): h is { refused: string } => "refused" in h);
    // The whole budget is reserved, never more.
    expect(granted).toHaveLength(7);
    expect(server.held()).toBe(7000);
    expect(refused).toHaveLength(2);
    expect(refused[0]?.refused).toMatch(
      /the budget daily \(\$0\.0070\) has no room left for this call \(\$0\.0000 is spent, \$0\.0070 is reserved by calls in flight, \$0\.0000 is left\): this call may cost up to \$0\.0010/,
    );
    // Within the retry window a call that does not fit is refused without asking again.
    const asked = server.asked.length;
    expect(leases.reserve(RUN, 1000)).toMatchObject({ refused: expect.stringContaining("daily") });
    expect(server.asked).toHaveLength(asked);
    // Calls end and are priced: after the window, the room they left is leased again.
    for (const r of granted) leases.done(r as Reservation, 500);
    server.price(RUN, 3500);
    server.now += 1000;
    expect(reserved(await leases.reserve(RUN, 1000)).microusd).toBe(1000);
  });

  it("leases again when the server's lease expired, holding the calls still in flight", async () => {
    const server = new Server(1_000_000);
    const { leases } = holder(server);
    reserved(await leases.reserve(RUN, 1000));
    server.now += 61_000;
    // 5000 held, 1000 reserved, a call of 5000 does not fit: the resize (the 1000 short, and a slice of 4 × 5000) finds the lease gone.
    reserved(await leases.reserve(RUN, 5000));
    expect(server.asked).toEqual(["open 5000", "resize 21000", "open 22000"]);
    expect(leases.slice(RUN)).toMatchObject({ held: 22_000, reserved: 6000 });
    expect(server.held()).toBe(22_000);
  });

  it("takes the server's smaller count when its lease shrank by spend this side did not see (a call read from a transcript, another run's frame)", async () => {
    const server = new Server(1_000_000);
    const { leases } = holder(server);
    reserved(await leases.reserve(RUN, 1000));
    expect(leases.slice(RUN)).toMatchObject({ held: 5000, reserved: 1000 });
    // Spend of the run priced on the server that never passed this gateway: the lease holds 2000 there.
    server.price(RUN, 3000);
    // The next answer (here a renewal past half the lease's life) brings this side's count down to it.
    server.now += 40_000;
    reserved(leases.reserve(RUN, 500) as Held);
    expect(server.asked.at(-1)).toBe("resize 0");
    await new Promise((r) => setImmediate(r));
    expect(leases.slice(RUN)).toMatchObject({ held: 2000, reserved: 1500 });
    // A call past what the server holds now waits for growth instead of reserving room nobody holds.
    expect(leases.reserve(RUN, 1000)).toBeInstanceOf(Promise);
  });

  it("asks for no more than a lease request may carry ($1000), gives back past it in steps, and leases a call dearer than that in steps", async () => {
    // A budget far larger than these calls: room is not scarce, slices are leased as usual.
    const server = new Server(1_000_000_000_000);
    const { leases } = holder(server);
    const big = reserved(await leases.reserve(RUN, 300_000_000));
    expect(big.microusd).toBe(300_000_000);
    expect(server.asked).toEqual([`open ${MAX_LEASE_MICROUSD}`]);
    // One call past the cap: reserved (never let through unreserved), by growing the lease more than once.
    const huge = reserved(await leases.reserve(RUN, 1_500_000_000));
    expect(huge.microusd).toBe(1_500_000_000);
    expect(server.asked.slice(1)).toEqual([`resize ${MAX_LEASE_MICROUSD}`, `resize ${MAX_LEASE_MICROUSD}`]);
    leases.done(big, 0);
    leases.done(huge, 0);
    await leases.stop();
    expect(server.asked.slice(3)).toEqual([
      `resize -${MAX_LEASE_MICROUSD}`,
      `resize -${MAX_LEASE_MICROUSD}`,
      `resize -${MAX_LEASE_MICROUSD}`,
    ]);
    expect(server.held()).toBe(0);
  });

  it("refuses a call the server rejects the lease request for (a 400 is no outage: not let through unreserved)", async () => {
    const server = new Server(1_000_000);
    const { leases, logged } = holder(server);
    server.open = async () => ({ granted: false, rejected: "400 bad_request: microusd too large" });
    expect(await leases.reserve(RUN, 1000)).toEqual({
      refused: "the server rejected this run's budget lease (400 bad_request: microusd too large): this call may cost up to $0.0010",
    });
    expect(logged).toEqual([expect.stringContaining("400 bad_request")]);
  });

  it("renews by its own clock: a computer whose clock is behind the server's still renews before the lease expires there", async () => {
    const server = new Server(1_000_000);
    const { leases } = holder(server, { now: () => server.now - 50_000 });
    reserved(await leases.reserve(RUN, 1000));
    // Past half the lease's 60 s life on the server (and by the time this side measured): renewed.
    server.now += 31_000;
    reserved(leases.reserve(RUN, 1000) as Held);
    expect(server.asked).toEqual(["open 5000", "resize 0"]);
  });

  it("after a refusal, a server that then cannot be asked is not asked again by each call within the retry window", async () => {
    const server = new Server(1000);
    const { leases } = holder(server, { retryMs: 1000 });
    expect(await leases.reserve(RUN, 2000)).toMatchObject({ refused: expect.stringContaining("daily") });
    server.down = true;
    server.now += 1000;
    expect(await leases.reserve(RUN, 2000)).toEqual({ run: RUN, microusd: 0 });
    const asked = server.asked.length;
    // Within the window: answered at once (unreserved), no request that would wait out a timeout.
    expect(leases.reserve(RUN, 2000)).toEqual({ run: RUN, microusd: 0 });
    expect(server.asked).toHaveLength(asked);
  });

  it("lets calls through unreserved while the server cannot be asked (fail open), logs it once, and reserves again once it answers", async () => {
    const server = new Server(1_000_000);
    server.down = true;
    const { leases, logged } = holder(server, { retryMs: 1000 });
    expect(await leases.reserve(RUN, 1000)).toEqual({ run: RUN, microusd: 0 });
    // Within the retry window: no request, no wait.
    expect(leases.reserve(RUN, 1000)).toEqual({ run: RUN, microusd: 0 });
    expect(server.asked).toEqual(["open 5000"]);
    expect(logged).toEqual([expect.stringContaining("server unreachable (connect ECONNREFUSED)")]);
    server.down = false;
    server.now += 1000;
    expect(await leases.reserve(RUN, 1000)).toEqual({ run: RUN, microusd: 1000 });
  });

  it("gives back what a quiet or ended run holds free, keeping on the server what it has not priced yet", async () => {
    const server = new Server(1_000_000);
    const { leases } = holder(server, { idleMs: 10_000 });
    const other = `run_${"b".repeat(32)}`;
    const r = reserved(await leases.reserve(RUN, 1000));
    reserved(await leases.reserve(other, 2000));
    leases.done(r, 400);
    // A run with a call in flight keeps its slice; the ended one gives back all but the 400 not priced yet.
    await leases.sweep((run) => run === RUN);
    expect(leases.slice(RUN)).toBeNull();
    expect(leases.slice(other)).not.toBeNull();
    expect(server.held()).toBe(400 + 10_000);
    server.price(RUN, 400);
    expect(server.held()).toBe(400 + 10_000);
    // The other run goes quiet only once its call ended.
    server.now += 10_000;
    await leases.sweep();
    expect(leases.slice(other)).not.toBeNull();
    await leases.stop();
    expect(server.held()).toBe(400);
  });
});

describe("a budget spent to its limit (issue 20)", () => {
  it("three computers, four runs each, calls in turns: spend reaches the limit within one call's maximum cost per computer, never past it", async () => {
    const MAX = 10_000;
    const REAL = 4_000;
    const LIMIT = Math.round(MAX * 15.5);
    const server = new Server(LIMIT);
    const computers = [0, 1, 2].map(() => holder(server, { retryMs: 1000 }).leases);
    const runs = computers.flatMap((leases, c) => [0, 1, 2, 3].map((r) => ({ leases, run: `run_${(c * 4 + r).toString(16).repeat(32)}` })));
    let refused = 0;
    for (let round = 0; round < 120; round++) {
      // One run at a time sends three calls at once (the others idle, holding what their leases hold);
      // the calls end, and their frames are priced.
      const { leases, run } = runs[round % runs.length]!;
      const held = await Promise.all([0, 1, 2].map(() => leases.reserve(run, MAX)));
      expect(server.held()).toBeLessThanOrEqual(LIMIT);
      for (const h of held) {
        if ("refused" in h) {
          refused++;
          continue;
        }
        leases.done(h, REAL);
        server.price(run, REAL);
      }
      // A budget that a lease filled is pushed to every computer as exhausted (daemon.ts: leases.scarce()).
      if (server.held() >= LIMIT) for (const l of computers) l.scarce();
      for (let i = 0; i < 3; i++) await new Promise((r) => setImmediate(r));
      server.now += 1000;
    }
    expect(refused).toBeGreaterThan(0);
    expect(server.spent).toBeLessThanOrEqual(LIMIT);
    expect(server.spent).toBeGreaterThanOrEqual(LIMIT - computers.length * MAX);
  });

  it("three computers, two runs each, 48 calls in flight at once: as many admitted as one central reservation would (the last call's maximum short at most)", async () => {
    const MAX = 10_000;
    const LIMIT = Math.round(MAX * 15.5);
    const server = new Server(LIMIT);
    const computers = [0, 1, 2].map(() => holder(server).leases);
    const held = await Promise.all(
      computers.flatMap((leases, c) =>
        [0, 1].flatMap((r) => Array.from({ length: 8 }, () => leases.reserve(`run_${String(c * 2 + r).repeat(32)}`, MAX))),
      ),
    );
    const admitted = held.filter((h) => !("refused" in h)).length;
    expect(admitted).toBe(Math.floor(LIMIT / MAX));
    expect(server.held()).toBeLessThanOrEqual(LIMIT);
  });

  it("serves calls waiting for a lease in the order they came: a later call that would fit does not overtake one waiting", async () => {
    const server = new Server(1_000_000);
    const { leases } = holder(server);
    reserved(await leases.reserve(RUN, 1000));
    // 4000 free; a call of 6000 waits for the server, held back; a call of 1000 comes after it.
    let release: () => void = () => {};
    const gate = new Promise<void>((r) => {
      release = r;
    });
    const resize = server.resize.bind(server);
    server.resize = async (...a) => {
      await gate;
      return resize(...a);
    };
    const order: string[] = [];
    const big = (leases.reserve(RUN, 6000) as Promise<Held>).then((h) => order.push(`big ${"refused" in h ? "refused" : "reserved"}`));
    const small = Promise.resolve(leases.reserve(RUN, 1000)).then((h) => order.push(`small ${"refused" in h ? "refused" : "reserved"}`));
    await new Promise((r) => setImmediate(r));
    expect(order).toEqual([]);
    release();
    await Promise.all([big, small]);
    expect(order).toEqual(["big reserved", "small reserved"]);
  });

  it("a refused call does not keep its run's lease alive: a run that only retries refused calls gives its lease back when quiet", async () => {
    const server = new Server(1_000_000);
    const { leases } = holder(server, { idleMs: 10_000, retryMs: 100 });
    const r = reserved(await leases.reserve(RUN, 1000));
    leases.done(r, 0);
    expect(server.held()).toBe(5000);
    // A call dearer than the whole budget, retried every second for 20 s: each refused.
    for (let i = 0; i < 20; i++) {
      server.now += 1000;
      expect(await leases.reserve(RUN, 2_000_000)).toMatchObject({ refused: expect.stringContaining("no room left") });
    }
    await leases.sweep();
    expect(server.held()).toBe(0);
  });
});

describe("a call's maximum cost", () => {
  const at = new Date("2026-11-01T00:00:00Z");
  const messages = routeOf("POST", "/v1/messages") as { api: Parameters<typeof maxCostOf>[0] };
  const responses = routeOf("POST", "/v1/responses") as { api: Parameters<typeof maxCostOf>[0] };

  it("counts a token per request byte at the dearer input rate, and the request's output cap", () => {
    const body = Buffer.from(JSON.stringify({ model: "claude-sonnet-4-5", max_tokens: 1000, messages: [{ role: "user", content: "hi" }] }));
    const mr = readModelRequest(messages.api, body);
    expect(mr.maxOutputTokens).toBe(1000);
    // Both rounded up to four significant binary digits (at most 12.5% more), the price cache's buckets.
    const [input, output] = [roundUp(body.length), roundUp(1000)];
    expect(input).toBeGreaterThanOrEqual(body.length);
    expect(input).toBeLessThanOrEqual(body.length * 1.125);
    expect(output).toBe(1024);
    const asInput = priceCall("anthropic", "claude-sonnet-4-5", { input_tokens: input, output_tokens: output }, at)!;
    const asWrite = priceCall("anthropic", "claude-sonnet-4-5", { input_tokens: 0, cache_write_tokens: input, output_tokens: output }, at)!;
    expect(asWrite).toBeGreaterThan(asInput);
    expect(maxCostOf(messages.api, mr, at)).toBe(asWrite);
    // A call of the same size, from the cache: the same answer.
    expect(maxCostOf(messages.api, readModelRequest(messages.api, Buffer.from(body)), at)).toBe(asWrite);
  });

  it("takes the vendor's default output when the request sets no cap, and none for a model the table does not know", () => {
    const body = Buffer.from(JSON.stringify({ model: "gpt-5-codex", input: "hi", stream: true }));
    const cost = maxCostOf(responses.api, readModelRequest(responses.api, body), at);
    expect(cost).toBe(priceCall("openai", "gpt-5-codex", { input_tokens: roundUp(body.length), output_tokens: 16_384 }, at));
    const unknown = Buffer.from(JSON.stringify({ model: "no-such-model", input: "hi" }));
    expect(maxCostOf(responses.api, readModelRequest(responses.api, unknown), at)).toBeNull();
  });
});
