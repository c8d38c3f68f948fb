import type { HostConfig } from "../lib/state.ts";
import { bodySize } from "./bodies.ts";
import type { Journal, RunInfo } from "./journal/index.ts";
import { namedRun } from "./mapper.ts";
import type { HookRequest } from "./request.ts";

/** A session's current run: its chain and run meta, and the run it follows when its id was reused. */
export interface CurrentRun {
  chain: string;
  run: RunInfo;
  /** The ended run this one follows (the session id came back after that run's final lock). */
  follows: string | null;
}

/**
 * Which run a (canonical) event belongs to. A chain with a final lock takes no frame, so a
 * session id that comes back after its run ended (a custom agent reusing its id, a resumed
 * session, a late or replayed step) starts a new run, recorded as session `<id>#2`, `#3`, …
 * (docs/collector.md, "Sessions and runs").
 */
export function currentRun(journal: Journal, host: HostConfig, req: HookRequest): CurrentRun | null {
  const base = namedRun(req, host.host_id);
  if (!base) return null;
  let s = base;
  let follows: string | null = null;
  for (let n = 2; journal.chains.get(s.chain)?.writer.state.final; n++) {
    follows = s.chain;
    s = namedRun({ ...req, event: { ...req.event, session_id: nthRun(base.run.session_id, n) } }, host.host_id)!;
  }
  return { ...s, follows };
}

/** The session id the n-th run of a reused session id is recorded under (at most 256 characters). */
export function nthRun(sessionId: string, n: number): string {
  const suffix = `#${n}`;
  return `${sessionId.slice(0, 256 - suffix.length)}${suffix}`;
}

/** The request as the mapper sees it: its event names the run's session id. */
export function inRun(req: HookRequest, run: CurrentRun | null): HookRequest {
  if (!run || run.run.session_id === req.event.session_id) return req;
  return { ...req, event: { ...req.event, session_id: run.run.session_id } };
}

const REMEMBERED = 256;
const REMEMBERED_BYTES = 256 * 1024;

/**
 * Tool inputs of PreToolUse events, by chain and tool_use_id, for a PostToolUse that reports none
 * (the spec's own example sends none). Bounded: the oldest are forgotten; a large input is not kept.
 */
export class ToolInputs {
  readonly #inputs = new Map<string, unknown>();

  /** Remembers a PreToolUse's input; gives a PostToolUse without one the input its PreToolUse named. */
  fill(chain: string, req: HookRequest): HookRequest {
    const e = req.event;
    const id = typeof e.tool_use_id === "string" && e.tool_use_id.length > 0 ? `${chain}\0${e.tool_use_id}` : null;
    if (!id) return req;
    if (e.hook_event_name === "PreToolUse") {
      if (e.tool_input !== undefined && bodySize(e.tool_input) <= REMEMBERED_BYTES) {
        this.#inputs.set(id, e.tool_input);
        if (this.#inputs.size > REMEMBERED) this.#inputs.delete(this.#inputs.keys().next().value!);
      }
      return req;
    }
    if (e.hook_event_name !== "PostToolUse" && e.hook_event_name !== "PostToolUseFailure") return req;
    const input = this.#inputs.get(id);
    this.#inputs.delete(id);
    return e.tool_input === undefined && input !== undefined ? { ...req, event: { ...e, tool_input: input } } : req;
  }
}
