import { eq, sql } from "drizzle-orm";
import { Hono } from "hono";
import { createMiddleware } from "hono/factory";
import {
  type ChainAck,
  chainAck,
  frameSchemaProblem,
  hostChainId,
  IngestRequest,
  MAX_BATCH_FRAMES,
  readLock,
  ROUTES,
  runIdFor,
} from "../../protocol/index.ts";
import { type HostEnv, type HostRow, hostAuth, hostKeysOf } from "../auth/host.ts";
import type { ChainIngestResult, ChainInit } from "../chain/types.ts";
import { db, schema } from "../db/client.ts";
import { AppError } from "../errors.ts";
import { agentKind } from "../lib/health.ts";
import { checkQuotas } from "../lib/quotas.ts";
import { runRowUpsert } from "../lib/run-rows.ts";
import { countSpend, spendUpsert } from "../spend/record.ts";
import { valid } from "../validate.ts";

type Part = IngestRequest["chains"][number];

/** One reason a batch was refused: the chain it concerns, where in its part, and why. */
interface BatchIssue {
  chain: string;
  at: string;
  problem: string;
}

/** Checks the whole batch before anything is written: ownership of every chain, every frame, every lock. */
function checkBatch(batch: IngestRequest, host: HostRow): void {
  const seen = new Set<string>();
  let frames = 0;
  const issues: BatchIssue[] = [];
  batch.chains.forEach((part, i) => {
    const issue = (at: string, problem: string) => issues.push({ chain: part.chain, at: `chains[${i}]${at}`, problem });
    if (seen.has(part.chain)) issue("", `chain ${part.chain} appears twice`);
    seen.add(part.chain);
    frames += part.frames.length;
    if (part.chain.startsWith("host_")) {
      if (part.chain !== hostChainId(host.id) || part.run) issue("", "a host chain must be this host's own and carry no run");
    } else if (!part.run || part.chain !== runIdFor(host.id, part.run.harness, part.run.session_id)) {
      issue("", "the chain id is not this host's run for the given harness and session");
    }
    part.frames.forEach((frame, j) => {
      const problem = issues.length < 50 ? frameSchemaProblem(frame) : null;
      if (problem) issue(`.frames[${j}] (seq ${frame.seq})`, problem);
    });
    part.locks.forEach((lock, j) => {
      const { problem } = readLock(lock);
      if (problem !== null) issue(`.locks[${j}]`, `not a lock: ${problem.slice(0, 300)}`);
    });
  });
  if (frames > MAX_BATCH_FRAMES) throw new AppError(413, "too_large", `A batch may carry at most ${MAX_BATCH_FRAMES} frames.`);
  if (issues.length > 0) throw new AppError(400, "invalid_batch", "The batch was refused as a whole; nothing was stored.", { issues });
}

function initFor(part: Part, host: HostRow, hostKeys: ChainInit["hostKeys"], mode: "enforce" | "observe"): ChainInit {
  return {
    chain: part.chain,
    kind: part.run ? "run" : "host",
    workspace: host.workspaceId,
    hostId: host.id,
    hostKey: host.publicKey,
    hostKeys,
    harness: part.run?.harness ?? null,
    agent: part.run?.agent ?? null,
    sessionId: part.run?.session_id ?? null,
    mode,
  };
}

// Cloudflare marks a Durable Object error that a retry may cure with `retryable` (an object reset
// or overloaded, a network blip); anything else is a fault to look at, not to retry blindly.
function isRetryable(err: unknown): boolean {
  return err instanceof Error && (err as Error & { retryable?: unknown }).retryable === true;
}

function retryable(chain: string, err: Error): ChainAck {
  console.warn("chain ingest retryable", chain, err.message);
  return { ...chainAck(chain, "retryable"), message: "the chain could not be reached; resend this part" };
}

