import { ChainWriter, fromHex, type FrameKind, type Payload, type SignedLock } from "../../protocol/index.ts";
import type { HostConfig } from "../lib/state.ts";
import type { ChainRecord, Journal, JournalFrame, PendingBody } from "./journal.ts";
import { askBecomes, neutralAnswer, normalizeEvent, shapeAnswer } from "../harnesses/events.ts";
import { mapEvent, sessionOf, type CachedPolicy, type HookRequest, type Step } from "./mapper.ts";
import { HarnessProcesses } from "./processes.ts";

/** How long a session may be quiet before the recorder ends it as crashed (coverage statement). */
export function quietLimitMs(harness: string): number {
  const env = Number(process.env.OXAGEN_QUIET_MS);
  if (Number.isFinite(env) && env > 0) return env;
  return (harness === "cursor" ? 1 : 6) * 3600_000;
}

/** Parses a line-protocol request; null when it is not one. */
export function parseRequest(value: unknown): HookRequest | null {
  if (value === null || typeof value !== "object") return null;
  const r = value as Record<string, unknown>;
  if (r.v !== 1 || r.event === null || typeof r.event !== "object" || Array.isArray(r.event)) return null;
  const str = (v: unknown) => (typeof v === "string" && v.length > 0 && v.length <= 128 ? v : null);
  const req: HookRequest = {
    id: typeof r.id === "string" && /^[0-9a-zA-Z_-]{1,64}$/.test(r.id) ? r.id : null,
    t: typeof r.t === "number" && Number.isSafeInteger(r.t) && r.t > 0 ? r.t : Date.now(),
    source: str(r.source) ?? "command",
    harness: str(r.harness),
    agent: str(r.agent),
    event: r.event as Record<string, unknown>,
  };
  if (typeof r.spooled_ms === "number") req.spooled_ms = r.spooled_ms;
  const o = r.oversize as { bytes?: unknown; dropped_fields?: unknown } | undefined;
  if (o && typeof o === "object" && typeof o.bytes === "number" && Array.isArray(o.dropped_fields)) {
    req.oversize = { bytes: o.bytes, dropped_fields: o.dropped_fields.filter((f): f is string => typeof f === "string").slice(0, 64) };
  }
  if (typeof r.pid === "number" && Number.isSafeInteger(r.pid) && r.pid > 1) req.pid = r.pid;
  if (typeof r.pid_start === "string" && r.pid_start.length <= 64) req.pid_start = r.pid_start;
  if (r.answer !== undefined) req.answer = r.answer;
  return req;
}

/**
 * The recorder's core: turns hook events into frames on one chain per session, journaled before
 * the answer leaves. Synchronous on purpose: one event is fully durable before the next starts.
 */
export class Recorder {
  policy: CachedPolicy | null;
  readonly journal: Journal;
  readonly host: HostConfig;
  onChange: () => void = () => {};
  /** The usage logs and worktree, told of each recorded event before and after it (sources/index.ts). */
  sources: { before(req: HookRequest): void; after(req: HookRequest): void; ending(chain: string): void } | null = null;
  log: (msg: string) => void = () => {};
  /** Harness processes of sessions that reported one; a session whose process is gone is ended. */
  processes = new HarnessProcesses(null, () => {});
  readonly #secret: Uint8Array;
  /** Chains a retired key began: they are locked with it to the end (see HostConfig.previous_keys). */
  readonly #chainKeys = new Map<string, Uint8Array>();
  /** When each harness's hooks last reached the recorder (tacho status: Codex hooks trusted yet?). */
  readonly seen: Record<string, number> = {};
  /** Per-session memory the harness adapters keep across events (Cursor's last reply). */
  readonly #memory = new Map<string, string>();

  constructor(journal: Journal, host: HostConfig, policy: CachedPolicy | null) {
    this.journal = journal;
    this.host = host;
    this.policy = policy;
    this.#secret = fromHex(host.secret_key, 32);
    for (const k of host.previous_keys ?? []) for (const chain of k.chains) this.#chainKeys.set(chain, fromHex(k.secret_key, 32));
  }

