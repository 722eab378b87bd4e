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
  readonly repo: string;
  /** Its key in the map of leases (repository and generation). */
  readonly key: string;
  /** The record, once taken (requests that join while it is being taken wait for it). */
  readonly lease: Promise<Held>;
  readonly takenAt: number;
  users: number;
  timer?: NodeJS.Timeout;
  /** Released (or being released): it is never released twice. */
  dropped?: boolean;
}

/** Joining is allowed for at most this long, whatever the lease period. */
const MAX_JOIN_MS = 10_000;

export class SharedLeases {
  readonly #options: LeaseOptions;
  readonly #joinMs: number;
  readonly #leases = new Map<string, Shared>();
  /** The lease taken last per repository: the only one kept once nobody holds it. */
  readonly #latest = new Map<string, Shared>();
  /** Releases under way (releaseUnheld waits for them). */
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
      repo,
      key: k,
      lease: takeLease(this.#options, repo, generation),
      takenAt: this.#options.now(),
      users: 0,
    };
    if (!joinable) {
      // Too old to join and held by nobody: its release timer need not wait.
      const previous = this.#leases.get(k);
      if (previous && previous.users === 0) this.#drop(previous);
      // The repository's newest lease was another one, kept for requests to come and held by
      // nobody: they come for this one now, so that one goes now, not when its window closes.
      const latest = this.#latest.get(repo);
      if (latest && latest.users === 0) this.#drop(latest);
      this.#leases.set(k, shared);
      this.#latest.set(repo, shared);
    }
    const hold = this.#hold(shared, joinable !== undefined);
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
    for (const shared of [...this.#leases.values(), ...this.#latest.values()])
      if (shared.users === 0) this.#drop(shared);
    await Promise.all([...this.#releasing]);
  }

  /** Releases a record nobody holds (once), and forgets it. */
  #drop(shared: Shared): Promise<void> {
    clearTimeout(shared.timer);
    if (this.#leases.get(shared.key) === shared) this.#leases.delete(shared.key);
    if (this.#latest.get(shared.repo) === shared) this.#latest.delete(shared.repo);
    if (shared.dropped) return Promise.resolve();
    shared.dropped = true;
    const released: Promise<void> = shared.lease
      .then((lease) => lease.release())
      .catch(() => {})
      .finally(() => this.#releasing.delete(released));
    this.#releasing.add(released);
    return released;
  }

  #joinable(k: string): Shared | undefined {
    const shared = this.#leases.get(k);
    return shared && this.#options.now() - shared.takenAt < this.#joinMs ? shared : undefined;
  }

  #hold(shared: Shared, joined: boolean): SharedHold {
    shared.users++;
    clearTimeout(shared.timer);
    let done = false;
    const leave = (discard: boolean): Promise<void> => {
      if (done) return Promise.resolve();
      done = true;
      shared.users--;
      if (discard && this.#leases.get(shared.key) === shared) this.#leases.delete(shared.key);
      if (shared.users > 0) return Promise.resolve();
      // Only the repository's newest lease is kept: an older generation is left to eviction now.
      if (this.#leases.get(shared.key) !== shared || this.#latest.get(shared.repo) !== shared)
        return this.#drop(shared);
      // Kept for whoever comes while it can still be joined, then released.
      const left = shared.takenAt + this.#joinMs - this.#options.now();
      shared.timer = setTimeout(() => shared.users === 0 && void this.#drop(shared), Math.max(0, left));
      shared.timer.unref();
      return Promise.resolve();
    };
    return { joined, release: () => leave(false), discard: () => leave(true) };
  }
}

function key(repo: string, generation: string): string {
  return `${repo}\n${generation}`;
}
