/**
 * A node-wide cap on concurrent git children. Work that cannot get a slot within `maxWaitMs` is
 * refused with a retryable Busy rather than queued without bound (seed 000: the budget bounds
 * processes; per-repository work never serializes behind it).
 */
export class Busy extends Error {
  readonly code = 'Busy';
  readonly retryAfterSeconds: number;
  constructor(message: string, retryAfterSeconds = 1) {
    super(message);
    this.retryAfterSeconds = retryAfterSeconds;
  }
}

export class GitBudget {
  readonly #max: number;
  readonly #maxWaitMs: number;
  #running = 0;
  readonly #waiting: { grant: () => void; timer: NodeJS.Timeout }[] = [];

  constructor(max: number, maxWaitMs: number) {
    this.#max = max;
    this.#maxWaitMs = maxWaitMs;
  }

  get running(): number {
    return this.#running;
  }

  /** Resolves with a release function once a slot is free; throws Busy after maxWaitMs. */
  acquire(): Promise<() => void> {
    if (this.#running < this.#max) {
      this.#running++;
      return Promise.resolve(this.#releaser());
    }
    if (this.#maxWaitMs === 0) return Promise.reject(this.#busy());
    return new Promise((resolve, reject) => {
      const waiter = {
        grant: () => {
          clearTimeout(waiter.timer);
          resolve(this.#releaser());
        },
        timer: setTimeout(() => {
          const at = this.#waiting.indexOf(waiter);
          if (at >= 0) this.#waiting.splice(at, 1);
          reject(this.#busy());
        }, this.#maxWaitMs),
      };
      this.#waiting.push(waiter);
    });
  }

  #busy(): Busy {
    return new Busy(`narwal: server busy (${this.#max} git processes running); retry in a moment`);
  }

  #releaser(): () => void {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const next = this.#waiting.shift();
      if (next) next.grant();
      else this.#running--;
    };
  }
}
