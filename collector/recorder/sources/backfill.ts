import type { Policy } from "../../../protocol/index.ts";
import { bodyFields, makeBody, type Body } from "../bodies.ts";
import { deriveFrames } from "../derive.ts";
import type { Step } from "../mapper.ts";
import { ClaudeTranscript, type UsageCall } from "./claude.ts";
import { obj, parseObject, str } from "../../lib/json.ts";
import { timeOf } from "./lines.ts";

/** A step with its time, as a rebuilt run holds it. */
export type TimedStep = Step & { t: number };

/** Who a subagent transcript belongs to: its agent id (`acompact-…` for a compaction call) and type. */
export interface SubagentInfo {
  agentId?: string;
  agentType?: string;
}

/** A rebuilt step; a model call also carries its response's key, so a copy in another file is dropped. */
type Rebuilt = TimedStep & { key?: string };

/** One transcript being read: its usage reader, its clock, its tool calls awaiting their results. */
class Feed {
  t = 0;
  readonly usage = new ClaudeTranscript();
  readonly tools = new Map<string, { name: string; input: unknown }>();
  readonly steps: Rebuilt[] = [];

  push(kind: Step["kind"], payload: Record<string, unknown>, bodies: Body[] = [], t = this.t): void {
    this.steps.push({ kind, payload: { ...payload, path: "backfill", backfilled: true, ...bodyFields(bodies) }, bodies, t });
  }

  calls(calls: UsageCall[], t?: number): void {
    for (const c of calls) this.steps.push({ ...this.#llm(c), t: t ?? c.t, key: c.key });
  }

  #llm(c: UsageCall): Step {
    return { kind: "llm_call", payload: { ...c.payload, path: "backfill", backfilled: true }, bodies: [] };
  }
}

/**
 * Rebuilds a finished Claude Code session from its transcript and its subagents' transcripts
 * (compaction calls included), line by line. Pure: the command feeds lines and writes the steps.
 * Every payload is path `backfill` and `backfilled: true`; the transcripts hold no policy
 * decisions, approvals or worktree, and thinking never leaves them. A response found in more than
 * one file (a compaction's file replays the conversation it summarizes) is recorded once, from the
 * session's own transcript when it holds it.
 */
export class Backfill {
  sessionId: string | null = null;
  bad = 0;
  readonly #retention: Policy["retention"] | null;
  readonly #main = new Feed();
  readonly #subs: Rebuilt[] = [];
  #started = false;
  #inTurn = false;
  #lastText: string | null = null;
  #steps: TimedStep[] | null = null;

  constructor(retention: Policy["retention"] | null) {
    this.#retention = retention;
  }

  /** The rebuilt run, in order (complete once `finish` ran). */
  get steps(): TimedStep[] {
    return this.#steps ?? this.#main.steps;
  }

  /** One line of the session's own transcript. */
  line(text: string): void {
    const o = this.#parse(text, this.#main);
    if (!o) return;
    const sid = str(o.sessionId);
    if (!this.#started && sid && (o.type === "user" || o.type === "assistant")) this.#start(o, sid);
    if (!this.#started || o.isSidechain === true) return;
    const content = obj(o.message)?.content;
    if (o.type === "user" && o.isMeta !== true) this.#user(this.#main, content, o);
    if (o.type === "assistant") this.#assistant(this.#main, content);
  }

  /**
   * Reads one subagent transcript: its model calls, and, for a real subagent (not a compaction,
   * whose file replays the conversation it summarizes), the tool calls it made between a
   * subagent_start and a subagent_stop. Placed in the run by time when the run is finished.
   */
  subagent(lines: Iterable<string>, info: SubagentInfo = {}): void {
    const feed = new Feed();
    const compaction = info.agentId?.startsWith("acompact") === true;
    let first: number | null = null;
    for (const text of lines) {
      const o = this.#parse(text, feed);
      if (!o || compaction) continue;
      first ??= feed.t;
      const content = obj(o.message)?.content;
      if (o.type === "user") this.#user(feed, content, o);
      if (o.type === "assistant") this.#assistant(feed, content);
    }
    feed.calls(feed.usage.flush());
    if (first !== null) {
      const agent = {
        ...(info.agentId ? { agent_id: info.agentId.slice(0, 256) } : {}),
        ...(info.agentType ? { agent_type: info.agentType.slice(0, 256) } : {}),
      };
      feed.push("subagent_start", agent, [], first);
      feed.push("subagent_stop", agent, [], feed.t);
      // The start goes first among steps of its time, the stop last.
      feed.steps.unshift(feed.steps.splice(-2, 1)[0]!);
    }
    this.#subs.push(...feed.steps);
  }

  #parse(text: string, feed: Feed): Record<string, unknown> | null {
    const o = parseObject(text);
    if (!o) {
      this.bad++;
      return null;
    }
    feed.t = Math.max(feed.t, timeOf(o, feed.t));
    // The session's calls sit where the transcript made them final; a subagent's at their own time.
    feed.calls(feed.usage.line(text, feed.t), feed === this.#main ? feed.t : undefined);
    return o;
  }

  #assistant(feed: Feed, content: unknown): void {
    if (!Array.isArray(content)) return;
    for (const b of content.map(obj)) {
      if (feed === this.#main && b?.type === "text" && typeof b.text === "string") this.#lastText = b.text;
      if (b?.type !== "tool_use") continue;
      const id = str(b.id);
      const name = str(b.name) ?? "unknown";
      const input = makeBody("tool_input", b.input ?? null, this.#retention);
      if (id) feed.tools.set(id, { name, input: b.input ?? null });
      feed.push("tool_requested", { tool_name: name, ...(id ? { tool_use_id: id } : {}), input: input.digest }, [input]);
    }
  }

  #start(o: Record<string, unknown>, sid: string): void {
    this.#started = true;
    this.sessionId = sid;
    const cwd = typeof o.cwd === "string" && o.cwd.length <= 4096 ? o.cwd : undefined;
    this.#main.push("agent_start", { harness: "claude-code", session_id: sid.slice(0, 256), ...(cwd ? { cwd } : {}), source: "backfill" });
    this.#main.push("telemetry_gap", {
      cause: "rebuilt",
      detail:
        "rebuilt from the Claude Code transcript by oxagen agent backfill after the session ended: no hook saw it live, so it holds no policy decisions, approvals, permission refusals or worktree changes",
    });
  }

