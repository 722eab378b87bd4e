/**
 * A small per-process cache whose entries expire at a fixed time after they were read, so what it
 * serves is never older than its bound. Past `maxEntries` the oldest entry goes first.
 */
export class TtlCache<K, V> {
  readonly #entries = new Map<K, { value: V; expires: number }>();
  readonly #ttlMs: number;
  readonly #maxEntries: number;
  readonly #now: () => number;

  constructor(options: { ttlMs: number; maxEntries: number; now: () => number }) {
    this.#ttlMs = options.ttlMs;
    this.#maxEntries = options.maxEntries;
    this.#now = options.now;
  }

  get(key: K): V | undefined {
    const entry = this.#entries.get(key);
    if (entry === undefined) return undefined;
    if (this.#now() >= entry.expires) {
      this.#entries.delete(key);
      return undefined;
    }
    return entry.value;
  }

  /** `readAt` is when the value was read from its source (before the read, to be safe). */
  set(key: K, value: V, readAt: number): void {
    if (this.#ttlMs === 0) return;
    this.#entries.delete(key);
    this.#entries.set(key, { value, expires: readAt + this.#ttlMs });
    while (this.#entries.size > this.#maxEntries) {
      const oldest = this.#entries.keys().next();
      if (oldest.done) break;
      this.#entries.delete(oldest.value);
    }
  }

  /** Replaces a cached value without extending its life. */
  update(key: K, value: V): void {
    const entry = this.#entries.get(key);
    if (entry !== undefined) entry.value = value;
  }

  delete(key: K): void {
    this.#entries.delete(key);
  }
}
