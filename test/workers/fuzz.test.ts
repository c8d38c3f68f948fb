import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { count } from "drizzle-orm";
import { db, schema } from "../../workers/db/client.ts";
import { seeded as rng } from "../support/random.ts";
import { enrollHost, hostCall, seedWorkspace, TestRun, type TestHost } from "./support.ts";

let host: TestHost;
let base: TestRun;

beforeAll(async () => {
  const { token } = await seedWorkspace();
  host = await enrollHost(token);
  base = new TestRun(host);
  base.start();
  base.tool();
  base.llm();
  base.lock();
});

const NASTY: unknown[] = [null, true, -1, 1.5, 2 ** 60, "", "x".repeat(300), "\ud800", [], {}, { seq: 0 }, `run_${"0".repeat(32)}`, NaN];

/** One malformed batch: a valid one with one thing broken, or raw garbage. */
function mutate(r: () => number): string {
  const valid = JSON.stringify({ chains: [base.part(base.frames, base.locks)] });
  const text = mutateOnce(r);
  // A replace that found nothing to replace leaves the batch valid: cut it instead.
  return text === valid ? valid.slice(0, valid.length - 2) : text;
}

function mutateOnce(r: () => number): string {
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)]!;
  const batch = JSON.parse(JSON.stringify({ chains: [base.part(base.frames, base.locks)] })) as { chains: Record<string, unknown>[] };
  const part = batch.chains[0]!;
  const frames = part.frames as Record<string, unknown>[];
  const locks = part.locks as Record<string, unknown>[];
  switch (Math.floor(r() * 12)) {
    case 0:
      return JSON.stringify(batch).slice(0, Math.floor(r() * 200));
    case 1:
      frames[Math.floor(r() * frames.length)]![pick(["seq", "t", "kind", "payload"])] = pick(NASTY);
      break;
    case 2: {
      const f = frames[Math.floor(r() * frames.length)]!;
      f.payload = String(f.payload).replace(pick(['"hook"', '"path"', "{", ":"]), pick(['"h00k"', '"paths"', "[", " : "]));
      break;
    }
    case 3:
      frames[0]!.kind = pick(["agent_begin", "", "Agent_start", "x".repeat(70)]);
      break;
    case 4:
      part.chain = pick(NASTY);
      break;
    case 5:
      part.run = pick([null, {}, { harness: "Bad Name", agent: null, session_id: "x" }, { ...(part.run as object), session_id: "other" }]);
      break;
    case 6:
      locks[0]!.sig = pick(["00", "zz".repeat(64), 7]);
      break;
    case 7:
      locks[0]!.payload = pick(["{}", "not json", '{"v":1}']);
      break;
    case 8:
      part[pick(["extra", "hash", "__proto__x"])] = 1;
      break;
    case 9:
      frames[0]!.hash = "0".repeat(64);
      break;
    case 10:
      return pick(["", "null", "[]", '{"chains":[]}', '{"chains":{}}', "\u0000", "{".repeat(5000)]);
    default:
      batch.chains = [part, part];
      break;
  }
  return JSON.stringify(batch);
}

describe("fuzzed ingest", () => {
  it("answers thousands of malformed batches with 4xx, never 5xx, and stores nothing", async () => {
    const r = rng(20261130);
    const statuses = new Map<number, number>();
    const N = 2000;
    for (let i = 0; i < N; i += 20) {
      const results = await Promise.all(
        Array.from({ length: 20 }, async () => {
          const res = await hostCall(host, "POST", "/v1/ingest", mutate(r));
          const body = (await res.json()) as { error?: string; message?: string };
          return { status: res.status, body };
        }),
      );
      for (const { status, body } of results) {
        statuses.set(status, (statuses.get(status) ?? 0) + 1);
        expect(status, JSON.stringify(body)).toBeGreaterThanOrEqual(400);
        expect(status, JSON.stringify(body)).toBeLessThan(500);
        expect(typeof body.error).toBe("string");
        expect(typeof body.message).toBe("string");
      }
    }
    expect([...statuses.values()].reduce((a, b) => a + b, 0)).toBe(N);
    const runs = await db(env).select({ n: count() }).from(schema.runs).get();
    expect(runs?.n).toBe(0);
    expect(await env.CHAINS.get(env.CHAINS.idFromName(base.chain)).summary()).toBeNull();
    // 2,000 signed requests, each admitting its nonce: room for a machine shared with other work.
  }, 180_000);
});
