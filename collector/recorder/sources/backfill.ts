import type { Policy } from "../../../protocol/index.ts";
import { bodyFields, makeBody, type Body } from "../bodies.ts";
import { deriveFrames } from "../derive.ts";
import type { Step } from "../mapper.ts";
import { ClaudeTranscript } from "./claude.ts";
import { obj, parseObject, str, timeOf } from "./lines.ts";

/** A step with its time, as a rebuilt run holds it. */
export type TimedStep = Step & { t: number };

/**
 * Rebuilds a finished Claude Code session from its transcript, line by line. Pure: the command
 * feeds lines and writes the steps. Every payload is path `backfill` and `backfilled: true`; the
 * transcript holds no policy decisions, approvals or worktree, and thinking never leaves it.
 */
export class Backfill {
  readonly steps: TimedStep[] = [];
  sessionId: string | null = null;
  bad = 0;
  readonly #usage = new ClaudeTranscript();
  readonly #retention: Policy["retention"] | null;
  readonly #tools = new Map<string, { name: string; input: unknown }>();
  #started = false;
  #inTurn = false;
  #lastText: string | null = null;
  #t = 0;

  constructor(retention: Policy["retention"] | null) {
    this.#retention = retention;
  }

  #push(kind: Step["kind"], payload: Record<string, unknown>, bodies: Body[] = []): void {
    this.steps.push({ kind, payload: { ...payload, path: "backfill", backfilled: true, ...bodyFields(bodies) }, bodies, t: this.#t });
  }

  line(text: string): void {
    const o = parseObject(text);
    if (!o) {
      this.bad++;
      return;
    }
    this.#t = Math.max(this.#t, timeOf(o, this.#t));
    for (const c of this.#usage.line(text, this.#t)) this.#push("llm_call", { ...c.payload });
    const sid = str(o.sessionId);
    if (!this.#started && sid && (o.type === "user" || o.type === "assistant")) this.#start(o, sid);
    if (!this.#started || o.isSidechain === true) return;
    const message = obj(o.message);
    const content = message?.content;
    if (o.type === "user" && o.isMeta !== true) this.#user(content, o);
    if (o.type === "assistant" && Array.isArray(content)) {
      for (const b of content.map(obj)) {
        if (b?.type === "text" && typeof b.text === "string") this.#lastText = b.text;
        if (b?.type !== "tool_use") continue;
        const id = str(b.id);
        const name = str(b.name) ?? "unknown";
        const input = makeBody("tool_input", b.input ?? null, this.#retention);
        if (id) this.#tools.set(id, { name, input: b.input ?? null });
        this.#push("tool_requested", { tool_name: name, ...(id ? { tool_use_id: id } : {}), input: input.digest }, [input]);
      }
    }
  }

  #start(o: Record<string, unknown>, sid: string): void {
    this.#started = true;
    this.sessionId = sid;
    const cwd = typeof o.cwd === "string" && o.cwd.length <= 4096 ? o.cwd : undefined;
    this.#push("agent_start", { harness: "claude-code", session_id: sid.slice(0, 256), ...(cwd ? { cwd } : {}), source: "backfill" });
    this.#push("telemetry_gap", {
      cause: "rebuilt",
      detail:
        "rebuilt from the Claude Code transcript by oxagen agent backfill after the session ended: no hook saw it live, so it holds no policy decisions, approvals, permission refusals or worktree changes",
    });
  }

  #user(content: unknown, o: Record<string, unknown>): void {
    const blocks = Array.isArray(content) ? content.map(obj) : [];
    const results = blocks.filter((b) => b?.type === "tool_result");
    for (const r of results) {
      const id = str(r!.tool_use_id);
      const call = id ? this.#tools.get(id) : undefined;
      const name = call?.name ?? "unknown";
      const input = makeBody("tool_input", call?.input ?? null, this.#retention);
      const output = makeBody(r!.is_error === true ? "error" : "tool_output", r!.content ?? null, this.#retention);
      this.#push(
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
      for (const d of deriveFrames(name, call?.input ?? null, id)) this.#push(d.kind, d.payload);
    }
    if (results.length) return;
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
    this.#push("turn_start", { prompt: body.digest, ...(str(o.promptId) ? { turn_id: str(o.promptId) } : {}) }, [body]);
    this.#inTurn = true;
  }

  #endTurn(): void {
    if (!this.#inTurn) return;
    for (const c of this.#usage.flush()) this.#push("llm_call", { ...c.payload });
    const body = this.#lastText !== null ? makeBody("message", this.#lastText, this.#retention) : null;
    this.#push("turn_end", body ? { message: body.digest } : {}, body ? [body] : []);
    this.#inTurn = false;
    this.#lastText = null;
  }

  /** The end of the transcript: the last turn's end, and the session's. */
  finish(): void {
    if (!this.#started) return;
    this.#endTurn();
    for (const c of this.#usage.flush()) this.#push("llm_call", { ...c.payload });
    if (this.bad)
      this.#push("telemetry_gap", {
        cause: "log_unreadable",
        detail: `${this.bad} transcript line(s) were not valid JSON and were skipped`,
      });
    this.#push("agent_stop", { reason: "backfill", outcome: "completed" });
  }
}
