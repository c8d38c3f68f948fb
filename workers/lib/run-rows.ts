import { getTableColumns, sql } from "drizzle-orm";
import type { Manifest } from "../../protocol/index.ts";
import { deriveOutcome, emptyReading } from "../chain/outcome.ts";
import type { ChainSummary } from "../chain/types.ts";
import { type Db, schema } from "../db/client.ts";

/** A run's D1 row, as read, with its computer's name (null when the host row is gone). */
export type RunRow = typeof schema.runs.$inferSelect & { hostname: string | null };

/** The columns a run is read with: its row and its host's name, joined on the host's primary key. */
export const RUN_COLUMNS = { ...getTableColumns(schema.runs), hostname: schema.hosts.hostname };

/**
 * The run's derived outcome as its row holds it. A row written before outcomes were derived has
 * none: it is read from the run's status and recorded outcome alone, until its chain next syncs it.
 */
export function runOutcome(r: Pick<RunRow, "status" | "outcome" | "derivedOutcome" | "derivedReason">): { value: string; reason: string } {
  if (r.derivedOutcome !== null && r.derivedReason !== null) return { value: r.derivedOutcome, reason: r.derivedReason };
  return deriveOutcome({ status: r.status, recorded: r.outcome, reading: emptyReading() });
}
/** The part of a run's D1 row that is a copy of its chain's summary. */
export type RunCopy = typeof schema.runs.$inferInsert & { updatedMs: number };

/**
 * The one conversion from a chain's summary: the D1 row copies it, and the API view and the
 * export manifest read that row's fields, so the three never say different things.
 */
export function runRow(s: ChainSummary, now: number): RunCopy {
  return {
    id: s.chain,
    workspaceId: s.workspace,
    hostId: s.hostId,
    harness: s.harness ?? "",
    agent: s.agent,
    sessionId: s.sessionId ?? "",
    status: s.status,
    outcome: s.outcome,
    derivedOutcome: s.derived.value,
    derivedReason: s.derived.reason,
    modelCalls: s.modelCalls,
    modelFailed: s.modelFailed,
    tier: s.tier.value,
    tierReason: s.tier.reason,
    grade: s.grade.value,
    gradeReason: s.grade.reason,
    spendMicrousd: s.spendMicrousd,
    unpricedCalls: s.unpricedCalls,
    frameCount: s.frameCount,
    lockCount: s.lockCount,
    gapCount: s.gapCount,
    firstFrameMs: s.firstFrameMs,
    lastFrameMs: s.lastFrameMs,
    lastReceivedMs: s.lastReceivedMs,
    version: s.version,
    updatedMs: now,
    hostStopped: s.hostStopped ? 1 : 0,
  };
}

/** A run as the operator API shows it. */
export function runView(r: RunRow) {
  return {
    id: r.id,
    host_id: r.hostId,
    hostname: r.hostname,
    harness: r.harness,
    agent: r.agent,
    session_id: r.sessionId,
    status: r.status,
    outcome: runOutcome(r),
    recorded_outcome: r.outcome,
    tier: { value: r.tier, reason: r.tierReason },
    grade: { value: r.grade, reason: r.gradeReason },
    spend_microusd: r.spendMicrousd,
    unpriced_calls: r.unpricedCalls,
    model_calls: r.modelCalls,
    model_calls_failed: r.modelFailed,
    frame_count: r.frameCount,
    lock_count: r.lockCount,
    gap_count: r.gapCount,
    first_frame_ms: r.firstFrameMs,
    last_frame_ms: r.lastFrameMs,
    duration_ms: runDuration(r),
    updated_ms: r.updatedMs,
  };
}

/** From the run's first frame to its last, by the computer's clock; null before it has two. */
export function runDuration(r: Pick<RunRow, "firstFrameMs" | "lastFrameMs">): number | null {
  return r.firstFrameMs !== null && r.lastFrameMs !== null ? Math.max(0, r.lastFrameMs - r.firstFrameMs) : null;
}

/** A run as an export manifest names it. Runs recorded by the collector ran on a customer's computer. */
export function manifestRun(r: RunCopy, mode: "enforce" | "observe"): Manifest["run"] {
  return {
    id: r.id,
    workspace: r.workspaceId,
    host: r.hostId,
    harness: r.harness,
    agent: r.agent ?? null,
    session_id: r.sessionId,
    status: r.status,
    outcome: r.outcome ?? null,
    environment: "customer_computer",
    mode,
    first_frame_ms: r.firstFrameMs ?? null,
    last_frame_ms: r.lastFrameMs ?? null,
  };
}

/**
 * The D1 statement that copies a run's summary into its row. It applies only when the summary's
 * version is newer, so two batches answering out of order never put an older state back.
 */
export function runRowUpsert(d: Db, s: ChainSummary, now: number) {
  const values = runRow(s, now);
  const { id: _id, workspaceId: _ws, hostId: _host, harness: _h, agent: _a, sessionId: _s, ...set } = values;
  return d
    .insert(schema.runs)
    .values({ ...values, createdMs: now })
    .onConflictDoUpdate({ target: schema.runs.id, set, setWhere: sql`excluded.version > ${schema.runs.version}` });
}

/** Copies one summary into D1 (run chains only). */
export async function syncRun(d: Db, s: ChainSummary | null): Promise<void> {
  if (s?.kind !== "run") return;
  await runRowUpsert(d, s, Date.now()).run();
}
