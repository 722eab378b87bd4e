/**
 * Memory cache for immutable, content-addressed log objects (ref tables, pages, entries). Their keys
 * never change meaning, so they are read from the store at most once per process while they fit.
 */
export class ImmutableCache {
  readonly #max: number;
  readonly #items = new Map<string, Promise<unknown>>();

  constructor(maxItems = 1024) {
    this.#max = maxItems;
  }

  get<T>(key: string, load: () => Promise<T>): Promise<T> {
    const hit = this.#items.get(key);
    if (hit !== undefined) {
      // Refresh recency: Map iteration order is insertion order.
      this.#items.delete(key);
      this.#items.set(key, hit);
      return hit as Promise<T>;
    }
    const loading = load();
    this.#items.set(key, loading);
    loading.catch(() => this.#items.delete(key));
    while (this.#items.size > this.#max) {
      const oldest = this.#items.keys().next().value;
      if (oldest === undefined) break;
      this.#items.delete(oldest);
    }
    return loading;
  }

  /** Seeds the cache with an object this process just wrote. */
  set<T>(key: string, value: T): void {
    this.#items.set(key, Promise.resolve(value));
  }
}
