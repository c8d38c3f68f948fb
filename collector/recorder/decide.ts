import { decideModel, decideTool, type Payload as FramePayload, type Policy, stopOf } from "../../protocol/index.ts";
import type { Decision } from "../harnesses/answers.cjs";
import { oversizeOf } from "./bodies.ts";

/** A cached policy that verified under the pinned server key, and its ETag. */
export interface CachedPolicy {
  policy: Policy;
  etag: string;
}

/** What a policy check needs besides the event. */
export interface DecideContext {
  hostId: string;
  policy: CachedPolicy | null;
  /** What a policy's `ask` becomes: `deny` for a harness that cannot hold a step for a person. */
  ask?: "ask" | "deny";
  /** The session's agent label (harness or custom agent name), for an operator's agent pause. */
  agent?: string | null;
  /** The decision's time (an exhausted budget's window may have ended); defaults to now. */
  now?: number;
}

/** The `policy_decision` an event records (its payload without `path`, bodies and tool reference). */
export type DecisionRecord = Pick<FramePayload<"policy_decision">, "subject" | "decision" | "mode" | "reason" | "rule" | "policy_etag">;

/** What a harness is told of a decision: its decision and reason. */
export interface Told {
  decision: Decision;
  reason: string;
}

/** What a harness is told of a recorded decision: the decision when enforced; none in observe mode (recorded, not answered) or when nothing was decided. */
export function toldOf(record: DecisionRecord | null): Told {
  if (record?.mode !== "enforce") return { decision: "none", reason: "" };
  return { decision: record.decision, reason: record.reason ?? "" };
}

// The events where a harness waits for a decision before it goes on, and what each decides.
const SUBJECT: Record<string, DecisionRecord["subject"]> = {
  PreToolUse: "tool",
  PermissionRequest: "tool",
  UserPromptSubmit: "prompt",
  SessionStart: "session",
};

/**
 * The policy check of one canonical event, shared by the recorder and by `tacho hook` when the
 * recorder is unreachable, so both answer by the same rule (docs/collector.md, "Decisions"):
 *
 * - an event with no usable session id is refused at every veto point (it cannot be attributed);
 * - a tool call with no verified policy cached is denied (nothing else checks it);
 * - the operator's stops (protocol `stopOf`): a suspended computer, a paused run or a paused
 *   agent refuses tools, prompts, session starts and approvals; an exhausted budget refuses
 *   tools, prompts and approvals (a session may still start, and is refused at its first step);
 * - otherwise the first tool clause that matches decides, then the policy's default, which is
 *   `none` for new workspaces: no permission decision, so the harness's own flow runs;
 * - observe mode records the decision and answers nothing ({@link toldOf}).
 *
 * Null when the event waits for no decision, or nothing decides it. Each harness's adapter turns
 * the decision into its answer (collector/harnesses/<harness>/answer.cjs).
 */
export function decideEvent(event: Record<string, unknown>, runId: string | null, ctx: DecideContext): DecisionRecord | null {
  const name = String(event.hook_event_name);
  const subject = SUBJECT[name];
  if (!subject) return null;
  const etag = ctx.policy?.etag;
  const decided = (decision: Decision, reason: string, rule: string, mode: "enforce" | "observe" = "enforce"): DecisionRecord => ({
    subject,
    decision,
    mode,
    reason: reason.slice(0, 1024),
    rule,
    ...(etag ? { policy_etag: etag } : {}),
  });
  if (runId === null)
    return decided("deny", "the hook's payload has no usable session_id, so Oxagen cannot attribute this step", "no_session");
  const tool = name === "PreToolUse";
  const policy = ctx.policy?.policy;
  if (!policy)
    return tool ? decided("deny", "no verified policy from Oxagen is cached, so this tool call cannot be checked", "no_policy") : null;
  const stop = stopOf(policy, { hostId: ctx.hostId, runId, agent: ctx.agent ?? null, now: ctx.now ?? Date.now() });
  if (stop && !(stop.rule === "budget" && name === "SessionStart")) return decided("deny", stop.reason, stop.rule, policy.mode);
  if (!tool) return null;
  const oversize = oversizeOf(event.tool_input);
  if (oversize)
    return decided("deny", `the tool call's input (${oversize.size} bytes) is over the 1 MiB Oxagen can check`, "oversize", policy.mode);
  const input = event.tool_input as { command?: unknown } | null | undefined;
  const command = input && typeof input === "object" && typeof input.command === "string" ? input.command : undefined;
  const toolName = typeof event.tool_name === "string" && event.tool_name.length > 0 ? event.tool_name : "unknown";
  const d = decideTool(policy, {
    hostId: ctx.hostId,
    runId,
    agent: ctx.agent ?? null,
    now: ctx.now,
    toolName,
    ...(command !== undefined ? { command } : {}),
  });
  if (d.decision === "ask" && ctx.ask === "deny" && policy.mode === "enforce")
    return decided(
      "deny",
      `the policy asks a person to approve this tool call, and this harness cannot ask: refused. ${d.reason}`,
      d.rule,
      policy.mode,
    );
  return decided(d.decision, d.reason, d.rule, policy.mode);
}

/** What the gateway checks before it forwards a model call (see {@link decideModelCall}). */
export interface ModelCall {
  model: string;
  /** The run the call is tied to; null when the gateway could not tie it to a session. */
  runId: string | null;
  /** The session's agent label (harness or custom agent name), for an operator's agent pause; null when untied. */
  agent: string | null;
}

/**
 * A refusal from a check that runs after the policy's own (the budget, once the gateway holds a
 * lease of it): its reason and the rule that made it. Null lets the call through.
 */
export type LaterCheck = (call: ModelCall) => { reason: string; rule: string } | null;

/** What the policy says about one model call: whether to forward it, and the decision it records. */
export interface ModelVerdict {
  forward: boolean;
  /** A refusal (enforced, or only recorded in observe mode); null when the call goes through unremarked. */
  record: (DecisionRecord & { model: string }) | null;
}

/**
 * The policy check of one model call at the gateway: the operator's stops (protocol `stopOf`, the
 * hooks' own rule: a suspended computer, a paused run or agent, an exhausted budget), a model not on
 * the workspace's allow-list (`decideModel`), then `later` (a budget lease, once the gateway holds one). With no verified policy cached, the call is forwarded: unlike a tool
 * call, the hooks refuse every tool already, and refusing model calls too would only stop the
 * harness from saying why. Observe mode records a refusal and forwards the call.
 */
export function decideModelCall(call: ModelCall, ctx: DecideContext, later?: LaterCheck): ModelVerdict {
  const cached = ctx.policy;
  if (!cached) return { forward: true, record: null };
  const d = decideModel(cached.policy, { hostId: ctx.hostId, runId: call.runId, agent: call.agent, now: ctx.now, model: call.model });
  const refusal = d.decision === "deny" ? { reason: d.reason, rule: d.rule } : (later?.(call) ?? null);
  if (!refusal) return { forward: true, record: null };
  const mode = cached.policy.mode;
  return {
    forward: mode === "observe",
    record: {
      subject: "model",
      decision: "deny",
      mode,
      reason: refusal.reason.slice(0, 1024),
      rule: refusal.rule,
      policy_etag: cached.etag,
      model: call.model.slice(0, 256),
    },
  };
}
