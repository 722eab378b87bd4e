/**
 * One read lease per generation per node, shared by the node's requests. A lease record costs a
 * presence write to take and another to release, and a request waits for the first before its git
 * starts: every push and most fetches. Requests of one node that use one generation moments apart
 * (a push, then the fetch that follows; a storm of clones; the prewarm of a generation, then the
 * push that uses it) share one record instead.
 *
 * Sharing never stretches what a record promises. A request joins a lease only while the lease is
 * younger than a third of its period: the record was created with a whole period ahead, so it is
 * live whether or not a renewal has run since (a process frozen between requests, as a Lambda
 * sandbox is, runs no timers). After that, the next request takes a lease of its own. A record
 * nobody holds is kept only while it is the newest this node took for its repository and can
 * still be joined; so it outlives its last user by at most that third of a period, and only on the
 * generation requests are about to use: eviction of older ones is not delayed at all.
 */
import { type Held, type LeaseOptions, takeLease } from './leases.js';

export interface SharedHold extends Held {
  /** Joined a lease another request of this node took. */
  readonly joined: boolean;
  /** Ends this hold and the lease with it: what it leased turned out to be gone. */
  discard(): Promise<void>;
}

interface Shared {
  /** The record, once taken (requests that join while it is being taken wait for it). */
  readonly lease: Promise<Held>;
  readonly takenAt: number;
  users: number;
  timer?: NodeJS.Timeout;
}

/** Joining is allowed for at most this long, whatever the lease period. */
const MAX_JOIN_MS = 10_000;

export class SharedLeases {
  readonly #options: LeaseOptions;
  readonly #joinMs: number;
  readonly #leases = new Map<string, Shared>();
  /** The lease taken last per repository: the only one kept once nobody holds it. */
  readonly #latest = new Map<string, Shared>();
  /** Releases under way of records let go before their window closed. */
  readonly #releasing = new Set<Promise<void>>();

  constructor(options: LeaseOptions) {
    this.#options = options;
    this.#joinMs = Math.min(Math.floor(options.ttlMs / 3), MAX_JOIN_MS);
  }

  /** A hold on this node's lease of the generation, taken now if there is none to join. */
  async take(repo: string, generation: string): Promise<SharedHold> {
    const k = key(repo, generation);
    const joinable = this.#joinable(k);
    const shared = joinable ?? {
      lease: takeLease(this.#options, repo, generation),
      takenAt: this.#options.now(),
      users: 0,
    };
    if (!joinable) {
      // Too old to join and held by nobody: its release timer need not wait.
      const previous = this.#leases.get(k);
      if (previous && previous.users === 0) this.#drop(previous);
      this.#leases.set(k, shared);
      const latest = this.#latest.get(repo);
      this.#latest.set(repo, shared);
      // The repository's newest lease was another one, kept for requests to come and held by
      // nobody: they come for this one now, so that one goes now, not when its window closes.
      if (latest && latest !== previous && latest.users === 0) this.#drop(latest);
    }
    const hold = this.#hold(k, shared, joinable !== undefined, repo);
    try {
      await shared.lease;
    } catch (error) {
      // Not taken: nobody may join it, and this hold ends with it.
      await hold.discard();
      throw error;
    }
    return hold;
  }

  /**
   * Releases now the records kept for requests to come (a Lambda sandbox about to be frozen, a
   * node stopping, a test that wants the cache idle); records in use stay.
   */
  async releaseUnheld(): Promise<void> {
    const unheld = [...this.#leases].filter(([, shared]) => shared.users === 0);
    for (const [k, shared] of unheld) {
      clearTimeout(shared.timer);
      this.#leases.delete(k);
    }
    for (const [repo, shared] of this.#latest) if (shared.users === 0) this.#latest.delete(repo);
    await Promise.all([
      ...unheld.map(([, shared]) => shared.lease.then((lease) => lease.release()).catch(() => {})),
      ...this.#releasing,
    ]);
  }

  /** Releases a record nobody holds, and forgets it. */
  #drop(shared: Shared): void {
    clearTimeout(shared.timer);
    for (const [k, known] of this.#leases) if (known === shared) this.#leases.delete(k);
    const released: Promise<void> = shared.lease
      .then((lease) => lease.release())
      .catch(() => {})
      .finally(() => this.#releasing.delete(released));
    this.#releasing.add(released);
  }

  #joinable(k: string): Shared | undefined {
    const shared = this.#leases.get(k);
    return shared && this.#options.now() - shared.takenAt < this.#joinMs ? shared : undefined;
  }

  #hold(k: string, shared: Shared, joined: boolean, repo: string): SharedHold {
    shared.users++;
    clearTimeout(shared.timer);
    let done = false;
    const leave = (discard: boolean): Promise<void> => {
      if (done) return Promise.resolve();
      done = true;
      shared.users--;
      if (discard && this.#leases.get(k) === shared) this.#leases.delete(k);
      if (shared.users > 0) return Promise.resolve();
      // Only the repository's newest lease is kept: an older generation is left to eviction now.
      if (this.#leases.get(k) !== shared || this.#latest.get(repo) !== shared) {
        if (this.#leases.get(k) === shared) this.#leases.delete(k);
        if (this.#latest.get(repo) === shared) this.#latest.delete(repo);
        return shared.lease.then((lease) => lease.release()).catch(() => {});
      }
      // Kept for whoever comes while it can still be joined, then released.
      const left = shared.takenAt + this.#joinMs - this.#options.now();
      shared.timer = setTimeout(
        () => {
          if (shared.users > 0) return;
          if (this.#leases.get(k) === shared) this.#leases.delete(k);
          if (this.#latest.get(repo) === shared) this.#latest.delete(repo);
          void shared.lease.then((lease) => lease.release()).catch(() => {});
        },
        Math.max(0, left),
      );
      shared.timer.unref();
      return Promise.resolve();
    };
    return { joined, release: () => leave(false), discard: () => leave(true) };
  }
}

function key(repo: string, generation: string): string {
  return `${repo}\n${generation}`;
}
