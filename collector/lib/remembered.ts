/**
 * A bounded memo for the hot paths: the value held for a key, or the one `make` gives (then held).
 * Past `max` keys everything is forgotten at once: these caches hold a few keys asked again and
 * again (a session's run, an upstream, a price bucket), so no eviction order is worth keeping.
 * A value is never undefined.
 */
export class Remembered<T> {
  readonly #held = new Map<string, T>();
  readonly #max: number;

  constructor(max: number) {
    this.#max = max;
  }

  get(key: string, make: () => T): T {
    let v = this.#held.get(key);
    if (v === undefined) {
      v = make();
      if (this.#held.size >= this.#max) this.#held.clear();
      this.#held.set(key, v);
    }
    return v;
  }
}