  /** The request with its event in the canonical shape the mapper reads; null when it is not recorded. */
  canonical(req: HookRequest, remember = true): HookRequest | null {
    const memory = remember ? this.#memory : undefined;
    const n = normalizeEvent(req.harness, req.event, { wrapped: this.host.harnesses, pid: req.pid, pidStart: req.pid_start, memory });
    return "event" in n ? { ...req, event: n.event } : null;
  }

  /** Records one event (exactly once per id) and returns the hook's answer in the harness's shape. */
  handle(raw: HookRequest): Record<string, unknown> {
    if (raw.id !== null && this.journal.has(raw.id)) return this.journal.answered(raw.id) as Record<string, unknown>;
    if (raw.harness && raw.spooled_ms === undefined) this.seen[raw.harness] = Date.now();
    const req = this.canonical(raw);
    if (!req) return neutralAnswer(raw.harness, raw.event);
    this.sources?.before(req);
    const plan = mapEvent(req, { hostId: this.host.host_id, policy: this.policy, ask: askBecomes(req.harness) });
    const answer = shapeAnswer(req.harness, req.event, plan.answer);
    if (!plan.chain || !plan.run || plan.steps.length === 0) return answer;
    const rec = this.journal.open(plan.chain, plan.run);
    if (rec.writer.state.final) {
      this.log(`event ${req.event.hook_event_name} for ${plan.chain} after its final lock: not recorded`);
      return answer;
    }
    try {
      this.#commit(rec, plan.steps, req.t, { id: req.id, answer, final: plan.final });
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

  /** Frames from the recorder's second sources (usage logs, worktree), appended once per `id`; false when not appended. */
  record(rec: ChainRecord, steps: Step[], t: number, id: string | null): boolean {
    if (rec.writer.state.final || (id !== null && this.journal.has(id))) return false;
    this.#commit(rec, steps, t, { id, final: false });
    this.onChange();
    return true;
  }

  /** Appends a recorder frame (a gap, a crashed session's stop) to a chain; optionally final-locks it. */
  append(rec: ChainRecord, kind: FrameKind, payload: Payload<FrameKind>, t: number, final = false): void {
    if (rec.writer.state.final) return;
    this.#commit(rec, [{ kind, payload: payload as Record<string, unknown>, bodies: [] }], t, { id: null, final });
    this.onChange();
  }

  /** The chain of a request's session (opened if new); null when the request names no session. */
  chainOf(req: HookRequest): ChainRecord | null {
    const s = this.sessionOf(req);
    return s ? this.journal.open(s.chain, s.run) : null;
  }

  /** The session a (raw) request belongs to, after normalizing; null when it names none or is not recorded. */
  sessionOf(req: HookRequest): ReturnType<typeof sessionOf> {
    const canon = this.canonical(req, false);
    return canon ? sessionOf(canon, this.host.host_id) : null;
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

  #commit(rec: ChainRecord, steps: Step[], t0: number, opts: { id: string | null; answer?: unknown; final: boolean }): void {
    const before = rec.writer.state;
    const t = Math.max(t0, rec.lastT);
    const frames: JournalFrame[] = [];
    const bodies: PendingBody[] = [];
    const locks: SignedLock[] = [];
    try {
      for (const s of steps) {
        const { frame, hash } = rec.writer.append(s.kind, s.payload as Payload<FrameKind>, t);
        frames.push({ ...frame, hash });
        for (const b of s.bodies) {
          if (!b.bytes) continue;
          this.journal.putBody(b.ref.sha256, b.bytes);
          bodies.push({ sha: b.ref.sha256, role: b.ref.role, seq: frame.seq });
        }
      }
      const lock =
        steps.length === 0 || opts.final
          ? rec.writer.lock({ secretKey: this.#chainKeys.get(rec.chain) ?? this.#secret, hostId: this.host.host_id, t, final: opts.final })
          : null;
      if (lock) locks.push(lock);
    } catch (err) {
      rec.writer = new ChainWriter(before);
      throw err;
    }
    this.journal.commit(rec, { ...(opts.id !== null ? { id: opts.id, answer: opts.answer ?? {} } : {}), frames, locks, bodies }, before);
  }
}
