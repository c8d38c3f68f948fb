import { decideModel, decideTool, type Payload as FramePayload, type Policy, stopOf } from "../../protocol/index.ts";
import { decisionAnswer, type HookAnswer } from "../hook-fast/answers.cjs";
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

/** What the policy says about one event: the canonical (Claude-shaped) answer and what it records. */
export interface Verdict {
  answer: HookAnswer;
  record: DecisionRecord | null;
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
 * - observe mode records the decision and answers nothing.
 */
export function decideEvent(event: Record<string, unknown>, runId: string | null, ctx: DecideContext): Verdict {
  const name = String(event.hook_event_name);
  const subject = SUBJECT[name];
  if (!subject) return { answer: {}, record: null };
  const etag = ctx.policy?.etag;
  const refuse = (reason: string, rule: string, mode: "enforce" | "observe" = "enforce"): Verdict => ({
    answer: mode === "enforce" ? decisionAnswer(name, "deny", reason) : {},
    record: { subject, decision: "deny", mode, reason: reason.slice(0, 1024), rule, ...(etag ? { policy_etag: etag } : {}) },
  });
  if (runId === null) return refuse("the hook's payload has no usable session_id, so Oxagen cannot attribute this step", "no_session");
  const tool = name === "PreToolUse";
  const policy = ctx.policy?.policy;
  if (!policy) {
    if (tool) return refuse("no verified policy from Oxagen is cached, so this tool call cannot be checked", "no_policy");
    return { answer: {}, record: null };
  }
  const stop = stopOf(policy, { hostId: ctx.hostId, runId, agent: ctx.agent ?? null, now: ctx.now ?? Date.now() });
  if (stop && !(stop.rule === "budget" && name === "SessionStart")) return refuse(stop.reason, stop.rule, policy.mode);
  if (!tool) return { answer: {}, record: null };
  const oversize = oversizeOf(event.tool_input);
  if (oversize) return refuse(`the tool call's input (${oversize.size} bytes) is over the 1 MiB Oxagen can check`, "oversize", policy.mode);
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
  let { decision, reason } = d;
  if (decision === "ask" && ctx.ask === "deny" && policy.mode === "enforce") {
    decision = "deny";
    reason = `the policy asks a person to approve this tool call, and this harness cannot ask: refused. ${reason}`;
  }
  const record: DecisionRecord = {
    subject,
    decision,
    mode: policy.mode,
    reason: reason.slice(0, 1024),
    rule: d.rule,
    ...(etag ? { policy_etag: etag } : {}),
  };
  const answered = policy.mode === "observe" || decision === "none" ? {} : decisionAnswer(name, decision, reason);
  return { answer: answered, record };
}

/** The decision a canonical answer carries on a veto event: deny, ask, allow, or none (no decision). */
export function answeredDecision(event: string, answer: unknown): DecisionRecord["decision"] {
  const a = (answer ?? {}) as Record<string, unknown>;
  const out = a.hookSpecificOutput as { permissionDecision?: unknown; decision?: { behavior?: unknown } } | undefined;
  const d = out?.permissionDecision ?? out?.decision?.behavior;
  if (d === "allow" || d === "deny" || d === "ask") return d;
  if ((event === "UserPromptSubmit" && a.decision === "block") || (event === "SessionStart" && a.continue === false)) return "deny";
  return "none";
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
