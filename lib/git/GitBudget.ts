/**
 * A node-wide cap on concurrent git children. Work that cannot get a slot within `maxWaitMs` is
 * refused with a retryable Busy rather than queued without bound (seed 000: the budget bounds
 * processes; per-repository work never serializes behind it).
 */
import { Busy } from '../util/Busy.js';

/**
 * Slots are counted per owner too (a token, or an anonymous client's address): one owner may hold
 * at most `share` of them, so a client that opens many slow transfers cannot make the node refuse
 * everyone else. Work with no owner (cache builds, checkpoints) counts against the total only.
 */
export class GitBudget {
  readonly #max: number;
  readonly #maxWaitMs: number;
  readonly #share: number;
  #running = 0;
  readonly #held = new Map<string, number>();
  readonly #waiting: { owner: string | undefined; grant: () => void; timer: NodeJS.Timeout }[] = [];

  constructor(max: number, maxWaitMs: number, share: number = max) {
    this.#max = max;
    this.#maxWaitMs = maxWaitMs;
    this.#share = share;
  }

  get running(): number {
    return this.#running;
  }

  /**
   * Resolves with a release function once a slot is free (and `owner` is under its share);
   * throws Busy after maxWaitMs.
   */
  acquire(owner?: string): Promise<() => void> {
    if (this.#free(owner)) return Promise.resolve(this.#take(owner));
    if (this.#maxWaitMs === 0) return Promise.reject(this.#busy(owner));
    return new Promise((resolve, reject) => {
      const waiter = {
        owner,
        grant: () => {
          clearTimeout(waiter.timer);
          resolve(this.#take(owner));
        },
        timer: setTimeout(() => {
          const at = this.#waiting.indexOf(waiter);
          if (at >= 0) this.#waiting.splice(at, 1);
          reject(this.#busy(owner));
        }, this.#maxWaitMs),
      };
      this.#waiting.push(waiter);
    });
  }

  #free(owner: string | undefined): boolean {
    return this.#running < this.#max && (owner === undefined || (this.#held.get(owner) ?? 0) < this.#share);
  }

  #busy(owner: string | undefined): Busy {
    if (this.#running < this.#max && owner !== undefined) {
      return new Busy(
        `narwal: busy: this client already runs ${this.#share} git processes on this server; retry when one has finished`,
      );
    }
    return new Busy(`narwal: server busy (${this.#max} git processes running); retry in a moment`);
  }

  #take(owner: string | undefined): () => void {
    this.#running++;
    if (owner !== undefined) this.#held.set(owner, (this.#held.get(owner) ?? 0) + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.#running--;
      if (owner !== undefined) {
        const left = (this.#held.get(owner) ?? 1) - 1;
        if (left === 0) this.#held.delete(owner);
        else this.#held.set(owner, left);
      }
      // The first waiter that may run now gets the slot: one whose owner is at its share waits on.
      const next = this.#waiting.findIndex((w) => this.#free(w.owner));
      if (next >= 0) this.#waiting.splice(next, 1)[0]?.grant();
    };
  }
}
