import { closeSync, fstatSync, fsyncSync, mkdirSync, openSync, readFileSync, statSync, writeSync } from "node:fs";
import { decideTool, runIdFor, type Policy } from "../../../protocol/index.ts";
import { askBecomes, neutralAnswer, normalizeEvent, shapeAnswer } from "../../harnesses/events.ts";
import { decisionAnswer, type HookAnswer } from "../../hook-fast/answers.cjs";
import { useNodeCrypto } from "../../lib/node-crypto.ts";
import { HostConfig, statePath, writeStateFile } from "../../lib/state.ts";
import { readPolicyFile } from "../../recorder/policy-cache.ts";

/** The most lines spool/events.jsonl holds (docs/collector.md). */
export const SPOOL_LIMIT = 10_000;

export interface OfflineContext {
  host: unknown;
  request: { id: string; harness: string | null; agent: string | null; event: Record<string, unknown>; pid?: number; pid_start?: string };
  line: string;
  eventName: string;
}

interface Decided {
  decision: "allow" | "deny" | "ask";
  reason: string;
}

/**
 * The answer when the recorder is unreachable: decided from the cached signed policy, marked
 * client_attested, and spooled for the recorder to replay. Never throws.
 */
export async function offlineAnswer(raw: OfflineContext): Promise<HookAnswer> {
  const { harness, event: payload } = raw.request;
  const wrapped = Array.isArray((raw.host as { harnesses?: unknown }).harnesses) ? (raw.host as { harnesses: string[] }).harnesses : [];
  const n = normalizeEvent(harness, payload, { wrapped, pid: raw.request.pid, pidStart: raw.request.pid_start });
  if (!("event" in n)) return neutralAnswer(harness, payload);
  // Decided and spooled in the canonical shape (the recorder replays it); printed in the harness's.
  const ctx: OfflineContext = { ...raw, request: { ...raw.request, event: n.event }, eventName: String(n.event.hook_event_name) };
  let answer: HookAnswer;
  let notice: string | undefined;
  try {
    useNodeCrypto();
    let [decision, reason] = decideOffline(ctx);
    if (decision === "ask" && askBecomes(harness) === "deny") {
      decision = "deny";
      reason = `the policy asks a person to approve this tool call, and ${harness} cannot ask: refused. ${reason}`;
    }
    answer = decisionAnswer(ctx.eventName, decision, reason);
  } catch (err) {
    answer = decisionAnswer(ctx.eventName, "deny", `Oxagen cannot decide while the recorder is down: ${(err as Error).message}`);
  }
  answer = { ...answer, enforcement_tier: "client_attested" };
  try {
    if (!spool(ctx.line, answer)) notice = "the Oxagen spool is full; this step was not recorded";
  } catch (err) {
    notice = `this step could not be spooled (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`;
  }
  return shapeAnswer(harness, n.event, notice ? { ...answer, systemMessage: `tacho hook: ${notice}` } : answer);
}

/**
 * Fails closed where the policy is the only thing between the agent and the tool: a PreToolUse
 * with no verified policy cached is denied. Prompts and session starts are gated by the policy
 * only through a suspended computer or a paused run, so without a policy they pass.
 */
function decideOffline(ctx: OfflineContext): [Decided["decision"], string] {
  const host = HostConfig.parse(ctx.host);
  const cached = readPolicyFile(host);
  const event = ctx.request.event;
  if (!cached) {
    if (ctx.eventName === "PreToolUse")
      return ["deny", "Oxagen's recorder is not running and no verified policy is cached, so this tool call cannot be checked"];
    return ["allow", "no verified policy is cached"];
  }
  const policy = cached.policy;
  const label = ctx.request.harness ?? ctx.request.agent ?? "custom";
  const session = typeof event.session_id === "string" ? event.session_id : "";
  const runId = runIdFor(host.host_id, label, session);
  const d = decisionFor(policy, ctx.eventName, { hostId: host.host_id, runId, event });
  if (policy.mode === "observe" && d.decision !== "allow") return ["allow", `observe mode (would ${d.decision}): ${d.reason}`];
  return [d.decision, d.reason];
}

function decisionFor(policy: Policy, eventName: string, call: { hostId: string; runId: string; event: Record<string, unknown> }): Decided {
  if (eventName === "PreToolUse") {
    const input = call.event.tool_input as { command?: unknown } | null | undefined;
    const command = input && typeof input === "object" && typeof input.command === "string" ? input.command : undefined;
    const toolName = typeof call.event.tool_name === "string" ? call.event.tool_name : "";
    return decideTool(policy, { hostId: call.hostId, runId: call.runId, toolName, ...(command !== undefined ? { command } : {}) });
  }
  if (policy.suspended_hosts.includes(call.hostId)) return { decision: "deny", reason: "this computer is suspended by an operator" };
  if (policy.paused_runs.includes(call.runId)) return { decision: "deny", reason: "this run is paused by an operator" };
  return { decision: "allow", reason: "" };
}

/** Appends one line to the spool; false (and the dropped count bumped) when it is full. */
function spool(line: string, answer: HookAnswer): boolean {
  mkdirSync(statePath("spool"), { recursive: true, mode: 0o700 });
  const path = statePath("spool", "events.jsonl");
  const fd = openSync(path, "a+", 0o600);
  try {
    if (countLines(fd) >= SPOOL_LIMIT) {
      bumpDropped();
      return false;
    }
    const request = JSON.parse(line) as Record<string, unknown>;
    const record = `${JSON.stringify({ ...request, spooled_ms: Date.now(), answer })}\n`;
    writeSync(fd, record);
    fsyncSync(fd);
    // The recorder may have taken the spool (renamed it to replay it) between our open and our
    // write, and the line would go with the replayed file. Write it again to the new spool: the
    // event id makes the second copy harmless.
    if (!sameFile(fd, path)) {
      const again = openSync(path, "a", 0o600);
      try {
        writeSync(again, record);
        fsyncSync(again);
      } finally {
        closeSync(again);
      }
    }
    return true;
  } finally {
    closeSync(fd);
  }
}

function sameFile(fd: number, path: string): boolean {
  try {
    const open = fstatSync(fd);
    const named = statSync(path);
    return open.ino === named.ino && open.dev === named.dev;
  } catch {
    return false;
  }
}

function countLines(fd: number): number {
  const text = readFileSync(fd);
  let n = 0;
  for (let i = text.indexOf(10); i !== -1; i = text.indexOf(10, i + 1)) n++;
  return n;
}

function bumpDropped(): void {
  let count = 0;
  try {
    count = Number.parseInt(readFileSync(statePath("spool", "dropped"), "utf8"), 10) || 0;
  } catch {}
  writeStateFile("spool/dropped", `${count + 1}\n`);
}
