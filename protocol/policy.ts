/**
 * Policy bundles: what a workspace allows, signed by the server so a collector can decide from
 * its cached copy while the server is out of reach.
 *
 * A signed policy is `{ "payload_type", "payload", "key_id", "sig" }` where `payload` is the
 * policy's Record JSON text and `sig` is Ed25519 (server key) over PAE(payload_type, payload).
 * The policy's ETag is the first 16 hex of SHA-256 of the payload bytes.
 * @module
 */
import { z } from "zod";
import { bytesToHex, fromHex, utf8 } from "./bytes.ts";
import { sign, verifyStrict } from "./ed25519.ts";
import { BodyRole } from "./frames.ts";
import { sha256Hex } from "./hash.ts";
import { AgentName, HostId, RunId } from "./ids.ts";
import { parseRecordJson, toRecordJson, type RecordJsonValue } from "./json.ts";
import { pae } from "./lock.ts";
import { formatUsd } from "./usd.ts";

/** The most paused runs a host's policy lists; pausing one more answers 409. */
export const MAX_PAUSED_RUNS_PER_HOST = 1000;

/** The DSSE payload type of a policy. */
export const POLICY_PAYLOAD_TYPE = "application/vnd.oxagen.policy.v1+json";

const decision = z.enum(["allow", "deny", "ask"]);
/**
 * What a tool call no clause matches gets: `none` gives no permission decision, so the harness's
 * own permission flow runs as if Oxagen were not there (the default for new workspaces since
 * policies could say so); `allow`, `deny` and `ask`, set by an operator or cached from an older
 * policy, are answered as they say.
 */
export const DefaultToolDecision = z.enum(["allow", "deny", "ask", "none"]);
const glob = z.string().min(1).max(256);

/** An upstream base URL for the gateway: http or https, no credentials, query or fragment. */
export const UpstreamUrl = z
  .string()
  .max(512)
  .refine((text) => {
    try {
      const u = new URL(text);
      return (u.protocol === "https:" || u.protocol === "http:") && !u.username && !u.password && !u.search && !u.hash;
    } catch {
      return false;
    }
  }, "an http(s) URL without credentials, query or fragment");

/** One access clause for tools: the first clause that matches decides. */
export const ToolClause = z.strictObject({
  id: z.string().min(1).max(64),
  /** Glob over the tool name (`*` any run of characters, `?` one), e.g. `Bash`, `mcp__github__*`. */
  tool: glob,
  /** Optional glob over the tool input's `command` (shell tools). */
  command: glob.optional(),
  decision,
  reason: z.string().max(512),
});
/** One of {@link ToolClause}. */
export type ToolClause = z.infer<typeof ToolClause>;

/** A spend limit, in millionths of a US dollar. */
export const BudgetClause = z.strictObject({
  id: z.string().min(1).max(64),
  scope: z.enum(["run", "host", "workspace"]),
  window: z.enum(["run", "day", "month"]),
  limit_microusd: z.number().int().nonnegative(),
});
/** One of {@link BudgetClause}. */
export type BudgetClause = z.infer<typeof BudgetClause>;

/** The most agent names a host's policy lists as paused. */
export const MAX_PAUSED_AGENTS = 200;
/** The most exhausted budget scopes a host's policy lists. */
export const MAX_EXHAUSTED_BUDGETS = 500;

/**
 * A budget scope whose spend reached its clause's limit, as the server counted it. `run` names the
 * run when the clause's scope or window is `run`; `until_ms` is when the window ends (the next UTC
 * day or month; null for a run's lifetime), after which the entry no longer refuses anything.
 */
