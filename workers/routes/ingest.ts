import { Hono } from "hono";
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
import { type HostEnv, type HostRow, hostAuth, hostKeysOf, hostObject } from "../auth/host.ts";
import type { ChainIngestResult, ChainInit } from "../chain/types.ts";
import type { ChainIngestRequest } from "../chain-object.ts";
import { AppError } from "../errors.ts";
import { throwIfOver } from "../lib/quotas.ts";
import { countSpend } from "../spend/record.ts";
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

function initFor(part: Part, host: HostRow, hostKeys: ChainInit["hostKeys"]): ChainIngestRequest["init"] {
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

/**
 * `POST /v1/ingest`: a host's signed batch, checked whole, then each chain's part handed to its
 * ChainObject. No D1 statement on the way: the host's object authenticates and admits it (key,
 * nonce, quotas), each chain's object stores its part and sends its fleet row to D1 through the
 * projection queue, and the workspace's object counts the spend.
 */
export const ingest = new Hono<HostEnv>().post(
  ROUTES.ingest,
  hostAuth(),
  valid("json", IngestRequest, { what: "batch", empty: "refused" }),
  async (c) => {
    const host = c.var.host;
    const batch = c.req.valid("json");
    checkBatch(batch, host);
    const now = Date.now();
    const runs = batch.chains.flatMap((p, i) => (p.run ? [{ chain: p.chain, at: `chains[${i}]`, name: p.run.harness }] : []));
    if (runs.length > 0) throwIfOver(await hostObject(c.env, host.id).admit({ runs, names: runs }, now));
    const keys = hostKeysOf(host);
    const results = await Promise.all(
      batch.chains.map(async (part): Promise<{ part: Part; result: ChainIngestResult | null; ack: ChainAck }> => {
        try {
          const stub = c.env.CHAINS.get(c.env.CHAINS.idFromName(part.chain));
          // RPC typing widens the ack's [from, to] tuples to arrays; the object returns ChainIngestResult.
          const result = (await stub.ingest({
            init: initFor(part, host, keys),
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
    await countSpend(
      c.env,
      host,
      results.flatMap((r) => (r.result ? [r.result] : [])),
      now,
    );
    return c.json({ chains: results.map((r) => r.ack) });
  },
);
