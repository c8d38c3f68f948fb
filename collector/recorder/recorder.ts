import { fromHex, hostChainId, type FrameKind, type Payload } from "../../protocol/index.ts";
import { appendSteps } from "./append.ts";
import { answerOf, askBecomes, neutralAnswer, normalizeEvent } from "../harnesses/events.ts";
import type { HostConfig } from "../lib/state.ts";
import { gatewayRequest, type GatewaySessionRef, type LaterStep, prepareLater } from "./gateway-steps.ts";
import type { ChainRecord, Journal } from "./journal/index.ts";
import { mapEvent, type CachedPolicy, type Step } from "./mapper.ts";
import type { HookRequest } from "./request.ts";

import { gatewayToolCallId, OxagenToolRequests, oxagenToolOf } from "./oxagen-tools.ts";
import { HarnessProcesses } from "./processes.ts";
import { currentRun, inRun, ToolInputs, type CurrentRun } from "./runs.ts";

/** How long a session may be quiet before the recorder ends it as crashed (coverage statement). */
export function quietLimitMs(harness: string): number {
  const env = Number(process.env.OXAGEN_QUIET_MS);
  if (Number.isFinite(env) && env > 0) return env;
  return (harness === "cursor" ? 1 : 6) * 3600_000;
}

/** Harnesses whose hook entries post some steps over HTTP (collector/harnesses/claude-code/config.ts HTTP_EVENTS). */
const HTTP_HOOK_HARNESSES = new Set(["claude-code"]);

/** The recorder's other sources, told of each recorded event before and after it (sources/index.ts). */
export interface SourceHooks {
  before(req: HookRequest): void;
  after(req: HookRequest): void;
  ending(chain: string): void;
}

/** What a recorder works with besides its journal, host and policy (the daemon gives each; a test, what it needs). */
export interface RecorderOptions {
  log?: (msg: string) => void;
  /** Harness processes of sessions that reported one; a session whose process is gone is ended. */
  processes?: HarnessProcesses;
  /** Told when frames are durable and may ship. */
  onChange?: () => void;
  /** The usage logs and worktree, made with the recorder whose chains they read. */
  sources?: (recorder: Recorder) => SourceHooks;
  /** Called before each live hook: the daemon replays whatever waits in the spool first (replay.ts). */
  beforeHook?: () => void;
  /** Why the HTTP hook port is not listening now, or null when it is (daemon/ports.ts). */
  httpDown?: () => string | null;
}

/**
 * The recorder's core: turns hook events into frames on one chain per session, journaled before
 * the answer leaves. Synchronous on purpose: one event is fully durable before the next starts.
 */
export class Recorder {
  /** The verified policy every decision is made from; the daemon's policy refresher replaces it. */
  policy: CachedPolicy | null;
  readonly journal: Journal;
  readonly host: HostConfig;
  readonly onChange: () => void;
  readonly sources: SourceHooks | null;
  readonly log: (msg: string) => void;
  readonly processes: HarnessProcesses;
  readonly #secret: Uint8Array;
  /** Chains a retired key began: they are locked with it to the end (see HostConfig.previous_keys). */
  readonly #chainKeys = new Map<string, Uint8Array>();
  /** When each harness's hooks last reached the recorder (tacho status: Codex hooks trusted yet?). */
  readonly seen: Record<string, number> = {};
  /** Per-session memory the harness adapters keep across events (Cursor's last reply). */
  readonly #memory = new Map<string, string>();
  readonly #inputs = new ToolInputs();
  /** PreToolUse events of Oxagen tools waiting for their call at the gateway (the session tie of a call that names none). */
  readonly oxagenTools = new OxagenToolRequests();
  readonly #beforeHook: () => void;
  readonly #httpDown: () => string | null;
  /** Sessions already told in their record that their HTTP-posted steps cannot arrive. */
  readonly #toldHttpDown = new Set<string>();

