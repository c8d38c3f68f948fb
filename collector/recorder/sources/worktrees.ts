import type { Recorder } from "../recorder.ts";
import { headOf, reconcile, worktreeOf } from "../worktree.ts";

/** Per session: its worktree, the HEAD first seen, when it was last reconciled, and whether a turn ended since. */
export interface TreeState {
  root: string | null;
  base: string | null;
  last: number;
  due: boolean;
}

/**
 * When to reconcile each session's worktree: after a turn, at most once every `everyMs` (a turn
 * that ends sooner is reconciled once the interval has passed), and once more at the session's end.
 */
export class Worktrees {
  readonly #rec: Recorder;
  readonly #trees: Map<string, TreeState>;
  readonly #everyMs: number;
  readonly #changed: () => void;

  constructor(rec: Recorder, saved: Record<string, TreeState>, everyMs: number, changed: () => void) {
    this.#rec = rec;
    this.#trees = new Map(Object.entries(saved));
    this.#everyMs = everyMs;
    this.#changed = changed;
  }

  get state(): Record<string, TreeState> {
    return Object.fromEntries(this.#trees);
  }

  /** The session's cwd, first seen: its worktree and HEAD are the baseline for the session's commits. */
  note(chain: string, cwd: string): void {
    if (this.#trees.has(chain)) return;
    const root = worktreeOf(cwd);
    this.#trees.set(chain, { root, base: root ? headOf(root) : null, last: 0, due: false });
    this.#changed();
  }

  due(chain: string): void {
    const t = this.#trees.get(chain);
    if (!t?.root) return;
    t.due = true;
    this.#changed();
  }

  tick(now: number): void {
    for (const [chain, t] of this.#trees) {
      const rec = this.#rec.journal.chains.get(chain);
      if (!rec || rec.writer.state.final) {
        this.#trees.delete(chain);
        this.#changed();
        continue;
      }
      if (t.due && now - t.last >= this.#everyMs) this.reconcile(chain, false, now);
    }
  }

  /** Records the worktree now (`final` at the session's end). */
  reconcile(chain: string, final: boolean, now = Date.now()): void {
    const t = this.#trees.get(chain);
    const rec = this.#rec.journal.chains.get(chain);
    if (!t?.root || !rec || rec.writer.state.final) return;
    const payload = reconcile(t.root, t.base, final);
    t.due = false;
    t.last = now;
    this.#changed();
    if (!payload) {
      this.#rec.log(`git status failed in ${t.root}; the worktree of ${chain} was not reconciled`);
      return;
    }
    this.#rec.record(rec, [{ kind: "oxagen:worktree_reconciled", payload, bodies: [] }], now, null);
  }
}
