import { AgentName, decideTool, runIdFor, type FrameKind, type Policy, type PolicyDecision } from "../../protocol/index.ts";
import { bodyFields, makeBody, type Body } from "./bodies.ts";
import { deriveFrames } from "./derive.ts";
import type { RunInfo } from "./journal.ts";

/** One hook event as the wire carries it (docs/collector.md); `answer` only on spooled lines. */
export interface HookRequest {
  id: string | null;
  t: number;
  source: string;
  harness: string | null;
  agent: string | null;
  event: Record<string, unknown>;
  spooled_ms?: number;
  /** Set by `tacho hook` when the payload was over 1 MiB: its size and the fields it dropped. */
  oversize?: { bytes: number; dropped_fields: string[] };
  answer?: unknown;
  /** The harness process the hook ran under, and its start time (wire `pid`, `pid_start`). */
  pid?: number;
  pid_start?: string;
}

export interface Step {
  kind: FrameKind;
  payload: Record<string, unknown>;
  bodies: Body[];
}

/** What one event does: the frames to append (each with its bodies), the answer, and whether the session ends. */
export interface Plan {
  chain: string | null;
  run: RunInfo | null;
  steps: Step[];
  answer: Record<string, unknown>;
  final: boolean;
}

export interface CachedPolicy {
  policy: Policy;
  etag: string;
}

export interface MapContext {
  hostId: string;
  policy: CachedPolicy | null;
  /** What a policy's `ask` becomes: `deny` for a harness that cannot hold a step for a person. */
  ask?: "ask" | "deny";
}

const OUTCOMES = new Set(["completed", "aborted", "error", "crashed"]);

function name(v: unknown): string | undefined {
  return typeof v === "string" && v.length > 0 && v.length <= 256 ? v : undefined;
}

function defined<T extends Record<string, unknown>>(o: T): T {
  for (const k of Object.keys(o)) if (o[k] === undefined) delete o[k];
  return o;
}

/** The session an event belongs to: harness label (harness name or custom agent name), run id and run meta. */
export function sessionOf(req: HookRequest, hostId: string): { chain: string; run: RunInfo } | null {
  const label = req.harness ?? req.agent;
  const session = name(req.event.session_id);
  if (!label || !AgentName.safeParse(label).success || !session) return null;
  const agent = req.agent && AgentName.safeParse(req.agent).success ? req.agent : null;
  return { chain: runIdFor(hostId, label, session), run: { harness: label, agent, session_id: session } };
}

function spooledReason(answer: unknown): string | undefined {
  const r = (answer as { hookSpecificOutput?: { permissionDecisionReason?: unknown } } | undefined)?.hookSpecificOutput
    ?.permissionDecisionReason;
  return typeof r === "string" && r.length > 0 ? r : undefined;
}

function spooledDecision(answer: unknown): PolicyDecision["decision"] | undefined {
  const out = (answer as { hookSpecificOutput?: { permissionDecision?: unknown } } | undefined)?.hookSpecificOutput;
  const d = out?.permissionDecision;
  return d === "allow" || d === "deny" || d === "ask" ? d : undefined;
}

