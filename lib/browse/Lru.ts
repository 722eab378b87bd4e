/**
 * A map bounded by the total size of its values, least recently used out first. What the
 * repository pages keep is a function of immutable inputs (an object id, a generation), so an
 * entry never goes stale; it only goes when memory is wanted for newer ones.
 */
export class Lru<V> {
  readonly #maxBytes: number;
  readonly #sizeOf: (value: V) => number;
  readonly #entries = new Map<string, { value: V; size: number }>();
  #bytes = 0;

  constructor(maxBytes: number, sizeOf: (value: V) => number) {
    this.#maxBytes = maxBytes;
    this.#sizeOf = sizeOf;
  }

  get bytes(): number {
    return this.#bytes;
  }

  get(key: string): V | undefined {
    const entry = this.#entries.get(key);
    if (entry === undefined) return undefined;
    this.#entries.delete(key);
    this.#entries.set(key, entry);
    return entry.value;
  }

  set(key: string, value: V): void {
    const size = this.#sizeOf(value) + key.length;
    // One value may take at most an eighth, so that a few huge ones cannot empty the rest.
    if (size > this.#maxBytes / 8) return;
    const old = this.#entries.get(key);
    if (old !== undefined) {
      this.#entries.delete(key);
      this.#bytes -= old.size;
    }
    this.#entries.set(key, { value, size });
    this.#bytes += size;
    for (const [oldest, entry] of this.#entries) {
      if (this.#bytes <= this.#maxBytes) break;
      this.#entries.delete(oldest);
      this.#bytes -= entry.size;
    }
  }
}
