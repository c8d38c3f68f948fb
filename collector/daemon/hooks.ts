import { randomUUID } from "node:crypto";
import { hostNow, type HostConfig } from "../lib/state.ts";
import type { HookRequest } from "../recorder/request.ts";
import type { Recorder } from "../recorder/recorder.ts";
import { parseRequest } from "../recorder/request.ts";
import { appendSpool } from "../recorder/spool.ts";

/** The answer to one line of `tacho hook` on the recorder's socket (docs/collector.md, "The hook wire"). */
export function lineAnswer(recorder: Recorder | null, request: unknown): unknown {
  if (!recorder) return { v: 1, error: "the recorder is starting" };
  const req = parseRequest(request);
  if (!req) return { v: 1, answer: {}, error: "not a hook request (see docs/collector.md)" };
  return { v: 1, answer: recorder.handle(req) };
}

/**
 * One HTTP hook. When it cannot be recorded it is spooled (replayed later, given up as a gap
 * only after several attempts) and the error goes on to the listener, which answers 500.
 */
export function httpHook(recorder: Recorder, spoolDir: string, label: string, payload: unknown): Record<string, unknown> {
  if (payload === null || typeof payload !== "object" || Array.isArray(payload)) return {};
  const req: HookRequest = {
    id: `h-${randomUUID()}`,
    t: Date.now(),
    source: "http",
    harness: label,
    agent: null,
    event: payload as Record<string, unknown>,
  };
  try {
    return recorder.handle(req);
  } catch (err) {
    appendSpool(spoolDir, { ...req, v: 1, spooled_ms: Date.now() });
    throw err;
  }
}

/**
 * The enrollment's hook secret as host.json holds it (a re-enroll adds one to an older enrollment);
 * `now` reads it again at once (lib/loopback.ts `carriesSecret`: a secret that does not match).
 */
export function hookSecret(host: HostConfig): (now?: boolean) => string | null {
  return (now) => hostNow(now)?.hook_secret ?? host.hook_secret ?? null;
}