export const ExhaustedBudget = z.strictObject({
  budget: z.string().min(1).max(64),
  scope: z.enum(["run", "host", "workspace"]),
  window: z.enum(["run", "day", "month"]),
  run: RunId.optional(),
  until_ms: z.number().int().nonnegative().nullable(),
  /** Priced spend plus what leases hold for calls not priced yet. */
  spent_microusd: z.number().int().nonnegative(),
  /** The part of `spent_microusd` leases hold (reserved for calls in flight, not spent); absent when none. */
  reserved_microusd: z.number().int().positive().optional(),
  limit_microusd: z.number().int().nonnegative(),
});
/** One of {@link ExhaustedBudget}. */
export type ExhaustedBudget = z.infer<typeof ExhaustedBudget>;

/**
 * The policy a workspace hands its collectors. The server signs one for each host: the
 * workspace's clauses plus only that host's own pause state (its paused runs still live on it, and
 * itself when suspended), with `host` naming it, so it cannot be handed to another host.
 */
export const Policy = z.strictObject({
  v: z.literal(1),
  workspace: z.string().min(1).max(128),
  /** The host the policy was signed for; absent from the workspace's own copy. */
  host: HostId.optional(),
  issued_ms: z.number().int().nonnegative(),
  mode: z.enum(["enforce", "observe"]),
  tools: z.array(ToolClause).max(500),
  /** See {@link DefaultToolDecision}. */
  default_tool_decision: DefaultToolDecision,
  /** Model name globs the gateway may forward; null allows every model. */
  models: z.array(glob).max(200).nullable(),
  budgets: z
    .array(BudgetClause)
    .max(50)
    .refine((b) => new Set(b.map((c) => c.id)).size === b.length, "a budget id is used twice"),
  /**
   * Base URLs the collector's gateway forwards each vendor's model calls to instead of the vendor's
   * own (a company proxy); absent, the vendor's own. The caller's credentials go there.
   */
  upstreams: z.strictObject({ anthropic: UpstreamUrl.optional(), openai: UpstreamUrl.optional() }).optional(),
  /** Runs an operator paused or sealed that may still be running on the host. */
  paused_runs: z.array(RunId).max(MAX_PAUSED_RUNS_PER_HOST),
  /** The host itself when it is suspended; otherwise empty. */
  suspended_hosts: z.array(HostId).max(1),
  /**
   * Agent names (a harness or a custom agent) an operator paused on this host or across the
   * workspace. Absent when none is: a collector from before agent pauses (whose schema has no
   * such field) still opens a policy that pauses no agent.
   */
  paused_agents: z.array(AgentName).max(MAX_PAUSED_AGENTS).optional(),
  /** Budget scopes that concern this host and are exhausted (see {@link ExhaustedBudget}). Absent when none is, as above. */
  exhausted_budgets: z.array(ExhaustedBudget).max(MAX_EXHAUSTED_BUDGETS).optional(),
  retention: z.strictObject({
    mode: z.enum(["keep", "digest_only"]),
    keep: z
      .array(BodyRole)
      .max(BodyRole.options.length)
      .refine((roles) => new Set(roles).size === roles.length, "a role is named twice"),
  }),
});

/**
 * The retention rule: whether a workspace with this retention keeps a body of `role`: true, or
 * why not (the `why` of a body reference, see `frames.ts`). No retention known yet (a collector
 * with no policy cached) keeps it. The collector decides each body's reference with it and the
 * server refuses an upload it says no to.
 */
export function keepFor(retention: Policy["retention"] | null, role: z.infer<typeof BodyRole>): true | "digest_only" | "retention" {
  if (!retention) return true;
  if (retention.mode === "digest_only") return "digest_only";
  return retention.keep.includes(role) ? true : "retention";
}

/**
 * The fields of a policy the server owns (its workspace, host and issue time, and the operator's
 * stops: paused runs and agents, suspended hosts, exhausted budgets): a `zod` omit mask. What is
 * left is what an operator may set (`PUT /v1/workspaces/:id/policy`).
 */
export const SERVER_OWNED_POLICY_FIELDS = {
  v: true,
  workspace: true,
  host: true,
  issued_ms: true,
  paused_runs: true,
  suspended_hosts: true,
  paused_agents: true,
  exhausted_budgets: true,
} as const;

