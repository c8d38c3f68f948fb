/**
 * A run's coverage statement: which of the agent's actions its record holds, which path recorded
 * them, and what no path sees for its harness (the spec's coverage statement, made specific to one
 * run). One generator: the console, the API (`GET /v1/runs/:id/coverage`) and `oxagen verify`
 * all call {@link coverageStatement}, and print it with {@link coverageText}.
 * @module
 */
import type { CoverageFacts } from "./assess.ts";
import { HARNESSES } from "./ids.ts";
import { plural } from "./words.ts";

/** What a statement is made from: the run's harness, its coverage facts and its gaps. */
export interface CoverageInput {
  /** The harness label of the run (a built-in harness or a custom agent's name). */
  harness: string;
  facts: CoverageFacts;
  /** How many gaps of each kind the record lists (see {@link countGapKinds}). */
  gapCounts: Readonly<Record<string, number>>;
}

/** Counts gaps by kind, for {@link CoverageInput}. */
export function countGapKinds(gaps: readonly { kind: string }[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const g of gaps) out[g.kind] = (out[g.kind] ?? 0) + 1;
  return out;
}

/** One kind of action the record holds. */
export interface CoverageHeld {
  /** The action, in the coverage statement's words. */
  action: string;
  /** The frame kind that records it. */
  frame: string;
  /** How many frames of that kind the record holds. */
  count: number;
}

/** A run's coverage statement (see {@link coverageStatement}). */
export interface CoverageStatement {
  harness: string;
  /** `custom` for a custom agent (`tacho hook --agent NAME`). */
  harness_kind: "claude-code" | "codex" | "cursor" | "stella" | "custom";
  /** One sentence: what the record is and where it came from. */
  summary: string;
  /** Frames by recording path, with what each path is. */
  paths: { path: string; frames: number; what: string }[];
  /** The actions the record holds, in the statement's order. */
  holds: CoverageHeld[];
  /** Where the run's model calls came from, and so what its spend is. */
  model_calls: string;
  /** What the harness's hooks report and what they leave out. */
  hooks: string;
  /** What the record does not hold for this run: the harness's own blind spots, then every path's. */
  not_seen: string[];
  /** Each gap kind the record lists, with how many. */
  gaps: { kind: string; count: number }[];
}

const PATH_WHAT: Record<string, string> = {
  hook: "hooks the harness fired, received by the recorder",
  gateway: "the loopback gateway, between the harness and its model vendor or the workspace's Oxagen tools",
  transcript: "the harness's own transcript or rollout file, read by the recorder",
  worktree: "the session's git worktree, reconciled by the recorder",
  recorder: "the recorder itself (gaps, crashed sessions)",
  backfill: "oxagen agent backfill, rebuilt from a transcript after the session",
};

const ACTIONS: [frame: string, action: string][] = [
  ["agent_start", "the session started"],
  ["turn_start", "a prompt sent (its hash and length)"],
  ["policy_decision", "a decision by Oxagen's policy"],
  ["tool_requested", "a tool the agent asked to run"],
  ["token_denied", "a tool Oxagen refused"],
  ["approval_request", "the harness asked the person to approve a tool"],
  ["harness_permission", "the harness refused or decided a tool on its own"],
  ["tool_call", "a tool that finished (hashes and sizes of input and output)"],
  ["command", "a command a tool was asked to run"],
  ["file_io", "a file a tool was asked to touch"],
  ["network", "a network address a tool was asked to reach"],
  ["turn_end", "a turn that ended (the agent's last message)"],
  ["subagent_start", "a subagent started"],
  ["subagent_stop", "a subagent stopped"],
  ["llm_call", "a model call (usage, hashes of request and response)"],
  ["error", "a model call the gateway answered itself"],
  ["telemetry_gap", "something the recorder knows it missed"],
  ["oxagen:worktree_reconciled", "paths git reports as changed, and the session's commits"],
  ["agent_stop", "the session ended (reason and outcome)"],
];

const BY_HARNESS: Record<CoverageStatement["harness_kind"], { models: string; hooks: string; blind: string[] }> = {
  "claude-code": {
    models: "the gateway and Claude Code's transcript",
    hooks: "Claude Code fires a hook for every step; a policy that asks a person is asked by the harness.",
    blind: [
      "Claude Code's thinking: recorded as a token count only.",
      "Hooks Claude Code posts over HTTP (every finished tool call) while the recorder was down; hooks run as commands wait on disk, up to 10,000.",
    ],
  },
  codex: {
    models: "the gateway and Codex's rollout file",
    hooks:
      "Codex fires a hook for every step except its own refusal and a failed tool's own hook; a policy that asks a person is refused, with the reason.",
    blind: [
      "A Codex tool call whose hook did not fire: the rollout file records it after it ran, with no policy decision before it.",
      "Codex's own refusals of a tool.",
    ],
  },
  cursor: {
    models: "none: Cursor's model calls do not pass through the gateway",
    hooks:
      "Cursor fires a hook for every step except the approval prompt and its own refusal; a policy that asks a person is refused, with the reason.",
    blind: [
      "Cursor's model calls: the record holds no llm_call from them, the run never reaches the gateway tier, and its spend is not metered. Its replies come from the harness's response hook.",
      "Cursor's thoughts.",
    ],
  },
  stella: {
    models: "the gateway and Stella's own journal",
    hooks:
      "Stella fires a hook for every step except the approval prompt, its own refusal, a failed tool's own hook and the session's end, which the recorder takes from the process exiting; a policy that asks a person is held for a person's approval.",
    blind: ["Stella's own refusals of a tool, and a failed tool's own hook."],
  },
  custom: {
    models: "the gateway, when the agent sends its model calls through it",
    hooks:
      "A custom agent reports only the steps it calls tacho hook for; a step it skips is invisible, not flagged (wrapping is client-attested).",
    blind: ["Every step the agent did not call tacho hook around: it shows as silence, not as a flagged violation."],
  },
};