  #user(feed: Feed, content: unknown, o: Record<string, unknown>): void {
    const blocks = Array.isArray(content) ? content.map(obj) : [];
    const results = blocks.filter((b) => b?.type === "tool_result");
    for (const r of results) {
      const id = str(r!.tool_use_id);
      const call = id ? feed.tools.get(id) : undefined;
      const name = call?.name ?? "unknown";
      const input = makeBody("tool_input", call?.input ?? null, this.#retention);
      const output = makeBody(r!.is_error === true ? "error" : "tool_output", r!.content ?? null, this.#retention);
      feed.push(
        "tool_call",
        {
          tool_name: name,
          ...(id ? { tool_use_id: id } : {}),
          status: r!.is_error === true ? "error" : "ok",
          input: input.digest,
          output: output.digest,
        },
        [input, output],
      );
      for (const d of deriveFrames(name, call?.input ?? null, id)) feed.push(d.kind, d.payload);
    }
    if (results.length || feed !== this.#main) return;
    const prompt =
      typeof content === "string"
        ? content
        : blocks
            .filter((b) => b?.type === "text")
            .map((b) => String(b!.text ?? ""))
            .join("\n");
    if (!prompt && !blocks.length) return;
    this.#endTurn();
    const body = makeBody("prompt", prompt, this.#retention);
    feed.push("turn_start", { prompt: body.digest, ...(str(o.promptId) ? { turn_id: str(o.promptId) } : {}) }, [body]);
    this.#inTurn = true;
  }

  #endTurn(): void {
    if (!this.#inTurn) return;
    this.#main.calls(this.#main.usage.flush(), this.#main.t);
    const body = this.#lastText !== null ? makeBody("message", this.#lastText, this.#retention) : null;
    this.#main.push("turn_end", body ? { message: body.digest } : {}, body ? [body] : []);
    this.#inTurn = false;
    this.#lastText = null;
  }

  /** The end of the transcripts: the last turn's end, the subagents placed by time, the session's end. */
  finish(): void {
    if (!this.#started || this.#steps) return;
    this.#endTurn();
    this.#main.calls(this.#main.usage.flush(), this.#main.t);
    const seen = new Set(this.#main.steps.flatMap((s) => (s.key ? [s.key] : [])));
    const subs = this.#subs.filter((s) => !s.key || (!seen.has(s.key) && seen.add(s.key)));
    const end = new Feed();
    const steps = mergeByTime(this.#main.steps, subs);
    end.t = steps.at(-1)?.t ?? 0;
    if (this.bad)
      end.push("telemetry_gap", {
        cause: "log_unreadable",
        detail: `${this.bad} transcript line(s) were not valid JSON and were skipped`,
      });
    end.push("agent_stop", { reason: "backfill", outcome: "completed" });
    this.#steps = [...steps, ...end.steps].map(({ key: _key, ...s }) => s);
  }
}

/**
 * The session's steps with the subagents' steps placed by time: each before the first session
 * step that is later, never before the session's start (its first two steps). The session's
 * steps keep their order; the subagents' are ordered by time, ties in the order they were read.
 */
function mergeByTime(main: Rebuilt[], extra: Rebuilt[]): Rebuilt[] {
  const sorted = extra.map((s, i) => ({ s, i })).sort((a, b) => a.s.t - b.s.t || a.i - b.i);
  const out = main.slice(0, 2);
  let j = 0;
  for (const m of main.slice(2)) {
    while (j < sorted.length && sorted[j]!.s.t < m.t) out.push(sorted[j++]!.s);
    out.push(m);
  }
  while (j < sorted.length) out.push(sorted[j++]!.s);
  return out;
}
