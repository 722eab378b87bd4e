/**
 * A node-wide bound on the request bytes held in memory at once, and a share of it per client. A
 * fetch request is read whole before git starts (to learn whether it is a full clone the pack cache
 * can answer), up to NARWAL_MAX_FETCH_REQUEST_BYTES each: without a bound across requests, many
 * clients (or one with many connections) sending large negotiations slowly could hold all of the
 * node's memory. Bytes are charged as they arrive and given back when the request is done with
 * them; a request that would go past either bound is refused with a retryable Busy.
 */
import { Busy } from '../util/Busy.js';

export class MemoryBudget {
  readonly #total: number;
  readonly #share: number;
  #held = 0;
  readonly #byOwner = new Map<string, number>();

  constructor(total: number, share: number) {
    this.#total = total;
    this.#share = share;
  }

  /** Bytes held now, by every request. */
  get held(): number {
    return this.#held;
  }

  /** An account for one request of `owner` (a token, or an anonymous client's address). */
  reserve(owner: string): Reservation {
    let mine = 0;
    let released = false;
    return {
      add: (bytes: number) => {
        if (released) return;
        const owners = this.#byOwner.get(owner) ?? 0;
        if (owners + bytes > this.#share) {
          throw new Busy(
            `narwal: busy: this client's fetch requests already hold ${owners} bytes on this server (at most ${this.#share}); retry when one has finished`,
          );
        }
        if (this.#held + bytes > this.#total) {
          throw new Busy('narwal: busy: too many fetch requests are being read at once; retry in a moment');
        }
        mine += bytes;
        this.#held += bytes;
        this.#byOwner.set(owner, owners + bytes);
      },
      release: () => {
        if (released) return;
        released = true;
        this.#held -= mine;
        const left = (this.#byOwner.get(owner) ?? mine) - mine;
        if (left <= 0) this.#byOwner.delete(owner);
        else this.#byOwner.set(owner, left);
      },
    };
  }
}

export interface Reservation {
  /** Charges `bytes` more; throws Busy (charging nothing) past the owner's share or the total. */
  add(bytes: number): void;
  /** Gives every byte charged back; later calls do nothing. */
  release(): void;
}
