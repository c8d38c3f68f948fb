import type { HostConfig } from "../lib/state.ts";
import type { CachedPolicy } from "../recorder/mapper.ts";
import { acceptPolicy, fetchPolicy } from "../recorder/policy-cache.ts";
import type { Recorder } from "../recorder/recorder.ts";

/**
 * Keeps the recorder's verified policy current: one fetch at a time (start-up, a push, a poll), and
 * a push that arrives during one gets a fetch of its own right after it. A push that carries the
 * signed policy is taken without a fetch, under the same checks (`acceptPolicy`).
 */
export class PolicyRefresher {
  etag: string | null;
  /** Why the last fetch failed; null after one that worked. */
  error: string | null = null;
  /** Fetches since the recorder started. */
  fetches = 0;
  readonly #host: HostConfig;
  readonly #recorder: Recorder;
  readonly #onExhausted: () => void;
  #fetching: Promise<void> | null = null;
  #again = false;

  /** `onExhausted`: a new policy names an exhausted budget (idle budget slices give their room back). */
  constructor(host: HostConfig, recorder: Recorder, onExhausted: () => void) {
    this.#host = host;
    this.#recorder = recorder;
    this.#onExhausted = onExhausted;
    this.etag = recorder.policy?.etag ?? null;
  }

  refresh(): Promise<void> {
    if (this.#fetching) {
      this.#again = true;
      return this.#fetching;
    }
    this.#fetching = this.#fetchUntilCurrent().finally(() => {
      this.#fetching = null;
    });
    return this.#fetching;
  }

  async #fetchUntilCurrent(): Promise<void> {
    do {
      this.#again = false;
      this.fetches++;
      try {
        const next = await fetchPolicy(this.#host, this.etag, Date.now());
        if (next !== "unchanged") this.#take(next);
        this.error = null;
      } catch (err) {
        this.error = (err as Error).message;
      }
    } while (this.#again);
  }

  // The recorder decides from the policy issued last, whichever way it came.
  #take(next: CachedPolicy): void {
    const current = this.#recorder.policy;
    if (current && next.policy.issued_ms < current.policy.issued_ms) return;
    this.#recorder.policy = next;
    this.etag = next.etag;
    // A budget reached its limit (docs/collector.md, "Budget reservations").
    if (next.policy.exhausted_budgets?.length) this.#onExhausted();
  }

  /** A policy a push carried: verified and taken as a fetched one (throws with the reason it is refused); its ETag. */
  async applyPushed(signed: unknown): Promise<string | null> {
    this.#take(await acceptPolicy(this.#host, signed, Date.now()));
    this.error = null;
    return this.etag;
  }

  /** What a push acknowledges: a fetch that started after it, verified and now deciding every hook; its ETag. */
  async apply(): Promise<string | null> {
    await this.refresh();
    if (this.error !== null) throw new Error(this.error);
    return this.etag;
  }
}
