/** An in-process mutex per key: work under one key runs one at a time, other keys are unaffected. */
export class KeyedMutex {
  readonly #tails = new Map<string, Promise<void>>();

  async run<T>(key: string, work: () => Promise<T>): Promise<T> {
    const previous = this.#tails.get(key) ?? Promise.resolve();
    let done!: () => void;
    const mine = new Promise<void>((resolve) => {
      done = resolve;
    });
    const tail = previous.then(() => mine);
    this.#tails.set(key, tail);
    await previous;
    try {
      return await work();
    } finally {
      done();
      if (this.#tails.get(key) === tail) this.#tails.delete(key);
    }
  }
}
