// The Worker bench:ingest runs (wrangler.toml here; never deployed): the production Worker, plus
// the floor route POST /v1/bench/floor. Production has no such route: it lives only here.
import { Hono } from "hono";
import { z } from "zod";
import { ChainId, FrameWire, type Frame, MAX_INGEST_BYTES, SignedLock } from "../../../protocol/index.ts";
import { readLimited } from "../../../workers/request-body.ts";
import { ChainObject } from "../../../workers/chain-object.ts";
import worker from "../../../workers/index.ts";
import type { ProjectionMessage } from "../../../workers/projection/messages.ts";

export { HostObject } from "../../../workers/host-object.ts";
export { PushHubObject } from "../../../workers/push-hub-object.ts";
export { WorkspaceObject } from "../../../workers/workspace-object.ts";
import { check, parseJson } from "../../../workers/validate.ts";

/** The chain object with one more method: the floor. */
export class BenchChainObject extends ChainObject {
  /**
   * The same rows ingest writes for a batch (its frames, then its locks) into the same tables,
   * with no checks, no hashing and no state: the least the storage of a batch costs.
   */
  floorAppend(frames: Frame[], locks: SignedLock[], now: number): number {
    return this.ctx.storage.transactionSync(() => {
      const sql = this.ctx.storage.sql;
      let seq = sql.exec<{ n: number | null }>("SELECT max(seq) AS n FROM frames").one().n ?? -1;
      for (const f of frames) {
        sql.exec(
          "INSERT INTO frames (seq, t, kind, payload, hash, received_ms, flags) VALUES (?, ?, ?, ?, '', ?, 0)",
          ++seq,
          f.t,
          f.kind,
          f.payload,
          now,
        );
      }
      let lockSeq = sql.exec<{ n: number | null }>("SELECT max(lock_seq) AS n FROM locks").one().n ?? -1;
      for (const l of locks) {
        sql.exec(
          "INSERT INTO locks (lock_seq, payload, sig, count, final, received_ms) VALUES (?, ?, ?, 0, 0, ?)",
          ++lockSeq,
          l.payload,
          l.sig,
          now,
        );
      }
      return seq + 1;
    });
  }
}

const FloorBatch = z.strictObject({ chain: ChainId, frames: z.array(FrameWire).max(5000), locks: z.array(SignedLock).max(1000) });

const floor = new Hono<{ Bindings: Env }>().post("/v1/bench/floor", async (c) => {
  const body = await readLimited(c.req.raw, MAX_INGEST_BYTES);
  const req = check(FloorBatch, parseJson(new TextDecoder().decode(body), "request body"), "floor batch");
  const chains = c.env.CHAINS as unknown as DurableObjectNamespace<BenchChainObject>;
  const stored = await chains.get(chains.idFromName(req.chain)).floorAppend(req.frames, req.locks, Date.now());
  return c.json({ stored });
});

const SeedSpend = z.strictObject({
  workspace: z.string(),
  from: z.number().int().nonnegative(),
  count: z.number().int().min(1).max(20_000),
  hosts: z.number().int().min(1),
  day: z.string(),
});

/**
 * bench:fleet's seed: `count` spend records (one run's day total each, runs numbered from `from`,
 * spread over `hosts` hosts) counted by the workspace's object through its own `report`, as
 * ingest counts them: the spend a workspace has after a month, without a month of batches.
 */
const seed = new Hono<{ Bindings: Env }>().post("/v1/bench/seed-spend", async (c) => {
  const req = check(SeedSpend, parseJson(new TextDecoder().decode(await readLimited(c.req.raw, 4096)), "request body"), "seed");
  const rows = Array.from({ length: req.count }, (_, i) => {
    const n = req.from + i;
    return { runId: `run_${n.toString(16).padStart(32, "0")}`, hostId: `h-seed-${n % req.hosts}`, day: req.day, microusd: 1 + (n % 97) };
  });
  const hub = c.env.WORKSPACES.get(c.env.WORKSPACES.idFromName(req.workspace));
  const t0 = performance.now();
  for (let i = 0; i < rows.length; i += 2000) await hub.report(rows.slice(i, i + 2000), Date.now());
  return c.json({ counted: rows.length, ms: performance.now() - t0 });
});

const BENCH_ROUTES: Record<string, Hono<{ Bindings: Env }>> = { "/v1/bench/floor": floor, "/v1/bench/seed-spend": seed };

export default {
  fetch: (request, env, ctx) => (BENCH_ROUTES[new URL(request.url).pathname] ?? worker).fetch(request, env, ctx),
  scheduled: worker.scheduled,
  queue: worker.queue,
} satisfies ExportedHandler<Env, ProjectionMessage>;