  constructor(journal: Journal, host: HostConfig, policy: CachedPolicy | null, opts: RecorderOptions = {}) {
    this.journal = journal;
    this.host = host;
    this.policy = policy;
    this.log = opts.log ?? (() => {});
    this.processes = opts.processes ?? new HarnessProcesses(null, () => {});
    this.onChange = opts.onChange ?? (() => {});
    this.#beforeHook = opts.beforeHook ?? (() => {});
    this.#httpDown = opts.httpDown ?? (() => null);
    this.#secret = fromHex(host.secret_key, 32);
    journal.onDurable = () => this.onChange();
    journal.onError = (err) => this.log(err.message);
    for (const k of host.previous_keys ?? []) for (const chain of k.chains) this.#chainKeys.set(chain, fromHex(k.secret_key, 32));
    this.sources = opts.sources?.(this) ?? null;
  }

  /** The request with its event in the canonical shape the mapper reads; null when it is not recorded. */
  canonical(req: HookRequest, remember = true): HookRequest | null {
    const memory = remember ? this.#memory : undefined;
    const n = normalizeEvent(req.harness, req.event, { wrapped: this.host.harnesses, pid: req.pid, pidStart: req.pid_start, memory });
    return "event" in n ? { ...req, event: n.event } : null;
  }

