/**
 * A run's outcome as the server reads it from the frames it stored: whether the run completed,
 * failed (every model call failed), or was stopped (paused by an operator, its prompt refused, its
 * budget exhausted), with the sentence that says why. Derived only from stored frames, never from
 * what the computer claims about the run; the record's own `agent_stop.outcome` stays as it is
 * (the manifest's `outcome`). The rule is in docs/api.md, "Run outcome".
 */
import type { ParsedPayload } from "../../protocol/index.ts";
import type { RunStatus } from "./types.ts";

/** The derived outcome's values. */
export const OUTCOMES = [
  "running",
  "completed",
  "aborted",
  "failed",
  "paused",
  "refused",
  "budget_exhausted",
  "crashed",
  "unknown",
  "sealed",
] as const;
/** One of {@link OUTCOMES}. */
export type Outcome = (typeof OUTCOMES)[number];

/** What the frames so far say about the run's outcome, folded frame by frame as they are appended. */
export interface RunReading {
  /** Model calls the vendor answered (2xx, or no status: read from the harness's own log). */
  modelOk: number;
  /** Model calls that failed: the vendor answered an error status, or the gateway could not forward the call. */
  modelFailed: number;
  /** The last failed model call: its seq and why. */
  lastFailure: { seq: number; reason: string } | null;
  /** The last refusal that stopped the run, unless a step went through after it. */
  stop: { seq: number; kind: "paused" | "refused" | "budget_exhausted"; reason: string } | null;
  /** The seq of the last refused prompt: the turn_start right after it is that prompt, not a step that went through. */
  refusedPromptSeq: number | null;
}

/** The reading of no frames. */
export function emptyReading(): RunReading {
  return { modelOk: 0, modelFailed: 0, lastFailure: null, stop: null, refusedPromptSeq: null };
}

/** Frame kinds that can change a reading (the backfill of an object written before readings reads only these). */
export const READ_KINDS = ["policy_decision", "tool_requested", "tool_call", "turn_start", "llm_call", "error"] as const;

const ERROR_CODES: Record<string, string> = {
  upstream_unreachable: "the gateway could not reach the vendor",
  upstream_timeout: "the vendor did not answer in time (the gateway's connect, first-byte or idle timeout)",
  request_too_large: "the request was over the gateway's size limit",
  unknown_path: "the gateway does not forward that path",
  client_closed: "the harness went away before the vendor answered",
};

/** The sentence for a model call the gateway answered itself (an `error` frame): its code in words, and the status it answered. */
export function errorReason(code: string, status?: number): string {
  const what = ERROR_CODES[code] ?? `the gateway answered it itself (${code})`;
  return `${what}${status !== undefined ? `, answering ${status}` : ""}; not forwarded`;
}

// The operator's stops (protocol `stopOf`): the rule a refusal names, and what it makes of the run.
const STOP_RULES: Record<string, "paused" | "budget_exhausted"> = {
  paused_run: "paused",
  paused_agent: "paused",
  suspended_host: "paused",
  budget: "budget_exhausted",
};

const str = (v: unknown): string | undefined => (typeof v === "string" && v.length > 0 ? v : undefined);