/** A policy as read, without the fields the server owns: what an operator may put back. */
export function editablePolicy(policy: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(policy).filter(([k]) => !(k in SERVER_OWNED_POLICY_FIELDS)));
}
/** One of {@link Policy}. */
export type Policy = z.infer<typeof Policy>;

/** The largest policy payload a collector accepts, in UTF-16 code units (the payload string's length). */
export const MAX_POLICY_BYTES = 1_000_000;

/** A signed policy as served and cached. */
export const SignedPolicy = z.strictObject({
  payload_type: z.literal(POLICY_PAYLOAD_TYPE),
  payload: z.string().min(2).max(MAX_POLICY_BYTES),
  key_id: z.string().regex(/^[0-9a-f]{16}$/),
  sig: z.string().regex(/^[0-9a-f]{128}$/),
});
/** One of {@link SignedPolicy}. */
export type SignedPolicy = z.infer<typeof SignedPolicy>;

/** A policy's payload: its Record JSON text, as signed. */
export function policyPayload(policy: Policy): string {
  return toRecordJson(Policy.parse(policy) as RecordJsonValue);
}

/** Signs a policy with the server's key. */
export function signPolicy(policy: Policy, serverSecretKey: Uint8Array, serverKeyId: string): SignedPolicy {
  const payload = policyPayload(policy);
  const sig = bytesToHex(sign(serverSecretKey, pae(POLICY_PAYLOAD_TYPE, utf8(payload))));
  return { payload_type: POLICY_PAYLOAD_TYPE, payload, key_id: serverKeyId, sig };
}

/** The ETag of a signed policy. */
export function policyEtag(signed: Pick<SignedPolicy, "payload">): string {
  return sha256Hex(signed.payload).slice(0, 16);
}

/** Checks a signed policy against the pinned server key and returns the policy; throws with the reason. */
export function openPolicy(signed: SignedPolicy, serverKey: Uint8Array): Policy {
  const ok = verifyStrict(serverKey, pae(POLICY_PAYLOAD_TYPE, utf8(signed.payload)), fromHex(signed.sig, 64));
  if (!ok) throw new Error("policy signature does not verify under the pinned server key");
  return Policy.parse(parseRecordJson(signed.payload));
}

/**
 * A decision with its reason and the clause that made it. `none` means no clause decided and the
 * policy's default is to give no decision: the caller answers nothing and the harness decides.
 */
export interface PolicyDecision {
  decision: "allow" | "deny" | "ask" | "none";
  reason: string;
  rule: string;
}

/** Matches a glob (`*`, `?`) against a whole string. */
export function globMatch(pattern: string, text: string): boolean {
  let re = globs.get(pattern);
  if (!re) {
    // Runs of `*` collapse to one, so a pattern cannot make the match backtrack without bound.
    const source = pattern
      .replace(/\*+/g, "*")
      .replace(/[.+^${}()|[\]\\]/g, "\\$&")
      .replaceAll("*", ".*")
      .replaceAll("?", ".");
    re = new RegExp(`^${source}$`, "s");
    if (globs.size > 2048) globs.clear();
    globs.set(pattern, re);
  }
  return re.test(text);
}

// Tool decisions run on every hook: each pattern is compiled once.
const globs = new Map<string, RegExp>();

/** What stops a step before any clause is read; `budget` stops are the only ones a session start passes. */
export interface Stop extends PolicyDecision {
  decision: "deny";
  rule: "suspended_host" | "paused_run" | "paused_agent" | "budget";
}

/** The exhausted budget entries that apply to a step of `runId` at `now` (entries past their window do not). */
export function exhaustedFor(policy: Policy, runId: string | null, now: number): ExhaustedBudget[] {
  return (policy.exhausted_budgets ?? []).filter(
    (b) => (b.until_ms === null || now < b.until_ms) && (b.run === undefined || b.run === runId),
  );
}