  /** Records one event (exactly once per id) and returns the hook's answer in the harness's shape. */
  handle(raw: HookRequest): Record<string, unknown> {
    const live = raw.spooled_ms === undefined;
    if (live) this.#beforeHook();
    if (raw.id !== null && this.journal.has(raw.id)) return this.journal.answered(raw.id) as Record<string, unknown>;
    if (raw.harness && live) this.seen[raw.harness] = Date.now();
    const canon = this.canonical(raw);
    if (!canon) return neutralAnswer(raw.harness, raw.event);
    const current = currentRun(this.journal, this.host, canon);
    const inSession = inRun(canon, current);
    const req = current ? this.#inputs.fill(current.chain, inSession) : inSession;
    this.sources?.before(req);
    if (live && typeof canon.event.session_id === "string") this.oxagenTools.note(canon, canon.event.session_id);
    const plan = mapEvent(req, { hostId: this.host.host_id, policy: this.policy, ask: askBecomes(req.harness) });
    const told = plan.told;
    // A spooled step was answered by `tacho hook` offline: that answer is the one the agent had.
    const answer =
      !live && raw.answer !== undefined
        ? (raw.answer as Record<string, unknown>)
        : answerOf(req.harness, req.event, told.decision, told.reason);
    // The gateway recorded this Oxagen tool's call already (the same tool_use_id): not a second call.
    let steps = this.#carried(plan.chain, req.event) ? plan.steps.filter((s) => s.kind !== "tool_call") : plan.steps;
    if (raw.oversize) {
      // A line an older `tacho hook` cut without hashing what it cut: its content is unknown.
      const detail = `a ${String(req.event.hook_event_name).slice(0, 64)} event of ${raw.oversize.bytes} bytes was cut by an older tacho hook (${raw.oversize.dropped_fields.join(", ").slice(0, 512)}); its content hashes are unknown`;
      steps = [{ kind: "telemetry_gap", payload: { path: "recorder", cause: "other", detail }, bodies: [] }];
    }
    if (steps.length === 0) return answer;
    const down = live && HTTP_HOOK_HARNESSES.has(req.harness ?? "") ? this.#httpDown() : null;
    if (down !== null && !this.#toldHttpDown.has(plan.chain)) {
      // Claude Code posts its tool results over HTTP: while nothing of ours listens there, they are lost, and the record says so.
      this.#toldHttpDown.add(plan.chain);
      const detail = `the recorder could not listen on its HTTP hook port 127.0.0.1:${this.host.ports.hooks} (${down}); the steps ${req.harness} posts there (every finished tool call) are not received while it cannot`;
      steps = [
        { kind: "telemetry_gap", payload: { path: "recorder", cause: "other", detail: detail.slice(0, 1024), from_ms: req.t }, bodies: [] },
        ...steps,
      ];
    } else if (down === null) this.#toldHttpDown.delete(plan.chain);
    const rec = this.#open(plan.chain, plan.run, current, req);
    try {
      this.#commit(rec, steps, req.t, { id: req.id, answer, refused: told.decision === "deny", final: plan.final });
    } catch (err) {
      this.log(`event ${String(req.event.hook_event_name)} for ${plan.chain} not recorded: ${(err as Error).message}`);
      const detail = `a ${String(req.event.hook_event_name).slice(0, 64)} event could not be recorded: ${(err as Error).message}`.slice(
        0,
        1024,
      );
      this.#commit(rec, [{ kind: "telemetry_gap", payload: { path: "recorder", cause: "other", detail }, bodies: [] }], req.t, {
        id: req.id,
        answer,
        final: false,
      });
    }
    if (rec.writer.state.final) this.processes.forget(rec.chain);
    else if (req.pid !== undefined) this.processes.note(rec.chain, { pid: req.pid, start: req.pid_start ?? null });
    this.sources?.after(req);
    this.onChange();
    return answer;
  }

  /** Whether an Oxagen tool's PostToolUse names a call whose frame the gateway wrote on this chain. */
  #carried(chain: string, e: HookRequest["event"]): boolean {
    if (e.hook_event_name !== "PostToolUse" && e.hook_event_name !== "PostToolUseFailure") return false;
    const id = e.tool_use_id;
    return oxagenToolOf(e.tool_name) !== null && typeof id === "string" && id.length > 0 && this.journal.has(gatewayToolCallId(chain, id));
  }

  /**
   * A spooled PreToolUse whose id the recorder already recorded live: the hook gave up waiting
   * (its budget ran out) and the agent acted on the answer `tacho hook` gave offline. Appends that
   * decision, marked offline, and what it meant for the call when it differs from the live answer
   * (token_denied for a call the live answer let through, tool_requested for one it refused).
   * Once per event id; false when there is nothing to add.
   */
  recordOfflineAnswer(raw: HookRequest): boolean {
    if (raw.id === null || raw.spooled_ms === undefined || raw.answer === undefined) return false;
    const id = `${raw.id}~offline`;
    // Recorded from the spool already (a line `tacho hook` wrote twice): nothing to add.
    if (this.journal.has(id) || JSON.stringify(this.journal.answered(raw.id)) === JSON.stringify(raw.answer)) return false;
    const canon = this.canonical(raw, false);
    if (canon?.event.hook_event_name !== "PreToolUse") return false;
    const current = currentRun(this.journal, this.host, canon);
    const req = inRun(canon, current);
    const plan = mapEvent(req, { hostId: this.host.host_id, policy: this.policy, ask: askBecomes(req.harness) });
    const decision = plan.steps.find((s) => s.kind === "policy_decision");
    if (!decision) return false;
    const p = decision.payload as { reason?: string };
    p.reason =
      `the hook gave up waiting for the recorder; the agent acted on the answer tacho hook gave from the cached policy: ${p.reason ?? ""}`.slice(
        0,
        1024,
      );
    // What the live answer did with the call (the decision the recorder told the harness then).
    const wasRefused = this.journal.refused(raw.id);
    const steps = plan.steps.filter((s) => s === decision || (s.kind === "token_denied") !== wasRefused);
    const rec = this.#open(plan.chain, plan.run, current, req);
    this.#commit(rec, steps, req.t, { id, answer: raw.answer, final: false });
    this.onChange();
    return true;
  }

  /**
   * Frames from the recorder's second sources (usage logs, worktree, the gateway), appended once per
   * `id`; false when not appended. `defer`: durable by the journal's next group commit (appendSteps).
   */
  record(rec: ChainRecord, steps: Step[], t: number, id: string | null, defer = false): boolean {
    if (rec.writer.state.final || (id !== null && this.journal.has(id))) return false;
    this.#commit(rec, steps, t, { id, final: false, defer });
    if (!defer) this.onChange();
    return true;
  }

  /**
   * Frames of the gateway: on the current run of the session a call named in its headers (opened
   * if new, as a hook would), or on the computer's own chain for a call that names none. Once per `id`
   * (a function of the chain: the id of a call's identity there, see recorder/carried.ts `callKey`).
   * Deferred (the caller already has its answer): the frames and the id are taken now, in chain
   * order, and made durable by the journal's group commit just after (docs/collector.md, "The journal").
   * A {@link LaterStep} takes its place and id now and is appended when its frame is ready, or
   * completed here first when anything else is about to be written to the chain (Journal.prepare).
   */
  recordGateway(
    session: GatewaySessionRef | null,
    steps: Step[] | LaterStep,
    t: number,
    idOf: string | null | ((chain: string) => string),
  ): boolean {
    const req = session ? gatewayRequest(session, t) : null;
    const current = req ? currentRun(this.journal, this.host, req) : null;
    const rec =
      req && current
        ? this.#open(current.chain, current.run, current, inRun(req, current))
        : this.journal.open(hostChainId(this.host.host_id), null);
    const id = typeof idOf === "function" ? idOf(rec.chain) : idOf;
    if (Array.isArray(steps)) return this.record(rec, steps, t, id, true);
    if (rec.writer.state.final || (id !== null && this.journal.has(id))) return false;
    const later = steps.later();
    if (!later && rec.preparing.length === 0) {
      try {
        return this.record(rec, [steps.now()], t, id, true);
      } catch (err) {
        this.#lost(rec, steps, err as Error, t);
        return false;
      }
    }
    prepareLater(this.journal, rec, steps, later, id, {
      commit: (step) => this.#commit(rec, [step], t, { id, final: false, defer: true, prepared: true }),
      lost: (err) => this.#lost(rec, steps, err, t),
    });
    return true;
  }

  /** A carried call whose frame could not be appended: the chain says so (a gap), never nothing. */
  #lost(rec: ChainRecord, call: LaterStep, err: Error, t: number): void {
    call.onError(err);
    const detail = `a model call the gateway carried could not be recorded: ${err.message}`.slice(0, 1024);
    try {
      this.#commit(rec, [{ kind: "telemetry_gap", payload: { path: "gateway", cause: "other", detail }, bodies: [] }], t, {
        id: null,
        final: false,
        defer: true,
      });
    } catch (again) {
      this.log(`gateway: neither a carried call nor its gap could be recorded on ${rec.chain}: ${(again as Error).message}`);
    }
  }

  /** The run a session named by the gateway belongs to now; null when it names none. */
  gatewayRun(session: GatewaySessionRef | null): string | null {
    return session ? (currentRun(this.journal, this.host, gatewayRequest(session, Date.now()))?.chain ?? null) : null;
  }

  /** Appends a recorder frame (a gap, a crashed session's stop) to a chain; optionally final-locks it. */
  append(rec: ChainRecord, kind: FrameKind, payload: Payload<FrameKind>, t: number, final = false): void {
    if (rec.writer.state.final) return;
    this.#commit(rec, [{ kind, payload: payload as Record<string, unknown>, bodies: [] }], t, { id: null, final });
    this.onChange();
  }

  /** The chain of a request's session (its current run, opened if new); null when the request names no session. */
  chainOf(req: HookRequest): ChainRecord | null {
    const canon = this.canonical(req, false);
    const current = canon ? currentRun(this.journal, this.host, canon) : null;
    return canon && current ? this.#open(current.chain, current.run, current, inRun(canon, current)) : null;
  }

  /** The current run of a (raw) request's session, after normalizing; null when it names none or is not recorded. */
  currentRunOf(req: HookRequest): CurrentRun | null {
    const canon = this.canonical(req, false);
    return canon ? currentRun(this.journal, this.host, canon) : null;
  }

  /**
   * Opens an event's chain. A new run of a reused session id that does not begin with SessionStart
   * begins with a gap naming the run it follows: its steps were not part of a session start.
   */
  #open(chain: string, run: ChainRecord["run"], current: CurrentRun | null, req: HookRequest): ChainRecord {
    const existed = this.journal.chains.has(chain);
    const rec = this.journal.open(chain, run);
    if (!existed && current?.follows && req.event.hook_event_name !== "SessionStart") {
      const detail = `session ${String(current.run.session_id).slice(0, 300)} came back after its run ${current.follows} ended: what follows is a new run`;
      this.#commit(
        rec,
        [{ kind: "telemetry_gap", payload: { path: "recorder", cause: "other", detail: detail.slice(0, 1024) }, bodies: [] }],
        req.t,
        {
          id: null,
          final: false,
        },
      );
    }
    return rec;
  }

  /** Locks every chain with frames since its last lock; `final` ends the ones not yet ended. */
  lockAll(t: number): number {
    let n = 0;
    for (const rec of this.journal.chains.values()) {
      if (rec.writer.state.final || !rec.writer.dirty) continue;
      this.#commit(rec, [], t, { id: null, final: false });
      n++;
    }
    if (n) this.onChange();
    return n;
  }

  /** Ends sessions quiet longer than their limit as crashed, with an unobserved tail. */
  endQuiet(now: number): void {
    for (const rec of this.journal.chains.values()) {
      if (!rec.run || rec.writer.state.final || rec.lastT === 0) continue;
      if (now - rec.lastT < quietLimitMs(rec.run.harness)) continue;
      this.sources?.ending(rec.chain);
      this.#commit(
        rec,
        [
          { kind: "telemetry_gap", payload: { path: "recorder", cause: "unobserved_tail", from_ms: rec.lastT, to_ms: now }, bodies: [] },
          { kind: "agent_stop", payload: { path: "recorder", reason: "quiet", outcome: "crashed" }, bodies: [] },
        ],
        now,
        { id: null, final: true },
      );
      this.processes.forget(rec.chain);
      this.onChange();
    }
  }

  /**
   * Ends sessions whose harness process exited. Stella reports no session end, so its process
   * exiting is how its session ends; any other harness that exits without ending its session crashed.
   */
  endGone(now: number): void {
    for (const chain of this.processes.gone()) {
      const rec = this.journal.chains.get(chain);
      this.processes.forget(chain);
      if (!rec?.run || rec.writer.state.final) continue;
      this.sources?.ending(chain);
      const steps: Step[] =
        rec.run.harness === "stella"
          ? [{ kind: "agent_stop", payload: { path: "recorder", reason: "process_exited", outcome: "completed" }, bodies: [] }]
          : [
              {
                kind: "telemetry_gap",
                payload: { path: "recorder", cause: "unobserved_tail", from_ms: rec.lastT, to_ms: now },
                bodies: [],
              },
              { kind: "agent_stop", payload: { path: "recorder", reason: "process_exited", outcome: "crashed" }, bodies: [] },
            ];
      this.#commit(rec, steps, now, { id: null, final: true });
      this.onChange();
    }
  }

  /** Sessions whose chain has not ended. */
  running(): ChainRecord[] {
    return [...this.journal.chains.values()].filter((r) => r.run !== null && !r.writer.state.final);
  }

  #commit(
    rec: ChainRecord,
    steps: Step[],
    t0: number,
    opts: { id: string | null; answer?: unknown; refused?: boolean; final: boolean; defer?: boolean; prepared?: boolean },
  ): void {
    const key = { secretKey: this.#chainKeys.get(rec.chain) ?? this.#secret, hostId: this.host.host_id };
    appendSteps(this.journal, rec, steps, {
      t: t0,
      lock: steps.length === 0 || opts.final,
      final: opts.final,
      key,
      id: opts.id,
      answer: opts.answer,
      refused: opts.refused,
      defer: opts.defer,
      prepared: opts.prepared,
    });
  }
}