const EVERY_PATH_BLIND = [
  "What a tool's own process does: a network call, a child process or a file a shell command touches on its own.",
  "Actions outside the harness: a command typed in another terminal, or another program; a file it changes in the worktree shows only as a changed path, with no author and no content.",
  "Files outside the session's git worktree, and files git ignores.",
  "MCP servers the harness calls directly: only what the harness's own hooks reported.",
  "Calls on the workspace's Oxagen tools that do not pass through the gateway (a client calling the hosted MCP endpoint with a tool token): metered in the server's log only, outside the run's chain.",
  "A call the gateway cannot tie to a session: recorded on the computer's own chain, not in this run's record.",
  "Anything before the recorder was enrolled or the session started, and anything after the chain ends.",
];

function harnessKind(harness: string): CoverageStatement["harness_kind"] {
  return (HARNESSES as readonly string[]).includes(harness) ? (harness as CoverageStatement["harness_kind"]) : "custom";
}

/** Where the run's model calls came from, and what its spend therefore is. */
function modelCalls(kind: CoverageStatement["harness_kind"], f: CoverageFacts): string {
  const from = `Model calls come from ${BY_HARNESS[kind].models}.`;
  if (kind === "cursor") return `${from} Spend is not metered for this run.`;
  const gateway = f.llm_calls_gateway;
  const transcript = f.llm_calls_transcript;
  if (gateway > 0 && transcript > 0)
    return `${from} The gateway carried ${gateway} model calls and the harness's own log reported ${transcript}: spend is metered for the first and is what the harness reported for the rest.`;
  if (gateway > 0) return `${from} The gateway carried all ${gateway} of this run's model calls: its spend is metered.`;
  if (transcript > 0)
    return `${from} No model call passed the gateway; the ${transcript} recorded come from the harness's own log, so spend is what the harness reported.`;
  return `${from} The record holds no model call, so it shows no spend.`;
}

/**
 * The coverage statement of one run, from its harness, its coverage facts and its gaps. Pure: the
 * same input gives the same statement on the server, in the console and in `oxagen verify`.
 */
export function coverageStatement(input: CoverageInput): CoverageStatement {
  const kind = harnessKind(input.harness);
  const f = input.facts;
  const paths = Object.entries(f.by_path)
    .filter(([, n]) => n > 0)
    .map(([path, frames]) => ({ path, frames, what: PATH_WHAT[path] ?? "another path" }));
  const holds = ACTIONS.filter(([frame]) => (f.by_kind[frame] ?? 0) > 0).map(([frame, action]) => ({
    action,
    frame,
    count: f.by_kind[frame] ?? 0,
  }));
  const counts = new Map(Object.entries(input.gapCounts).filter(([, n]) => n > 0));
  const gaps = [...counts].map(([k, count]) => ({ kind: k, count }));
  const notSeen = [...BY_HARNESS[kind].blind];
  if (f.llm_calls_gateway === 0 && kind !== "cursor" && (f.by_kind.llm_call ?? 0) > 0)
    notSeen.push("Model calls that did not pass the gateway are known only from what the harness's own log reported.");
  if (f.bodies_not_kept > 0) notSeen.push(`The content of ${f.bodies_not_kept} bodies the record names but did not keep.`);
  if (counts.has("missing_bodies")) notSeen.push("The content of bodies the computer kept that never reached the server.");
  if (counts.has("body_refused")) notSeen.push("The content of bodies refused because they still held a credential.");
  if (counts.has("digest_only")) notSeen.push("Any content: the workspace keeps digests only.");
  if (counts.has("daemon_down")) notSeen.push("Steps while the recorder was down, beyond what the spool kept (see the daemon_down gaps).");
  if (counts.has("unobserved_tail")) notSeen.push("What happened after the record's last frame: the chain has no clean end.");
  notSeen.push(...EVERY_PATH_BLIND);
  const backfilled = f.backfilled_frames > 0 ? ` ${f.backfilled_frames} of them were backfilled from a transcript after the session.` : "";
  const who = kind === "custom" ? `custom agent ${input.harness}` : input.harness;
  return {
    harness: input.harness,
    harness_kind: kind,
    summary: `The record of this ${who} run holds ${f.frames} frames, as the agent's computer reported them.${backfilled} It cannot show an action the computer never reported.`,
    paths,
    holds,
    model_calls: modelCalls(kind, f),
    hooks: BY_HARNESS[kind].hooks,
    not_seen: notSeen,
    gaps,
  };
}

/** The statement as plain text, one item a line (what `oxagen verify` prints). */
export function coverageText(s: CoverageStatement): string {
  const lines = ["Coverage statement", s.summary, "", "Recorded by:"];
  for (const p of s.paths) lines.push(`  ${p.path} (${plural(p.frames, "frame")}): ${p.what}`);
  if (s.paths.length === 0) lines.push("  no path: the record holds no frame");
  lines.push("What the record holds:");
  for (const h of s.holds) lines.push(`  ${h.frame} x${h.count}: ${h.action}`);
  lines.push("Model calls:", `  ${s.model_calls}`, "Hooks:", `  ${s.hooks}`);
  lines.push("Gaps:");
  if (s.gaps.length === 0) lines.push("  none listed");
  for (const g of s.gaps) lines.push(`  ${g.kind}${g.count > 1 ? ` x${g.count}` : ""}`);
  lines.push("What no path saw:");
  for (const n of s.not_seen) lines.push(`  - ${n}`);
  return `${lines.join("\n")}\n`;
}
