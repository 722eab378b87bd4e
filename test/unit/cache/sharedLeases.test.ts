/**
 * One lease record per generation per node, shared by its requests: counted in a real (file)
 * presence store, with the clock moved by hand and the release timers real.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { leasePrefix, repoPartition } from '../../../lib/cache/leases.js';
import { SharedLeases } from '../../../lib/cache/sharedLeases.js';
import { ObjectPresenceStore } from '../../../lib/presence/ObjectPresenceStore.js';
import type { PresenceRecord, PresenceStore } from '../../../lib/presence/PresenceStore.js';
import { FsObjectStore } from '../../../lib/store/FsObjectStore.js';
import { eventually } from '../../helpers/eventually.js';

/** Joining is allowed for a third of this: 100 ms. */
const TTL_MS = 300;
let root: string;
let clock: number;
let presence: PresenceStore;
let creates: number;

function leases(store: PresenceStore = presence): SharedLeases {
  return new SharedLeases({ presence: store, owner: 'node', ttlMs: TTL_MS, now: () => clock });
}

const records = (generation: string) => presence.list(repoPartition('r'), leasePrefix(generation));

beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), 'narwal-shared-leases-'));
  clock = Date.now();
  creates = 0;
  const store = new ObjectPresenceStore({
    store: new FsObjectStore(root, { keepEmptyDirs: true }),
    now: () => clock,
  });
  presence = {
    tryCreate: (record: PresenceRecord) => {
      creates++;
      return store.tryCreate(record);
    },
    renew: (...args) => store.renew(...args),
    release: (...args) => store.release(...args),
    get: (...args) => store.get(...args),
    list: (...args) => store.list(...args),
  };
});

afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

describe('SharedLeases', () => {
  it('shares one record between requests, also those that arrive while it is being taken', async () => {
    const shared = leases();
    const [a, b] = await Promise.all([shared.take('r', 'g1'), shared.take('r', 'g1')]);
    const c = await shared.take('r', 'g1');
    expect([a.joined, b.joined, c.joined]).toEqual([false, true, true]);
    expect(creates).toBe(1);
    expect(await records('g1')).toHaveLength(1);
    await Promise.all([a.release(), b.release(), c.release()]);
  });

  it('keeps a record nobody holds while it may be joined, then releases it', async () => {
    const shared = leases();
    const first = await shared.take('r', 'g1');
    await first.release();
    expect(await records('g1')).toHaveLength(1);
    const next = await shared.take('r', 'g1');
    expect(next.joined).toBe(true);
    await next.release();
    expect(await eventually(async () => (await records('g1')).length === 0, { withinMs: 1_000 })).toBe(true);
    expect(creates).toBe(1);
  });

  it('takes a record of its own once the shared one is a third of its period old', async () => {
    const shared = leases();
    const first = await shared.take('r', 'g1');
    clock += TTL_MS / 3;
    const second = await shared.take('r', 'g1');
    expect(second.joined).toBe(false);
    expect(await records('g1')).toHaveLength(2);
    // The old one goes with its last user; the new one is kept for a while.
    await first.release();
    expect(await records('g1')).toHaveLength(1);
    await second.release();
    expect(await records('g1')).toHaveLength(1);
  });

  it('releases a record nobody holds when a newer one replaces it', async () => {
    const shared = leases();
    await (await shared.take('r', 'g1')).release();
    clock += TTL_MS / 3;
    const second = await shared.take('r', 'g1');
    expect(second.joined).toBe(false);
    expect(await eventually(async () => (await records('g1')).length === 1, { withinMs: 1_000 })).toBe(true);
    await second.release();
  });

  it("keeps only the repository's newest generation: an older one goes with its last user", async () => {
    const shared = leases();
    const old = await shared.take('r', 'g1');
    const newer = await shared.take('r', 'g2');
    await newer.release();
    await old.release();
    expect(await records('g1')).toHaveLength(0);
    expect(await records('g2')).toHaveLength(1);
  });

  it('lets the newest generation kept for requests to come go as soon as one comes for a newer one', async () => {
    // A push every few milliseconds: each generation was the newest for a moment, and is not
    // kept for the whole join window once the next one is leased.
    const shared = leases();
    await (await shared.take('r', 'g1')).release();
    expect(await records('g1')).toHaveLength(1);
    const newer = await shared.take('r', 'g2');
    // Well inside g1's join window (100 ms).
    await sleep(20);
    expect(await records('g1')).toHaveLength(0);
    await newer.release();
    expect(await records('g2')).toHaveLength(1);
    // Still joinable, and the only one kept.
    expect((await shared.take('r', 'g2')).joined).toBe(true);
    expect(creates).toBe(2);
  });

  it('lets nobody join a lease discarded (its generation was gone)', async () => {
    const shared = leases();
    const first = await shared.take('r', 'g1');
    await first.discard();
    expect(await records('g1')).toHaveLength(0);
    const again = await shared.take('r', 'g1');
    expect(again.joined).toBe(false);
    await again.release();
  });

  it('fails every request waiting for a record that could not be taken, and tries again for the next', async () => {
    let fail = true;
    const flaky: PresenceStore = {
      ...presence,
      tryCreate: async (record) => {
        if (fail) throw new Error('presence unavailable');
        return presence.tryCreate(record);
      },
    };
    const shared = leases(flaky);
    const results = await Promise.allSettled([shared.take('r', 'g1'), shared.take('r', 'g1')]);
    expect(results.map((r) => r.status)).toEqual(['rejected', 'rejected']);
    fail = false;
    const hold = await shared.take('r', 'g1');
    expect(hold.joined).toBe(false);
    expect(await records('g1')).toHaveLength(1);
    await hold.release();
  });

  it('lets go at once of the records kept for requests to come, and of none in use', async () => {
    const shared = leases();
    await (await shared.take('r', 'g1')).release();
    const used = await shared.take('r', 'g2');
    await shared.releaseUnheld();
    expect(await records('g1')).toHaveLength(0);
    expect(await records('g2')).toHaveLength(1);
    expect((await shared.take('r', 'g1')).joined).toBe(false);
    await used.release();
  });
});
