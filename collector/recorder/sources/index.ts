import { existsSync, readFileSync } from "node:fs";
import { basename, join } from "node:path";
import { type Payload, runIdFor, sha256Hex } from "../../../protocol/index.ts";
import { callKey, MATCHED, unmatchedCarried } from "../carried.ts";
import type { ChainRecord, RunInfo } from "../journal/index.ts";
import { namedRun, type Step } from "../mapper.ts";
import type { HookRequest } from "../request.ts";
import type { Recorder } from "../recorder.ts";
import { ClaudeTranscript, type ClaudeState } from "./claude.ts";
import { CodexRollout, type CodexState } from "./codex.ts";
import { codexToolSteps } from "./codex-tools.ts";
import { StellaJournal } from "./stella.ts";
import { activeStellaJournal, findRollout, readFrom, stellaDataDir, SubagentFinder } from "./tail.ts";
import { Worktrees, type TreeState } from "./worktrees.ts";
import { Hookless } from "./hookless.ts";

type Kind = "claude" | "codex" | "stella";

/** One log file being followed for one session. */
interface Watched {
  kind: Kind;
  chain: string;
  run: RunInfo;
  path: string;
  offset: number;
  /** When the file last grew (or was first seen). */
  grown: number;
  state: ClaudeState | CodexState | null;
  /** A log_unreadable gap was already written for this file. */
  gapped: boolean;
}

interface Persisted {
  v: 1;
  files: Watched[];
  hooked: Record<string, string[]>;
  trees: Record<string, TreeState>;
  hookless: string[];
}

export interface SourcesOptions {
  /** Reads and writes sources.json in the state directory. */
  load: () => string | null;
  save: (text: string) => void;
  /** A Claude transcript quiet this long has its open responses recorded (default 30 s). */
  quietMs?: number;
  /** Worktree reconciliations at most this often per session (default 15 s). */
  worktreeMs?: number;
  now?: () => number;
}

type Parser = ClaudeTranscript | CodexRollout | StellaJournal;

const id = (prefix: string, ...parts: string[]) => `${prefix}-${sha256Hex(parts.join("\0")).slice(0, 40)}`;

/**
 * The recorder's second sources: usage logs (Claude transcripts, Codex rollouts, Stella journals)
 * followed by byte offset, and the session's git worktree. Offsets and parser states live in
 * sources.json; every frame carries a stable id the journal remembers, so a restart between a
 * commit and the next save re-reads a few lines but records nothing twice.
 */
export class Sources {
  readonly #rec: Recorder;
  readonly #opts: SourcesOptions;
  readonly #files = new Map<string, Watched>();
  readonly #stellaSince = new Map<string, number>();
  readonly #parsers = new Map<string, Parser>();
  readonly #hooked = new Map<string, Set<string>>();
  readonly #subagents = new SubagentFinder();
  readonly trees: Worktrees;
  readonly hookless: Hookless;
  #dirty = false;

  constructor(recorder: Recorder, opts: SourcesOptions) {
    this.#rec = recorder;
    this.#opts = opts;
    let saved: Persisted | null = null;
    try {
      saved = JSON.parse(opts.load() ?? "null") as Persisted | null;
    } catch (err) {
      recorder.log(`sources.json unreadable (${(err as Error).message}); usage logs are followed from their current ends' saved ids`);
    }
    for (const f of saved?.files ?? []) this.#files.set(`${f.chain}\0${f.path}`, f);
    for (const [chain, ids] of Object.entries(saved?.hooked ?? {})) this.#hooked.set(chain, new Set(ids));
    this.trees = new Worktrees(recorder, saved?.trees ?? {}, opts.worktreeMs ?? 15_000, () => this.#changed());
    this.hookless = new Hookless(recorder, saved?.hookless ?? [], () => this.#changed());
  }

  #now(): number {
    return this.#opts.now?.() ?? Date.now();
  }

  #changed(): void {
    this.#dirty = true;
  }