/** The sentence a budget refusal gives. */
export function budgetReason(b: ExhaustedBudget): string {
  const window = b.window === "run" ? "this run" : b.window === "day" ? "today (UTC)" : "this month (UTC)";
  const scope = b.scope === "run" ? "the run" : b.scope === "host" ? "this computer" : "the workspace";
  const reserved = b.reserved_microusd ?? 0;
  const used =
    reserved > 0
      ? `${formatUsd(b.spent_microusd - reserved)} is spent and ${formatUsd(reserved)} is reserved by calls in flight`
      : `${formatUsd(b.spent_microusd)} is spent`;
  return `budget exhausted: ${b.budget} allows ${formatUsd(b.limit_microusd)} for ${scope} in ${window}, and ${used}`;
}

/**
 * The operator's stops, in order: a suspended computer, a paused run, a paused agent, then an
 * exhausted budget. The one rule every decision (tool, model, prompt, session) starts from, on the
 * recorder, offline in `tacho hook`, and in the gateway. Null when nothing stops the step.
 */
export function stopOf(policy: Policy, call: { hostId: string; runId: string | null; agent?: string | null; now?: number }): Stop | null {
  if (policy.suspended_hosts.includes(call.hostId))
    return { decision: "deny", reason: "this computer is suspended by an operator", rule: "suspended_host" };
  if (call.runId !== null && policy.paused_runs.includes(call.runId))
    return { decision: "deny", reason: "this run is paused by an operator", rule: "paused_run" };
  if (call.agent && policy.paused_agents?.includes(call.agent))
    return { decision: "deny", reason: `the agent ${call.agent} is paused by an operator`, rule: "paused_agent" };
  const budget = exhaustedFor(policy, call.runId, call.now ?? Date.now())[0];
  if (budget) return { decision: "deny", reason: budgetReason(budget), rule: "budget" };
  return null;
}

/**
 * Decides a tool call: the operator's stops first ({@link stopOf}), then the first tool
 * clause that matches, then the policy's `default_tool_decision` (`none` when it gives no
 * decision). In observe mode the decision is still computed (and recorded) but the caller answers
 * nothing.
 */
export function decideTool(
  policy: Policy,
  call: { hostId: string; runId: string; agent?: string | null; now?: number; toolName: string; command?: string },
): PolicyDecision {
  const stop = stopOf(policy, call);
  if (stop) return stop;
  for (const clause of policy.tools) {
    if (!globMatch(clause.tool, call.toolName)) continue;
    if (clause.command !== undefined && (call.command === undefined || !globMatch(clause.command, call.command))) continue;
    return { decision: clause.decision, reason: clause.reason, rule: clause.id };
  }
  const d = policy.default_tool_decision;
  const reason = d === "none" ? `no clause of the policy decides ${call.toolName}` : `default decision for ${call.toolName}`;
  return { decision: d, reason, rule: "default" };
}

/** Decides a model call: the operator's stops ({@link stopOf}, exhausted budgets included), then the model allow-list. */
export function decideModel(
  policy: Policy,
  call: { hostId: string; runId: string | null; agent?: string | null; now?: number; model: string },
): PolicyDecision {
  const stop = stopOf(policy, call);
  if (stop) return stop;
  if (policy.models && !policy.models.some((g) => globMatch(g, call.model))) {
    return { decision: "deny", reason: `model ${call.model} is not on the workspace's allow-list`, rule: "models" };
  }
  return { decision: "allow", reason: "model allowed", rule: "models" };
}

/**
 * The policy a new workspace starts with: enforce mode, no tool clause and no default decision
 * (the harness's own permission flow decides every tool call), every body kept.
 */
export function defaultPolicy(workspace: string, now: number): Policy {
  return {
    v: 1,
    workspace,
    issued_ms: now,
    mode: "enforce",
    tools: [],
    default_tool_decision: "none",
    models: null,
    budgets: [],
    paused_runs: [],
    suspended_hosts: [],
    retention: { mode: "keep", keep: ["prompt", "tool_input", "tool_output", "message", "llm_request", "llm_response", "error"] },
  };
}
