import { MAX_LEASE_MICROUSD } from "../../protocol/index.ts";
import type { LeaseReply, LeaseServer } from "./lease-server.ts";

import type { Heard, Held, LeaseOptions, Reservation, Slice } from "./lease-types.ts";

export type { LeaseReply, LeaseServer } from "./lease-server.ts";
export type { Held, LeaseOptions, Reservation } from "./lease-types.ts";

const dollars = (microusd: number) => `$${(microusd / 1_000_000).toFixed(4)}`;
/** Room is scarce below this many slices' worth: slices then hold only what their calls need. */
const SCARCE_SLICES = 4;

/**
 * The gateway's hold on each run's budget (docs/collector.md, "Budget reservations"): per run, a
 * slice leased from the server; each call's maximum cost is reserved against it locally and
 * synchronously, and replaced by the real cost when the call ends. The slice grows in the
 * background before it runs out; a call waits for the server only when the slice cannot hold it
 * (a run's first call, a burst past the slice). A priced call comes off the server's lease when
 * its frame arrives there, and off this side's count when it ends, so it is never held twice.
 * Idle and ended runs give back what they hold free; so does {@link stop}.
 */
export class BudgetLeases {
  readonly #server: LeaseServer;
  readonly #o: LeaseOptions;
  readonly #slices = new Map<string, Slice>();

  constructor(server: LeaseServer, options: Partial<LeaseOptions> = {}) {
    this.#server = server;
    this.#o = { ttlMs: 600_000, sliceCalls: 4, idleMs: 120_000, retryMs: 2000, now: Date.now, log: () => {}, ...options };
  }

  /** The run's slice as counted here (tests, `tacho status`). */
  slice(run: string): { leaseId: string | null; held: number; reserved: number } | null {
    const s = this.#slices.get(run);
    return s ? { leaseId: s.leaseId, held: s.held, reserved: s.reserved } : null;
  }

  /**
   * Reserves a call's maximum cost against its run's slice: at once when the slice holds it;
   * otherwise after asking the server for more (the run's first call, a burst past the slice),
   * one request at a time per run for all the calls waiting. The refusal's reason when the budget
   * has no room. A server that cannot be asked lets the call through unreserved (fail open: the
   * budget is then enforced after the fact, by the policy's exhausted budgets).
   */
  reserve(run: string, microusd: number): Held | Promise<Held> {
    const s = this.#slice(run);
    s.biggest = Math.max(s.biggest, microusd);
    // A call never overtakes one waiting before it.
    if (s.queue.length === 0) {
      const now = this.#fit(s, microusd);
      if (now) return now;
      if (!s.asking && this.#waitOut(s)) return this.#noRoom(s, run, microusd);
    }
    return new Promise<Held>((resolve) => {
      s.queue.push({ microusd, resolve });
      s.waiting += microusd;
      void this.#serve(s);
    });
  }

  /**
   * Serves the waiting calls in order: each that the slice holds, then asks the server for the rest
   * (one request at a time per run, for all of them). A call the server has no room for is refused
   * (or let through unreserved when it cannot be asked), and the next is tried in its turn.
   */
  async #serve(s: Slice): Promise<void> {
    if (s.serving) return;
    s.serving = true;
    try {
      for (;;) {
        while (s.queue.length) {
          const fit = this.#fit(s, s.queue[0]!.microusd);
          if (!fit) break;
          this.#dequeue(s).resolve(fit);
        }
        if (s.queue.length === 0) {
          // Scarce room: a slice granted beyond what the calls took goes back at once.
          if (this.#scarce(s)) this.#returnFree(s);
          return;
        }
        // Refused or unreachable moments ago: the rest are answered without asking again.
        const heard = this.#waitOut(s) ? "refused" : await this.#ask(s);
        // "nothing": the request under way was another (a give-back): ask again.
        if (heard === "granted" || heard === "nothing") continue;
        const head = this.#dequeue(s);
        head.resolve(this.#noRoom(s, s.run, head.microusd));
      }
    } finally {
      s.serving = false;
    }
  }

  #dequeue(s: Slice): { microusd: number; resolve(h: Held): void } {
    const w = s.queue.shift()!;
    s.waiting -= w.microusd;
    return w;
  }

  /** The call ended: its reservation is replaced by its real cost, which the server takes off the lease once it prices the call. */
  done(r: Reservation, realMicrousd: number): void {
    const s = this.#slices.get(r.run);
    if (!s) return;
    s.reserved = Math.max(0, s.reserved - r.microusd);
    s.held = Math.max(0, s.held - realMicrousd);
    s.lastUse = this.#o.now();
    if (this.#scarce(s)) this.#returnFree(s);
  }

  /** Whether the budget's room is scarce for this run: less than a few slices' worth is left at the server. */
  #scarce(s: Slice): boolean {
    return s.room !== null && s.room < SCARCE_SLICES * this.#o.sliceCalls * s.biggest;
  }

  /**
   * Scarce room: what the slice holds beyond its calls in flight and waiting goes back, for other
   * runs and computers. One request at a time per run, like a grow.
   */
  #returnFree(s: Slice): void {
    const id = s.leaseId;
    if (s.asking || id === null || s.held - s.reserved - s.waiting <= 0) return;
    s.asking = (async (): Promise<Heard> => {
      const free = s.held - s.reserved - s.waiting;
      if (free <= 0) return "granted";
      const reply = await this.#server.resize(id, -Math.min(free, MAX_LEASE_MICROUSD), this.#o.ttlMs);
      if (!reply.granted) return "nothing";
      s.held = Math.max(0, Math.min(s.held - free, reply.microusd));
      s.room = reply.room_microusd ?? null;
      return "granted";
    })().finally(() => {
      s.asking = null;
    });
  }

