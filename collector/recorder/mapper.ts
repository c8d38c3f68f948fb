import { AgentName, hostChainId, type Policy, runIdFor, type FrameKind } from "../../protocol/index.ts";
import { bodyFields, makeBody, oversizeOf, type Body } from "./bodies.ts";
import { decideEvent, type DecideContext, type DecisionRecord, type Told, toldOf } from "./decide.ts";
import { deriveFrames } from "./derive.ts";
import { str } from "../lib/json.ts";
import { Remembered } from "../lib/remembered.ts";
import type { RunInfo } from "./journal/index.ts";
import { type HookRequest, toldBySpooledAnswer } from "./request.ts";

export type { CachedPolicy } from "./decide.ts";

export interface Step {
  kind: FrameKind;
  payload: Record<string, unknown>;
  bodies: Body[];
}

/**
 * What one event does: the chain it goes on (its session's run; the computer's own chain when it
 * names no usable session), the frames to append (each with its bodies), the policy's decision on
 * it as its harness is told it (Recorder turns it into the harness's answer; a step `tacho hook`
 * answered offline was told what it decided then), and whether the session ends.
 */
export interface Plan {
  chain: string;
  run: RunInfo | null;
  steps: Step[];
  told: Told;
  final: boolean;
}

/** What mapping needs besides the event: the policy check's context. */
export type MapContext = DecideContext;

const OUTCOMES = new Set(["completed", "aborted", "error", "crashed"]);

function defined<T extends Record<string, unknown>>(o: T): T {
  for (const k of Object.keys(o)) if (o[k] === undefined) delete o[k];
  return o;
}

/** The run an event's own session id names (its first run: a reused id's current run is runs.ts `currentRun`): chain id and run meta; null when it names no usable session. */
export function namedRun(req: HookRequest, hostId: string): { chain: string; run: RunInfo } | null {
  const label = req.harness ?? req.agent;
  const session = str(req.event.session_id);
  if (!label || !validName(label) || !session) return null;
  const agent = req.agent && validName(req.agent) ? req.agent : null;
  return { chain: runIdOf(hostId, label, session), run: { harness: label, agent, session_id: session } };
}

// A session's model calls and hooks name its run again and again: its id (a SHA-256) and its
// label's check are remembered, a bounded few thousand at a time.
const runIds = new Remembered<string>(4096);
const names = new Remembered<boolean>(4096);

const runIdOf = (hostId: string, label: string, session: string) =>
  runIds.get(`${hostId}\u0000${label}\u0000${session}`, () => runIdFor(hostId, label, session));
const validName = (label: string) => names.get(label, () => AgentName.safeParse(label).success);

/** A step `tacho hook` answered offline: a spooled line with the answer it printed. */
function spooledAnswer(req: HookRequest): boolean {
  return req.spooled_ms !== undefined && req.answer !== undefined;
}

/**
 * The decision a step records: for a step `tacho hook` answered offline (a spooled line with its
 * answer), the one it made then (its `verdict`; a line from before lines carried one: what its
 * answer told, marked `offline`); otherwise the policy's.
 */
function recordedDecision(req: HookRequest, computed: DecisionRecord | null): DecisionRecord | null {
  if (!spooledAnswer(req)) return computed;
  if (req.verdict) return req.verdict;
  const told = toldBySpooledAnswer(String(req.event.hook_event_name), req.answer);
  if (!computed && told.decision === "none") return null;
  const reason = told.reason ?? computed?.reason ?? "";
  return { subject: computed?.subject ?? "tool", decision: told.decision, mode: computed?.mode ?? "enforce", reason, rule: "offline" };
}

function exitCodeOf(e: Record<string, unknown>): number | undefined {
  const r = e.tool_response as Record<string, unknown> | undefined;
  for (const v of [e.exit_code, r && typeof r === "object" ? (r.exit_code ?? r.exitCode ?? r.returncode) : undefined]) {
    if (typeof v === "number" && Number.isInteger(v)) return v;
  }
  const m = typeof e.error === "string" ? /^Exit code (-?\d+)/.exec(e.error) : null;
  return m ? Number(m[1]) : undefined;
}

/** Token counts a harness put on its own hook (normalized by its adapter), kept only when well-formed. */
function hookUsage(v: unknown): Record<string, number> | undefined {
  if (v === null || typeof v !== "object") return undefined;
  const u = v as Record<string, unknown>;
  const out: Record<string, number> = {};
  for (const key of ["input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens"]) {
    const n = u[key];
    if (typeof n === "number" && Number.isSafeInteger(n) && n >= 0) out[key] = n;
  }
  return out.input_tokens !== undefined && out.output_tokens !== undefined ? out : undefined;
}

type StepOf = (kind: FrameKind, payload: Record<string, unknown>, bodies?: Body[]) => void;

/** A SessionStart's agent_start payload. */
function agentStart(req: HookRequest, run: RunInfo): Record<string, unknown> {
  const e = req.event;
  return {
    harness: run.harness,
    agent: run.agent ?? undefined,
    session_id: run.session_id,
    cwd: typeof e.cwd === "string" && e.cwd.length <= 4096 ? e.cwd : undefined,
    source: str(e.source),
    model: str(e.model),
    pid: req.pid,
  };
}

