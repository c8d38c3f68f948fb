import { budgetReason, exhaustedFor, type Policy } from "../../../protocol/index.ts";
import type { HostConfig } from "../../lib/state.ts";

/** The operator's stops in the cached signed policy that apply on this computer (tacho status). */
export interface Stops {
  /** Whether a policy is cached at all: without one, nothing here is known. */
  known: boolean;
  mode: "enforce" | "observe" | null;
  suspended: boolean;
  paused_runs: string[];
  /** Agents paused across the workspace or here, with whether this computer wraps them. */
  paused_agents: { name: string; wrapped_here: boolean }[];
  /** Budgets exhausted now, each with the sentence a refusal gives. */
  exhausted_budgets: { budget: string; scope: string; run: string | null; until_ms: number | null; reason: string }[];
}

export function stopsHere(host: HostConfig, policy: Policy | null, now: number): Stops {
  if (!policy) return { known: false, mode: null, suspended: false, paused_runs: [], paused_agents: [], exhausted_budgets: [] };
  return {
    known: true,
    mode: policy.mode,
    suspended: policy.suspended_hosts.includes(host.host_id),
    paused_runs: [...policy.paused_runs],
    paused_agents: (policy.paused_agents ?? []).map((name) => ({ name, wrapped_here: host.harnesses.includes(name) })),
    // Every exhausted scope still in force: a run's own only refuses that run, and says which.
    exhausted_budgets: (policy.exhausted_budgets ?? [])
      .filter((b) => exhaustedFor({ ...policy, exhausted_budgets: [b] }, b.run ?? null, now).length > 0)
      .map((b) => ({ budget: b.budget, scope: b.scope, run: b.run ?? null, until_ms: b.until_ms, reason: budgetReason(b) })),
  };
}

export function renderStops(s: Stops): string[] {
  if (!s.known) return ["stops: unknown (no policy cached)"];
  const lines: string[] = [];
  const refused = s.mode === "observe" ? "recorded, not refused (the policy is in observe mode)" : "refused";
  if (s.suspended) lines.push(`stopped: this computer is suspended by an operator; every step here is ${refused}`);
  for (const run of s.paused_runs) lines.push(`stopped: run ${run} is paused by an operator; its next steps are ${refused}`);
  for (const a of s.paused_agents)
    lines.push(`stopped: the agent ${a.name} is paused by an operator${a.wrapped_here ? ` (wrapped here); its steps are ${refused}` : ""}`);
  for (const b of s.exhausted_budgets)
    lines.push(
      `stopped: ${b.reason}${b.run ? ` (run ${b.run})` : ""}${b.until_ms !== null ? `, until ${new Date(b.until_ms).toISOString()}` : ""}; model calls and tool calls it covers are ${refused}`,
    );
  return lines.length ? lines : ["stops: none (no pause, suspension or exhausted budget applies here)"];
}
