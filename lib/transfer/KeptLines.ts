/**
 * The lines before kept packs, as read from their files: a file is written whole once (a rename)
 * and its lines are a function of the generation and the request (the shallow boundary), so a
 * storm of identical fetches reads them once. Bounded by bytes, oldest first.
 */
export class KeptLines {
  readonly #lines = new Map<string, Buffer>();
  #bytes = 0;

  constructor(private readonly maxBytes: number) {}

  get(path: string): Buffer | undefined {
    return this.#lines.get(path);
  }

  set(path: string, lines: Buffer): void {
    if (this.#lines.has(path) || lines.length > this.maxBytes) return;
    for (const [oldest, kept] of this.#lines) {
      if (this.#bytes + lines.length <= this.maxBytes) break;
      this.#lines.delete(oldest);
      this.#bytes -= kept.length;
    }
    this.#lines.set(path, lines);
    this.#bytes += lines.length;
  }
}