  /** Before an event is recorded: a turn's or a session's end first records the usage read so far. */
  before(req: HookRequest): void {
    this.#guard(() => {
      const e = req.event.hook_event_name;
      if (e !== "Stop" && e !== "SubagentStop" && e !== "SessionEnd") return;
      const s = namedRun(req, this.#rec.host.host_id);
      if (!s) return;
      this.#watch(req, s.chain, s.run);
      this.#discover(s.chain);
      this.#readChain(s.chain, true, e === "SessionEnd");
      if (e === "SessionEnd") this.trees.reconcile(s.chain, true);
    });
  }

  /** After an event is recorded: learn the session's log files, cwd and hooked tool calls. */
  after(req: HookRequest): void {
    this.#guard(() => {
      const s = namedRun(req, this.#rec.host.host_id);
      if (!s) return;
      this.#watch(req, s.chain, s.run);
      const e = req.event;
      if (typeof e.cwd === "string") this.trees.note(s.chain, e.cwd);
      // Only a Codex rollout's tool calls are checked against the hooked ones ({@link #readFile}): another
      // harness's tool hook changes nothing here, so sources.json is not rewritten on its path.
      const tool = s.run.harness === "codex" && typeof e.tool_use_id === "string" ? e.tool_use_id : null;
      if (
        tool &&
        (e.hook_event_name === "PostToolUse" || e.hook_event_name === "PostToolUseFailure" || e.hook_event_name === "PreToolUse")
      ) {
        const set = this.#hooked.get(s.chain) ?? new Set();
        if (!set.has(tool)) {
          set.add(tool);
          this.#hooked.set(s.chain, set);
          this.#changed();
        }
      }
      if (e.hook_event_name === "Stop") this.trees.due(s.chain);
      this.save();
    });
  }

  /** Follows a log file for a session (also for adapters that learn a session's log another way). */
  follow(kind: Kind, chain: string, run: RunInfo, path: string): void {
    const key = `${chain}\0${path}`;
    if (this.#files.has(key)) return;
    this.#files.set(key, { kind, chain, run, path, offset: 0, grown: this.#now(), state: null, gapped: false });
    this.#changed();
  }

  /** A session is ending without its harness saying so (process gone, quiet): record what its logs hold first. */
  ending(chain: string): void {
    this.#guard(() => {
      this.#discover(chain);
      this.#readChain(chain, true, true);
      this.trees.reconcile(chain, true);
    });
  }

  /** Reads every followed file; records responses of quiet transcripts; runs due reconciliations. */
  tick(): void {
    this.#guard(() => {
      for (const rec of this.#rec.running()) {
        // Stella's hooks carry no log path or Stella session id: its journal is found by the session
        // id when they agree, else as the journal that started with this session.
        if (rec.run?.harness !== "stella" || [...this.#files.values()].some((f) => f.chain === rec.chain)) continue;
        if (!this.#stellaSince.has(rec.chain)) this.#stellaSince.set(rec.chain, this.#now());
        const byId = join(stellaDataDir(), "sessions", rec.run.session_id, "journal.jsonl");
        const taken = new Set([...this.#files.values()].map((f) => f.path));
        const path = existsSync(byId) ? byId : activeStellaJournal(this.#stellaSince.get(rec.chain)! - 5_000, taken);
        if (path) this.follow("stella", rec.chain, rec.run, path);
      }
      const chains = new Set([...this.#files.values()].map((f) => f.chain));
      for (const chain of chains) {
        this.#discover(chain);
        this.#readChain(chain, false, false);
      }
      this.trees.tick(this.#now());
      this.save();
    });
  }

  /** Looks for Claude Code sessions running without hooks (transcripts changed since `since`). */
  scanHookless(since: number, dir?: string): string[] {
    let out: string[] = [];
    this.#guard(() => {
      out = this.hookless.scan(since, this.#now(), dir);
      this.save();
    });
    return out;
  }

  save(): void {
    if (!this.#dirty) return;
    const files = [...this.#files.values()].map((f) => ({
      ...f,
      state:
        this.#parsers.get(`${f.chain}\0${f.path}`) instanceof StellaJournal
          ? null
          : ((this.#parsers.get(`${f.chain}\0${f.path}`) as ClaudeTranscript | CodexRollout | undefined)?.state ?? f.state),
    }));
    const persisted: Persisted = {
      v: 1,
      files,
      hooked: Object.fromEntries([...this.#hooked].map(([k, v]) => [k, [...v].slice(-5000)])),
      trees: this.trees.state,
      hookless: this.hookless.state,
    };
    this.#opts.save(`${JSON.stringify(persisted)}\n`);
    this.#dirty = false;
  }

  #guard(fn: () => void): void {
    try {
      fn();
    } catch (err) {
      this.#rec.log(`usage/worktree sources: ${(err as Error).stack ?? String(err)}`);
    }
  }

  #watch(req: HookRequest, chain: string, run: RunInfo): void {
    const e = req.event;
    const path = typeof e.transcript_path === "string" && e.transcript_path ? e.transcript_path : null;
    if (run.harness === "claude-code" && path) {
      this.follow("claude", chain, run, path);
    } else if (run.harness === "codex") {
      const rollout = path ?? ([...this.#files.values()].some((f) => f.chain === chain) ? null : findRollout(run.session_id, this.#now()));
      if (rollout) this.follow("codex", chain, run, rollout);
    }
  }

  /**
   * Follows the subagent transcripts of a session's Claude Code transcripts (both layouts, compaction
   * calls included). Lists directories, so it runs on a tick and at a turn's or session's end, never
   * on every hook.
   */
  #discover(chain: string): void {
    const mains = [...this.#files.values()].filter(
      (f) => f.chain === chain && f.kind === "claude" && !basename(f.path).startsWith("agent-"),
    );
    for (const f of mains) for (const sub of this.#subagents.find(f.path)) this.follow("claude", chain, f.run, sub);
  }

  #parser(f: Watched): Parser {
    const key = `${f.chain}\0${f.path}`;
    let p = this.#parsers.get(key);
    if (!p) {
      p =
        f.kind === "claude"
          ? new ClaudeTranscript((f.state as ClaudeState | undefined) ?? undefined)
          : f.kind === "codex"
            ? new CodexRollout((f.state as CodexState | undefined) ?? undefined)
            : new StellaJournal();
      this.#parsers.set(key, p);
    }
    return p;
  }

  /** Reads one session's files; `flush` records open responses; `last` treats a dangling partial line as unreadable. */
  #readChain(chain: string, flush: boolean, last: boolean): void {
    const rec = this.#rec.journal.chains.get(chain);
    for (const [key, f] of this.#files) {
      if (f.chain !== chain) continue;
      if (!rec || rec.writer.state.final) {
        this.#files.delete(key);
        this.#parsers.delete(key);
        this.#changed();
        continue;
      }
      this.#readFile(rec, f, flush, last);
    }
  }

  #readFile(rec: ChainRecord, f: Watched, flush: boolean, last: boolean): void {
    const now = this.#now();
    const r = readFrom(f.path, f.offset);
    if (r.error && r.lines.length === 0) {
      if (!f.gapped && (last || !r.error.includes("ENOENT")))
        this.#unreadable(rec, f, `${f.kind} log ${basename(f.path)} cannot be read: ${r.error}`);
      return;
    }
    if (r.shrunk)
      this.#rec.log(
        `${f.path} is shorter than what was read; reading it again from the start (responses already recorded are not recorded twice)`,
      );
    const parser = this.#parser(f);
    const badBefore = parser.bad;
    for (const line of r.lines) {
      const t = now;
      if (parser instanceof ClaudeTranscript)
        for (const c of parser.line(line.text, t)) this.#usage(rec, c.payload, c.t, id("tx", rec.chain, c.key));
      else if (parser instanceof CodexRollout) {
        for (const o of parser.line(line.text, t)) {
          if ("usage" in o) {
            // Cumulative totals identify a call within its own session only: two sessions can reach the
            // same totals. A fork's replay of its parent's history is checked against the parent's run.
            const parent = parser.parent && runIdFor(this.#rec.host.host_id, "codex", parser.parent);
            if (parent && this.#rec.journal.has(id("cx", parent, o.usage.identity))) continue;
            this.#usage(rec, o.usage.payload, o.usage.t, id("cx", rec.chain, o.usage.identity));
          } else if (!this.#hooked.get(rec.chain)?.has(o.tool.call_id))
            this.#commit(
              rec,
              codexToolSteps(o.tool, this.#rec.policy?.policy.retention ?? null),
              o.tool.t,
              id("ct", rec.chain, o.tool.call_id),
            );
        }
      } else for (const c of parser.line(line.text, t)) this.#usage(rec, c.payload, c.t, id("st", rec.chain, f.path, String(line.at)));
      if (parser.bad > badBefore && !f.gapped)
        this.#unreadable(
          rec,
          f,
          `a line of ${f.kind} log ${basename(f.path)} at byte ${line.at} is not valid JSON; it was skipped, the lines after it were read`,
        );
    }
    if (r.offset !== f.offset || r.lines.length) {
      f.offset = r.offset;
      f.grown = now;
      this.#changed();
    }
    if (last && r.tail > 0 && !f.gapped)
      this.#unreadable(
        rec,
        f,
        `${f.kind} log ${basename(f.path)} ends in a truncated line (${r.tail} bytes at byte ${r.offset}); it was not read`,
      );
    const quiet = now - f.grown >= (this.#opts.quietMs ?? 30_000);
    if ((flush || quiet) && parser instanceof ClaudeTranscript) {
      // A quiet file records only responses whose final line has arrived: one still streaming
      // (a long pause between its blocks) keeps counting its later lines.
      for (const c of parser.flush(!flush)) this.#usage(rec, c.payload, c.t, id("tx", rec.chain, c.key));
    }
  }

  /**
   * A model call a usage log shows, unless the gateway carried it: its frame, recorded when the
   * response ended (before the harness could write the log), is the call's record (one count).
   * Only the same call counts once: one the gateway carried on this chain, with the same message
   * id, model and usage, and not matched to another report yet; anything else is recorded
   * (docs/collector.md, "Counted once"). A match is kept in the journal, so a log read again after
   * a restart matches nothing twice.
   */
  #usage(rec: ChainRecord, payload: Payload<"llm_call">, t: number, key: string): void {
    const has = (id: string) => this.#rec.journal.has(id);
    if (has(key)) return;
    const carried = payload.message_id
      ? unmatchedCarried(
          has,
          callKey(rec.chain, { vendor: payload.vendor, messageId: payload.message_id, model: payload.model, usage: payload.usage }),
        )
      : null;
    if (carried) {
      this.#rec.journal.mark(rec, [key, `${carried}${MATCHED}`]);
      this.#changed();
      return;
    }
    this.#commit(rec, [{ kind: "llm_call", payload, bodies: [] }], t, key);
  }

  #commit(rec: ChainRecord, steps: Step[], t: number, key: string): void {
    try {
      if (this.#rec.record(rec, steps, t, key)) this.#changed();
    } catch (err) {
      // Never a silent drop: the chain says a step of its log could not be recorded.
      const what = steps.map((s) => s.kind).join(", ");
      const detail = `a ${what} read from the session's log could not be recorded: ${(err as Error).message}`.slice(0, 1024);
      this.#rec.log(detail);
      this.#rec.append(rec, "telemetry_gap", { path: "transcript", cause: "other", detail }, this.#now());
    }
  }

  /** One log_unreadable gap per file, and a clear line in the recorder's log. */
  #unreadable(rec: ChainRecord, f: Watched, detail: string): void {
    this.#rec.log(`${detail} (${f.path})`);
    f.gapped = true;
    this.#changed();
    this.#rec.append(rec, "telemetry_gap", { path: "transcript", cause: "log_unreadable", detail: detail.slice(0, 1024) }, this.#now());
  }
}

/** The saved state file's text, or null when there is none. */
export function readSourcesFile(path: string): string | null {
  try {
    return readFileSync(path, "utf8");
  } catch {
    return null;
  }
}