  /**
   * A budget is exhausted (the server pushed it: a lease reached its limit): every slice holds only
   * what its calls in flight need from now on, and gives the rest back, so the last of the budget
   * goes to calls, not to idle runs' slices.
   */
  scarce(): void {
    for (const s of this.#slices.values()) {
      s.room = 0;
      this.#returnFree(s);
    }
  }

  /** Gives back the leases of runs that ended or went quiet; renews those whose calls still run. */
  async sweep(ended: (run: string) => boolean = () => false): Promise<void> {
    const now = this.#o.now();
    const work: Promise<void>[] = [];
    for (const s of this.#slices.values()) {
      if (s.asking) continue;
      if (s.reserved === 0 && (ended(s.run) || now - s.lastUse >= this.#o.idleMs)) work.push(this.#giveBack(s));
      else if (s.leaseId !== null && s.expires - now < this.#o.ttlMs / 2) work.push(this.#renew(s).then(() => undefined));
    }
    await Promise.all(work);
  }

  /** Gives back what every slice holds free (the recorder stops). */
  async stop(): Promise<void> {
    await Promise.all([...this.#slices.values()].map((s) => (s.asking ?? Promise.resolve()).then(() => this.#giveBack(s))));
  }

  #fit(s: Slice, microusd: number): Reservation | null {
    if (s.held - s.reserved < microusd) return null;
    s.reserved += microusd;
    // Only a call that holds a reservation is a use: a refused one (an agent retrying) keeps no lease alive.
    s.lastUse = this.#o.now();
    this.#topUp(s);
    return { run: s.run, microusd };
  }

  /** Whether the server refused or could not be asked moments ago (then it is not asked again yet). */
  #waitOut(s: Slice): boolean {
    const last = s.refused?.at ?? s.unreachable;
    return last !== null && last !== undefined && this.#o.now() - last < this.#o.retryMs;
  }

  #noRoom(s: Slice, run: string, microusd: number): Held {
    if (s.unreachable !== null) return { run, microusd: 0 };
    const why = s.refused?.reason ?? "the workspace's budget has no room left";
    return { refused: `${why}: this call may cost up to ${dollars(microusd)}` };
  }

  #slice(run: string): Slice {
    let s = this.#slices.get(run);
    if (s === undefined) {
      s = {
        run,
        leaseId: null,
        held: 0,
        reserved: 0,
        waiting: 0,
        queue: [],
        serving: false,
        room: null,
        expires: 0,
        asking: null,
        refused: null,
        unreachable: null,
        lastUse: this.#o.now(),
        biggest: 0,
      };
      this.#slices.set(run, s);
    }
    return s;
  }

  /** Grows the slice in the background when less than half of it is left, and renews a lease past half its life. */
  #topUp(s: Slice): void {
    if (s.asking || s.leaseId === null || this.#scarce(s)) return;
    if (s.held - s.reserved < (this.#o.sliceCalls * s.biggest) / 2 && !this.#waitOut(s)) void this.#ask(s);
    else if (s.expires - this.#o.now() < this.#o.ttlMs / 2) void this.#renew(s);
  }

  /** One request at a time per run: enough for the calls in flight and those waiting, plus a slice. */
  #ask(s: Slice): Promise<Heard> {
    if (s.asking) return s.asking;
    s.asking = (async (): Promise<Heard> => {
      const short = Math.max(0, s.reserved + s.waiting - s.held);
      // Scarce room: only what the calls need, so the last of a budget goes to calls, not to slices.
      const extra = this.#scarce(s) ? 0 : this.#o.sliceCalls * s.biggest;
      // One request carries at most the protocol's cap; a call dearer than that is leased in steps (the caller asks again).
      const want = Math.min(short + extra, MAX_LEASE_MICROUSD);
      if (want <= 0) return "granted";
      let reply = await this.#grow(s, want);
      if (reply && !reply.granted && "exhausted" in reply) {
        // The scope's room, from the refusal: ask for what the waiting calls at the head can use of it.
        const room = reply.room_microusd ?? reply.exhausted.limit_microusd - (reply.exhausted.spent_microusd - want);
        s.room = Math.max(0, room);
        const usable = this.#headRoom(s, room);
        if (usable > 0 && usable < want) reply = await this.#grow(s, usable);
      }
      return reply ? this.#heard(s, reply) : "nothing";
    })().finally(() => {
      s.asking = null;
    });
    return s.asking;
  }

  /**
   * Adds `add` to the run's lease (a new lease when it has none). What this side counts grows by
   * `add`, not to the server's answer: the server's total still holds the calls it has not priced yet.
   * But never past the server's answer: the server also takes off spend this side never saw (calls
   * read from transcripts, a call reserved on another run), and a slice holds only what the lease does.
   */
  async #grow(s: Slice, add: number): Promise<LeaseReply | null> {
    if (s.leaseId !== null) {
      const sent = this.#o.now();
      const reply = await this.#server.resize(s.leaseId, add, this.#o.ttlMs);
      if (reply.granted) {
        s.held = Math.min(s.held + add, reply.microusd);
        s.expires = sent + this.#o.ttlMs;
        s.room = reply.room_microusd ?? null;
        return reply;
      }
      if (!("gone" in reply)) return reply;
      // Expired on the server: the calls in flight are held by nothing there; a new lease holds them again.
      s.leaseId = null;
      s.held = 0;
      add += s.reserved;
    }
    if (add <= 0) return null;
    const sent = this.#o.now();
    const reply = await this.#server.open(s.run, add, this.#o.ttlMs);
    if (reply.granted) {
      s.leaseId = reply.lease_id;
      s.held = Math.min(s.held + add, reply.microusd);
      s.expires = sent + this.#o.ttlMs;
      s.room = reply.room_microusd ?? null;
    }
    return reply;
  }

  #heard(s: Slice, reply: LeaseReply): Heard {
    const now = this.#o.now();
    if (reply.granted) {
      s.refused = null;
      s.unreachable = null;
      return "granted";
    }
    if ("exhausted" in reply) {
      const e = reply.exhausted;
      let why = "";
      if (e.reserved_microusd !== undefined && reply.room_microusd !== undefined) {
        // Spent and reserved apart (the amount asked is in both of the server's counts, in neither here).
        const spent = e.spent_microusd - e.reserved_microusd;
        const reserved = Math.max(0, e.limit_microusd - spent - reply.room_microusd);
        why = ` (${dollars(spent)} is spent, ${dollars(reserved)} is reserved by calls in flight, ${dollars(reply.room_microusd)} is left)`;
      }
      s.refused = { reason: `the budget ${e.budget} (${dollars(e.limit_microusd)}) has no room left for this call${why}`, at: now };
      s.unreachable = null;
      return "refused";
    }
    if ("rejected" in reply) {
      this.#o.log(`budget lease for ${s.run}: the server rejected the request (${reply.rejected}); calls that do not fit are refused`);
      s.refused = { reason: `the server rejected this run's budget lease (${reply.rejected})`, at: now };
      s.unreachable = null;
      return "refused";
    }
    if ("unreachable" in reply) {
      if (s.unreachable === null)
        this.#o.log(`budget lease for ${s.run}: server unreachable (${reply.unreachable}); calls go through unreserved`);
      // The outage is now the reason to wait (a refusal's older time would send every call to a timeout).
      s.refused = null;
      s.unreachable = now;
      return "unreachable";
    }
    return "nothing";
  }

  /** What of `room` the waiting calls can use, in order: the head's need and each after it that still fits (FIFO). */
  #headRoom(s: Slice, room: number): number {
    let free = s.held - s.reserved;
    let need = 0;
    for (const w of s.queue) {
      if (free >= w.microusd) {
        free -= w.microusd;
        continue;
      }
      const more = w.microusd - free;
      if (need + more > room) break;
      need += more;
      free = 0;
    }
    return need;
  }

