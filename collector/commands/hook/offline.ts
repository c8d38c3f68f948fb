import { statSync, writeFileSync } from "node:fs";
import { answerOf, askBecomes, type HookAnswer, neutralAnswer, normalizeEvent } from "../../harnesses/events.ts";
import { useNodeCrypto } from "../../lib/node-crypto.ts";
import { spawnRecorder } from "../../lib/recorder-process.ts";
import { HostConfig, statePath } from "../../lib/state.ts";
import { decideEvent, type DecisionRecord, type Told, toldOf } from "../../recorder/decide.ts";
import { namedRun } from "../../recorder/mapper.ts";
import { readPolicyFile } from "../../recorder/policy-cache.ts";
import { appendSpool, SPOOL_LIMIT } from "../../recorder/spool.ts";

export { SPOOL_LIMIT };

export interface OfflineContext {
  host: unknown;
  request: {
    id: string;
    t: number;
    harness: string | null;
    agent: string | null;
    event: Record<string, unknown>;
    pid?: number;
    pid_start?: string;
  };
  line: string;
  eventName: string;
  /** Why the recorder gave no answer: `down`, `timeout`, `failed`, `untrusted`. */
  why?: string;
  /** A problem the user should hear of (printed as systemMessage where the harness shows one). */
  notice?: string;
}

/**
 * The answer when the recorder is unreachable: decided from the cached signed policy by the rule
 * the recorder uses (recorder/decide.ts), marked client_attested, and spooled with the decision
 * for the recorder to record. Never throws.
 */
export async function offlineAnswer(raw: OfflineContext): Promise<HookAnswer> {
  const { harness, event: payload } = raw.request;
  const wrapped = Array.isArray((raw.host as { harnesses?: unknown }).harnesses) ? (raw.host as { harnesses: string[] }).harnesses : [];
  const n = normalizeEvent(harness, payload, { wrapped, pid: raw.request.pid, pidStart: raw.request.pid_start });
  if (!("event" in n)) return neutralAnswer(harness, payload);
  let record: DecisionRecord | null = null;
  let told: Told;
  try {
    useNodeCrypto();
    const host = HostConfig.parse(raw.host);
    const session = namedRun({ ...raw.request, source: "command", event: n.event }, host.host_id);
    record = decideEvent(n.event, session?.chain ?? null, {
      hostId: host.host_id,
      policy: readPolicyFile(host),
      ask: askBecomes(harness),
      agent: session?.run.harness ?? null,
    });
    told = toldOf(record);
  } catch (err) {
    told = { decision: "deny", reason: `Oxagen cannot decide while the recorder is unreachable: ${(err as Error).message}` };
  }
  const tier = "client_attested" as const;
  let notice = raw.notice;
  try {
    const request = JSON.parse(raw.line) as Record<string, unknown>;
    // The spooled answer is the canonical one (a custom agent's shape), as the recorder reads it back.
    const answer = answerOf(null, n.event, told.decision, told.reason, { tier });
    const line = { ...request, spooled_ms: Date.now(), answer, ...(record ? { verdict: record } : {}), why: raw.why };
    if (!appendSpool(statePath("spool"), line)) notice = "the Oxagen spool is full; this step was not recorded";
  } catch (err) {
    notice = `this step could not be spooled (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`;
  }
  return answerOf(harness, n.event, told.decision, told.reason, { tier, ...(notice ? { notice } : {}) });
}

/** How often a hook that finds the recorder down may start it. */
const START_EVERY_MS = 60_000;

/**
 * Starts the recorder, detached, unless a hook did so within the last minute (the stamp file's
 * time). A second recorder started meanwhile finds the first one's socket and exits.
 */
export function startRecorderSoon(now = Date.now()): boolean {
  const stamp = statePath("recorder-autostart");
  try {
    if (now - statSync(stamp).mtimeMs < START_EVERY_MS) return false;
  } catch {
    // Never started by a hook.
  }
  writeFileSync(stamp, `${now}\n`, { mode: 0o600 });
  spawnRecorder();
  return true;
}