function decide(ctx: MapContext, chain: string, tool: string, input: unknown): PolicyDecision & { mode: "enforce" | "observe" } {
  // Same rule as tacho hook offline: with no verified policy nothing can check the tool, so it is refused.
  if (!ctx.policy)
    return {
      decision: "deny",
      reason: "no verified Oxagen policy is cached yet, so this tool call cannot be checked",
      rule: "no_policy",
      mode: "enforce",
    };
  const command = (input as { command?: unknown } | null)?.command;
  const d = decideTool(ctx.policy.policy, {
    hostId: ctx.hostId,
    runId: chain,
    toolName: tool,
    ...(typeof command === "string" ? { command } : {}),
  });
  return { ...d, mode: ctx.policy.policy.mode };
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

/** Maps one hook event to frames and an answer, per the coverage statement's table. Pure. */
export function mapEvent(req: HookRequest, ctx: MapContext): Plan {
  const e = req.event;
  const session = sessionOf(req, ctx.hostId);
  const plan: Plan = { chain: session?.chain ?? null, run: session?.run ?? null, steps: [], answer: {}, final: false };
  if (!session) return plan;
  const retention = ctx.policy?.policy.retention ?? null;
  const tool = name(e.tool_name) ?? "unknown";
  const toolUseId = name(e.tool_use_id);
  const toolRef = defined({ tool_name: tool, tool_use_id: toolUseId });
  const step = (kind: FrameKind, payload: Record<string, unknown>, bodies: Body[] = []) => {
    plan.steps.push({ kind, payload: defined({ path: "hook", ...payload, ...bodyFields(bodies) }), bodies });
  };
  switch (e.hook_event_name) {
    case "SessionStart":
      step("agent_start", {
        harness: session.run.harness,
        agent: session.run.agent ?? undefined,
        session_id: session.run.session_id,
        cwd: typeof e.cwd === "string" && e.cwd.length <= 4096 ? e.cwd : undefined,
        source: name(e.source),
        model: name(e.model),
        pid: req.pid,
      });
      if (ctx.policy?.policy.mode === "enforce" && ctx.policy.policy.suspended_hosts.includes(ctx.hostId)) {
        plan.answer = { continue: false, stopReason: "this computer is suspended by an operator" };
      }
      break;
    case "UserPromptSubmit": {
      const prompt = makeBody("prompt", e.prompt ?? "", retention);
      const p = ctx.policy?.policy;
      const blocked = p?.mode === "enforce" && (p.paused_runs.includes(session.chain) || p.suspended_hosts.includes(ctx.hostId));
      if (blocked) {
        const reason = p.suspended_hosts.includes(ctx.hostId)
          ? "this computer is suspended by an operator"
          : "this run is paused by an operator";
        step("policy_decision", { subject: "prompt", decision: "deny", mode: "enforce", reason, policy_etag: ctx.policy?.etag });
        plan.answer = { decision: "block", reason };
      }
      step("turn_start", { prompt: prompt.digest, turn_id: name(e.prompt_id) }, [prompt]);
      break;
    }
    case "PreToolUse": {
      const input = makeBody("tool_input", e.tool_input ?? null, retention);
      const d = decide(ctx, session.chain, tool, e.tool_input);
      const offline = req.spooled_ms !== undefined ? spooledDecision(req.answer) : undefined;
      if (offline) {
        // Record what the agent was told offline, with the reason it was given then.
        d.reason = spooledReason(req.answer) ?? d.reason;
        d.rule = "offline";
      }
      if (req.oversize) {
        // `tacho hook` denied it: an input over 1 MiB cannot be checked against the command clauses.
        d.decision = "deny";
        d.reason = `the tool call's payload (${req.oversize.bytes} bytes) is over the 1 MiB Oxagen can check`;
        d.rule = "oversize";
      }
      let decision = req.oversize ? "deny" : (offline ?? d.decision);
      if (decision === "ask" && ctx.ask === "deny" && d.mode === "enforce") {
        decision = "deny";
        d.reason = `the policy asks a person to approve this tool call, and ${session.run.harness} cannot ask: refused. ${d.reason}`;
      }
      step("policy_decision", {
        subject: "tool",
        decision,
        mode: d.mode,
        reason: d.reason.slice(0, 1024),
        rule: name(d.rule),
        policy_etag: ctx.policy?.etag,
        ...toolRef,
        offline: offline ? true : undefined,
      });
      const refused = decision === "deny" && d.mode === "enforce";
      if (refused) step("token_denied", { ...toolRef, input: input.digest, reason: d.reason.slice(0, 1024) }, [input]);
      else step("tool_requested", { ...toolRef, input: input.digest }, [input]);
      const answered = d.mode === "observe" ? "allow" : decision;
      const reason = d.mode === "observe" && decision !== "allow" ? `observe mode (would ${decision}): ${d.reason}` : d.reason;
      plan.answer = { hookSpecificOutput: { hookEventName: "PreToolUse", permissionDecision: answered, permissionDecisionReason: reason } };
      break;
    }
    case "PermissionRequest":
      step("approval_request", toolRef);
      break;
    case "PermissionDenied":
      step("harness_permission", { ...toolRef, decision: "deny" });
      break;
    case "PostToolUse":
    case "PostToolUseFailure": {
      const failed = e.hook_event_name === "PostToolUseFailure";
      const input = makeBody("tool_input", e.tool_input ?? null, retention);
      const output = makeBody(failed ? "error" : "tool_output", failed ? (e.error ?? "") : (e.tool_response ?? null), retention);
      const status = failed ? (e.is_interrupt === true ? "interrupted" : "error") : "ok";
      const duration =
        typeof e.duration_ms === "number" && Number.isInteger(e.duration_ms) && e.duration_ms >= 0 ? e.duration_ms : undefined;
      const exit = exitCodeOf(e);
      step(
        "tool_call",
        {
          ...toolRef,
          status: exit !== undefined && exit !== 0 && !failed ? "error" : status,
          exit_code: exit,
          duration_ms: duration,
          input: input.digest,
          output: output.digest,
        },
        [input, output],
      );
      for (const d of deriveFrames(tool, e.tool_input, toolUseId)) step(d.kind, d.payload);
      break;
    }
    case "Stop":
    case "StopFailure": {
      const msg = e.last_assistant_message;
      const body = typeof msg === "string" ? makeBody("message", msg, retention) : null;
      step("turn_end", { message: body?.digest, turn_id: name(e.prompt_id), usage: hookUsage(e.usage) }, body ? [body] : []);
      break;
    }
    case "SubagentStart":
      step("subagent_start", { agent_id: name(e.agent_id), agent_type: name(e.agent_type) });
      break;
    case "SubagentStop": {
      const msg = e.last_assistant_message;
      const body = typeof msg === "string" ? makeBody("message", msg, retention) : null;
      step("subagent_stop", { agent_id: name(e.agent_id), agent_type: name(e.agent_type), status: name(e.status) }, body ? [body] : []);
      break;
    }
    case "SessionEnd": {
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