/** Folds one appended frame into the reading. */
export function readFrame(r: RunReading, seq: number, kind: string, p: ParsedPayload): void {
  if (kind === "policy_decision") {
    if (p.mode !== "enforce") return;
    const subject = str(p.subject);
    if (p.decision !== "deny") {
      // A tool call that the policy let through is a step that went through.
      if (subject === "tool" || subject === "oxagen_tool") r.stop = null;
      return;
    }
    const rule = str(p.rule) ?? "";
    const why = str(p.reason) ?? `refused by the policy (rule ${rule || "unknown"})`;
    const kindOf = STOP_RULES[rule];
    if (subject === "prompt") r.refusedPromptSeq = seq;
    if (kindOf) r.stop = { seq, kind: kindOf, reason: why };
    else if (subject === "prompt") r.stop = { seq, kind: "refused", reason: `the prompt was refused: ${why}` };
    else if (subject === "session") r.stop = { seq, kind: "refused", reason: `the session start was refused: ${why}` };
    else if (subject === "model") r.stop = { seq, kind: "refused", reason: `a model call was refused: ${why}` };
  } else if (kind === "tool_requested" || kind === "tool_call") {
    r.stop = null;
  } else if (kind === "turn_start") {
    if (r.refusedPromptSeq !== seq - 1) r.stop = null;
  } else if (kind === "llm_call") {
    const status = typeof p.status === "number" ? p.status : undefined;
    if (status === undefined || status < 400) r.modelOk++;
    else {
      r.modelFailed++;
      r.lastFailure = { seq, reason: `the vendor answered ${status}${str(p.model) ? ` to ${str(p.model)}` : ""}` };
    }
  } else if (kind === "error") {
    const code = str(p.code) ?? "unknown";
    // The harness leaving is not the model call failing.
    if (code === "client_closed") return;
    r.modelFailed++;
    r.lastFailure = { seq, reason: errorReason(code, typeof p.status === "number" ? p.status : undefined) };
  }
}

/** What the run's outcome is read from besides its frames: its status and the record's own outcome. */
export interface OutcomeInput {
  status: RunStatus;
  /** agent_stop's outcome, `crashed` for an unobserved tail, `unknown` once closed by the server; null while live. */
  recorded: string | null;
  reading: RunReading;
}

/** The derived outcome and its sentence; first match wins (docs/api.md, "Run outcome"). */
export function deriveOutcome({ status, recorded, reading: r }: OutcomeInput): { value: Outcome; reason: string } {
  if (status === "sealed") return { value: "sealed", reason: "sealed by an operator: the record is locked with the server's key" };
  if (r.stop) return { value: r.stop.kind, reason: r.stop.reason };
  const calls = r.modelOk + r.modelFailed;
  if (r.modelFailed > 0 && r.modelOk === 0) {
    const all = calls === 1 ? "the run's one model call failed" : `all ${calls} of the run's model calls failed`;
    return { value: "failed", reason: `${all}; the last: ${r.lastFailure?.reason ?? "no reason recorded"}` };
  }
  if (recorded === "error") return { value: "failed", reason: "the harness ended the session with an error" };
  if (status === "crashed") return { value: "crashed", reason: "the harness went away: the record ends without a clean stop" };
  if (status === "closed") return { value: "unknown", reason: "no frame for 12 hours: the server closed the run" };
  if (recorded === "aborted") return { value: "aborted", reason: "the session was aborted" };
  if (status === "live") return { value: "running", reason: "no frame so far says the run failed or was stopped" };
  return { value: "completed", reason: "the session ended, and no frame says it failed or was stopped" };
}

/**
 * The chain's reading, from its `reading` row; an object written before readings existed has no
 * row, and is read once from its stored frames (only the kinds that can change it), then kept.
 */
export function loadReading(sql: SqlStorage): RunReading {
  const row = sql.exec<{ reading: string }>("SELECT reading FROM reading WHERE id = 1").toArray()[0];
  if (row) return JSON.parse(row.reading) as RunReading;
  const r = emptyReading();
  if (sql.exec("SELECT 1 FROM frames LIMIT 1").toArray().length === 0) return r;
  const kinds = READ_KINDS.map((k) => `'${k}'`).join(",");
  for (const f of sql.exec<{ seq: number; kind: string; payload: string }>(
    `SELECT seq, kind, payload FROM frames WHERE kind IN (${kinds}) ORDER BY seq`,
  )) {
    readFrame(r, f.seq, f.kind, JSON.parse(f.payload) as ParsedPayload);
  }
  saveReading(sql, r);
  return r;
}

/** Writes the chain's reading (inside the caller's transaction). */
export function saveReading(sql: SqlStorage, r: RunReading): void {
  sql.exec("INSERT OR REPLACE INTO reading (id, reading) VALUES (1, ?)", JSON.stringify(r));
}