  /** Keeps the lease alive (its calls still run): the same amount, a new expiry. */
  #renew(s: Slice): Promise<Heard> {
    const id = s.leaseId;
    if (s.asking || id === null) return s.asking ?? Promise.resolve("nothing");
    s.asking = (async (): Promise<Heard> => {
      const sent = this.#o.now();
      const reply = await this.#server.resize(id, 0, this.#o.ttlMs);
      if (reply.granted) {
        s.expires = sent + this.#o.ttlMs;
        s.held = Math.min(s.held, reply.microusd);
      }
      if (reply.granted || !("gone" in reply)) return this.#heard(s, reply);
      // Expired: a call waiting on the renewal asks again, for a new lease.
      s.leaseId = null;
      s.held = 0;
      return "granted";
    })().finally(() => {
      s.asking = null;
    });
    return s.asking;
  }

  /**
   * Gives back what the slice holds free. Not a settle: the server's lease also still holds the
   * calls that ended but that it has not priced yet (their frames on the way), and keeps holding
   * them until it does (pricing takes them off) or the lease expires.
   */
  async #giveBack(s: Slice): Promise<void> {
    this.#slices.delete(s.run);
    for (let left = s.leaseId !== null ? s.held : 0; left > 0; left -= MAX_LEASE_MICROUSD) {
      const reply = await this.#server.resize(s.leaseId as string, -Math.min(left, MAX_LEASE_MICROUSD), this.#o.ttlMs);
      if (!reply.granted) break;
    }
  }
}
