import { hostChainId, runIdFor } from "../../../protocol/index.ts";
import type { Recorder } from "../recorder.ts";
import { recentTranscripts } from "./tail.ts";

/**
 * Claude Code sessions running without Oxagen's hooks: a transcript changing for a session id no
 * hook ever named. Recorded once per session on the computer's own chain (outside every run's
 * record) as a hooks_missing gap. A session is reported only when it is seen on two scans in a row
 * with no hook in between, so a session whose SessionStart hook is still in flight is not.
 */
export class Hookless {
  readonly #rec: Recorder;
  readonly #reported: Set<string>;
  readonly #changed: () => void;
  #suspects = new Set<string>();

  constructor(rec: Recorder, reported: string[], changed: () => void) {
    this.#rec = rec;
    this.#reported = new Set(reported);
    this.#changed = changed;
  }

  get state(): string[] {
    return [...this.#reported].slice(-5000);
  }

  /** Scans transcripts changed since `since`; returns the session ids newly reported. */
  scan(since: number, now: number, dir?: string): string[] {
    const host = this.#rec.host.host_id;
    const next = new Set<string>();
    const reported: string[] = [];
    for (const [session, file] of recentTranscripts(since, dir)) {
      if (this.#reported.has(session) || this.#rec.journal.chains.has(runIdFor(host, "claude-code", session))) continue;
      if (!this.#suspects.has(session)) {
        next.add(session);
        continue;
      }
      const rec = this.#rec.journal.open(hostChainId(host), null);
      const detail = `claude-code session ${session} ran with no Oxagen hooks (missing or removed): its transcript ${file.path} changed at ${new Date(file.mtime).toISOString()}, and no hook named it`;
      this.#rec.append(rec, "telemetry_gap", { path: "recorder", cause: "hooks_missing", detail: detail.slice(0, 1024) }, now);
      this.#rec.log(detail);
      this.#reported.add(session);
      reported.push(session);
      this.#changed();
    }
    this.#suspects = next;
    return reported;
  }
}
