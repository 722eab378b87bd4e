/**
 * Read leases and the writer lock, as presence records under `repo#<repo>`. A lease says "this
 * invocation serves this generation until T" and is renewed while the transfer runs, so a reader
 * that dies stops counting within one lease period. The writer lock marks whoever builds a
 * generation or evicts; readers never take it.
 */
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { PresenceStore } from '../presence/PresenceStore.js';

export interface Held {
  release(): Promise<void>;
}

/**
 * The writer lock. Whoever acts under it asks `held()` right before an act another holder's work
 * could be hurt by: its renewal timer is no proof, since a process that was frozen (a Lambda
 * sandbox between invocations, SIGSTOP) or stalled past the expiry finds the lock taken over by
 * someone else, and its timer's renewals fail without it hearing of it.
 */
export interface Lock extends Held {
  /** Whether the presence record still names this acquisition and is live by the clock now. */
  held(): Promise<boolean>;
}

export interface LeaseOptions {
  readonly presence: PresenceStore;
  /** Who holds records made here (a node or invocation id). */
  readonly owner: string;
  readonly ttlMs: number;
  readonly now: () => number;
}

export const repoPartition = (repo: string) => `repo#${repo}`;
export const leasePrefix = (generation: string) => `lease#${generation}#`;
export const WRITER = 'writer';

/** No transfer holds a record longer than this: a holder that forgot to release stops counting. */
const MAX_HOLD_MS = 60 * 60_000;

/**
 * Keeps a record alive until released: renewed every third of its period, for at most MAX_HOLD_MS.
 * `owner` is unique to this acquisition, so a holder whose record lapsed and was taken over by
 * another request of the same node can neither renew nor release the newcomer's record.
 */
function keepAlive(options: LeaseOptions, key: string, id: string, owner: string): Held {
  const until = options.now() + MAX_HOLD_MS;
  const timer = setInterval(
    () => {
      if (options.now() > until) {
        clearInterval(timer);
        return;
      }
      void options.presence.renew(key, id, owner, options.now() + options.ttlMs).catch(() => {});
    },
    Math.max(1000, Math.floor(options.ttlMs / 3)),
  );
  timer.unref();
  let released = false;
  return {
    async release() {
      if (released) return;
      released = true;
      clearInterval(timer);
      await options.presence.release(key, id, owner).catch(() => {});
    },
  };
}

export async function takeLease(options: LeaseOptions, repo: string, generation: string): Promise<Held> {
  const key = repoPartition(repo);
  const id = `${leasePrefix(generation)}${randomUUID()}`;
  const owner = acquisitionOwner(options);
  await options.presence.tryCreate({
    key,
    id,
    owner,
    expiresAt: options.now() + options.ttlMs,
    data: { generation },
  });
  return keepAlive(options, key, id, owner);
}

/** The writer lock of a repository's cache, or null when someone else holds it. */
export async function tryWriterLock(
  options: LeaseOptions,
  repo: string,
  purpose: string,
): Promise<Lock | null> {
  const key = repoPartition(repo);
  const owner = acquisitionOwner(options);
  const created = await options.presence.tryCreate({
    key,
    id: WRITER,
    owner,
    expiresAt: options.now() + options.ttlMs,
    data: { purpose },
  });
  if (!created) return null;
  const held = keepAlive(options, key, WRITER, owner);
  return {
    release: () => held.release(),
    async held() {
      const record = await options.presence.get(key, WRITER);
      return record !== null && record.owner === owner;
    },
  };
}

/** Waits until `ready()` holds or the writer lock is free to take; polls, bounded by `timeoutMs`. */
export async function waitForWriter(
  options: LeaseOptions,
  repo: string,
  ready: () => Promise<boolean>,
  timeoutMs: number,
): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  for (let delay = 5; Date.now() < deadline; delay = Math.min(100, delay * 2)) {
    if (await ready()) return true;
    if ((await options.presence.get(repoPartition(repo), WRITER)) === null) return false;
    await sleep(delay);
  }
  return ready();
}

function acquisitionOwner(options: LeaseOptions): string {
  return `${options.owner}/${randomUUID().slice(0, 8)}`;
}
