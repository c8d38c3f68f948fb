import { sql } from "drizzle-orm";
import type { ChainSummary } from "../chain/types.ts";
import { type Db, schema } from "../db/client.ts";

/**
 * The D1 statement that copies a run's summary into its row. It applies only when the summary's
 * version is newer, so two batches answering out of order never put an older state back.
 */
export function runRowUpsert(d: Db, s: ChainSummary, now: number) {
  const values = {
    id: s.chain,
    workspaceId: s.workspace,
    hostId: s.hostId,
    harness: s.harness ?? "",
    agent: s.agent,
    sessionId: s.sessionId ?? "",
    status: s.status,
    outcome: s.outcome,
    tier: s.tier.value,
    tierReason: s.tier.reason,
    grade: s.grade.value,
    gradeReason: s.grade.reason,
    spendMicrousd: s.spendMicrousd,
    frameCount: s.frameCount,
    lockCount: s.lockCount,
    gapCount: s.gapCount,
    firstFrameMs: s.firstFrameMs,
    lastFrameMs: s.lastFrameMs,
    lastReceivedMs: s.lastReceivedMs,
    version: s.version,
    updatedMs: now,
  };
  const { id: _id, workspaceId: _ws, hostId: _host, harness: _h, agent: _a, sessionId: _s, ...set } = values;
  return d
    .insert(schema.runs)
    .values(values)
    .onConflictDoUpdate({ target: schema.runs.id, set, setWhere: sql`excluded.version > ${schema.runs.version}` });
}

/** Copies one summary into D1 (run chains only). */
export async function syncRun(d: Db, s: ChainSummary | null): Promise<void> {
  if (s?.kind !== "run") return;
  await runRowUpsert(d, s, Date.now()).run();
}