/** Starts reading the host's workspace mode before the batch is parsed, so the D1 round trip overlaps the (CPU-bound) checks. */
const workspaceModeFirst = createMiddleware<IngestEnv>(async (c, next) => {
  c.set(
    "mode",
    db(c.env)
      .select({ mode: schema.workspaces.mode })
      .from(schema.workspaces)
      .where(eq(schema.workspaces.id, c.var.host.workspaceId))
      .get()
      .then((w) => w?.mode ?? "enforce"),
  );
  await next();
});

type IngestEnv = { Bindings: Env; Variables: HostEnv["Variables"] & { mode: Promise<"enforce" | "observe"> } };

export const ingest = new Hono<IngestEnv>().post(
  ROUTES.ingest,
  hostAuth(),
  workspaceModeFirst,
  valid("json", IngestRequest, { what: "batch", empty: "refused" }),
  async (c) => {
    const host = c.var.host;
    const d = db(c.env);
    const batch = c.req.valid("json");
    checkBatch(batch, host);
    const now = Date.now();
    const runs = batch.chains.flatMap((p, i) => (p.run ? [{ chain: p.chain, at: `chains[${i}]`, name: p.run.harness }] : []));
    await checkQuotas(d, host.id, { runs, names: runs }, now);
    const mode = await c.var.mode;
    const keys = hostKeysOf(host);
    const results = await Promise.all(
      batch.chains.map(async (part): Promise<{ part: Part; result: ChainIngestResult | null; ack: ChainAck }> => {
        try {
          const stub = c.env.CHAINS.get(c.env.CHAINS.idFromName(part.chain));
          // RPC typing widens the ack's [from, to] tuples to arrays; the object returns ChainIngestResult.
          const result = (await stub.ingest({
            init: initFor(part, host, keys, mode),
            frames: part.frames,
            locks: part.locks,
            now,
          })) as unknown as ChainIngestResult;
          return { part, result, ack: result.ack };
        } catch (err) {
          if (isRetryable(err)) return { part, result: null, ack: retryable(part.chain, err as Error) };
          throw err;
        }
      }),
    );
    const writes = [];
    for (const { result } of results) for (const t of result?.spend ?? []) writes.push(spendUpsert(d, host, result!, t));
    for (const { part, result, ack } of results) {
      if (!part.run || !result) continue;
      writes.push(runRowUpsert(d, result.summary, now));
      const name = part.run.harness;
      const pending = ack.held > 0;
      const refused = ack.status === "refused" || ack.conflicts.length > 0 || ack.locks_refused.length > 0;
      writes.push(
        d
          .insert(schema.agents)
          .values({
            hostId: host.id,
            name,
            workspaceId: host.workspaceId,
            kind: agentKind(name),
            createdMs: now,
            firstSeenMs: now,
            lastSeenMs: now,
            lastDeliveredMs: now,
            pendingSinceMs: pending ? now : null,
            lastRefusedMs: refused ? now : null,
          })
          .onConflictDoUpdate({
            target: [schema.agents.hostId, schema.agents.name],
            set: {
              firstSeenMs: sql`coalesce(${schema.agents.firstSeenMs}, ${now})`,
              lastSeenMs: now,
              lastDeliveredMs: now,
              pendingSinceMs: pending ? sql`coalesce(${schema.agents.pendingSinceMs}, ${now})` : null,
              degradedMs: pending ? sql`${schema.agents.degradedMs}` : null,
              lastRefusedMs: refused ? now : sql`${schema.agents.lastRefusedMs}`,
            },
          }),
      );
    }
    if (writes.length > 0) await d.batch(writes as [(typeof writes)[number], ...(typeof writes)[number][]]);
    // Budgets are counted before the answer: the recorder that sent the call that exhausted one is
    // pushed its refusal no later than the others.
    await countSpend(
      c.env,
      host,
      results.flatMap((r) => (r.result ? [r.result] : [])),
      now,
    );
    return c.json({ chains: results.map((r) => r.ack) });
  },
);