/** The last assistant message a Stop or SubagentStop carries, as a body (null: none). */
function messageBody(e: HookRequest["event"], retention: Policy["retention"] | null): Body | null {
  const msg = e.last_assistant_message;
  return typeof msg === "string" || oversizeOf(msg) ? makeBody("message", msg, retention) : null;
}

/** A PostToolUse or PostToolUseFailure: its tool_call, then what its input shows (derived frames). */
function toolCallSteps(e: HookRequest["event"], retention: Policy["retention"] | null, step: StepOf): void {
  const tool = str(e.tool_name) ?? "unknown";
  const toolUseId = str(e.tool_use_id);
  const toolRef = defined({ tool_name: tool, tool_use_id: toolUseId });
  const failed = e.hook_event_name === "PostToolUseFailure";
  // A harness (or a custom agent) may leave the input out: the frame then names none (the
  // recorder fills it from the PreToolUse with the same tool_use_id when it saw one).
  const reported = e.tool_input !== undefined;
  const input = reported ? makeBody("tool_input", e.tool_input, retention) : null;
  const output = makeBody(failed ? "error" : "tool_output", failed ? (e.error ?? "") : (e.tool_response ?? null), retention);
  const status = failed ? (e.is_interrupt === true ? "interrupted" : "error") : "ok";
  const duration = typeof e.duration_ms === "number" && Number.isInteger(e.duration_ms) && e.duration_ms >= 0 ? e.duration_ms : undefined;
  const exit = exitCodeOf(e);
  step(
    "tool_call",
    {
      ...toolRef,
      status: exit !== undefined && exit !== 0 && !failed ? "error" : status,
      exit_code: exit,
      duration_ms: duration,
      input: input?.digest,
      output: output.digest,
    },
    input ? [input, output] : [output],
  );
  if (reported) for (const d of deriveFrames(tool, e.tool_input, toolUseId)) step(d.kind, d.payload);
}

/**
 * Maps one hook event to frames and an answer, per the coverage statement's table. Pure. The run is
 * the one its event's session id names (the recorder gives a reused id its current run's, runs.ts).
 */
export function mapEvent(req: HookRequest, ctx: MapContext): Plan {
  const e = req.event;
  const session = namedRun(req, ctx.hostId);
  const decision = decideEvent(e, session?.chain ?? null, { ...ctx, agent: session?.run.harness ?? null });
  const record = recordedDecision(req, decision);
  const plan: Plan = {
    chain: session?.chain ?? hostChainId(ctx.hostId),
    run: session?.run ?? null,
    steps: [],
    told: toldOf(spooledAnswer(req) ? record : decision),
    final: false,
  };
  const retention = ctx.policy?.policy.retention ?? null;
  const tool = str(e.tool_name) ?? "unknown";
  const toolUseId = str(e.tool_use_id);
  const toolRef = defined({ tool_name: tool, tool_use_id: toolUseId });
  const step: StepOf = (kind, payload, bodies = []) => {
    plan.steps.push({ kind, payload: defined({ path: "hook", ...payload, ...bodyFields(bodies) }), bodies });
  };
  const decided = (extra: Record<string, unknown> = {}) => {
    if (!record) return;
    step("policy_decision", { ...record, ...extra, offline: spooledAnswer(req) ? true : undefined });
  };
  switch (e.hook_event_name) {
    case "SessionStart":
      if (session) step("agent_start", agentStart(req, session.run));
      decided();
      break;
    case "UserPromptSubmit": {
      const prompt = makeBody("prompt", e.prompt ?? "", retention);
      decided();
      step("turn_start", { prompt: prompt.digest, turn_id: str(e.prompt_id) }, [prompt]);
      break;
    }
    case "PreToolUse": {
      const input = makeBody("tool_input", e.tool_input ?? null, retention);
      decided(toolRef);
      const refused = record?.decision === "deny" && record.mode === "enforce";
      if (refused) step("token_denied", { ...toolRef, input: input.digest, reason: record.reason ?? "" }, [input]);
      else step("tool_requested", { ...toolRef, input: input.digest }, [input]);
      break;
    }
    case "PermissionRequest":
      decided(toolRef);
      step("approval_request", toolRef);
      break;
    case "PermissionDenied":
      step("harness_permission", { ...toolRef, decision: "deny" });
      break;
    case "PostToolUse":
    case "PostToolUseFailure":
      toolCallSteps(e, retention, step);
      break;
    case "Stop":
    case "StopFailure": {
      const body = messageBody(e, retention);
      step("turn_end", { message: body?.digest, turn_id: str(e.prompt_id), usage: hookUsage(e.usage) }, body ? [body] : []);
      break;
    }
    case "SubagentStart":
      step("subagent_start", { agent_id: str(e.agent_id), agent_type: str(e.agent_type) });
      break;
    case "SubagentStop": {
      const body = messageBody(e, retention);
      step("subagent_stop", { agent_id: str(e.agent_id), agent_type: str(e.agent_type), status: str(e.status) }, body ? [body] : []);
      break;
    }
    case "SessionEnd": {
      if (!session) break;
      const reason = (typeof e.reason === "string" && e.reason ? e.reason : "session_end").slice(0, 256);
      const outcome = typeof e.outcome === "string" && OUTCOMES.has(e.outcome) ? e.outcome : "completed";
      step("agent_stop", { reason, outcome });
      plan.final = true;
      break;
    }
    default:
      break;
  }
  return plan;
}
