import { describe, expect, it } from 'vitest';
import { eventsAfter } from '../../../lib/events/PushEvent.js';
import { LockConflict, LockNotFound, LockNotOwned, TooManyLocks } from '../../../lib/lfs/errors.js';
import { LfsLocks } from '../../../lib/lfs/LfsLocks.js';
import { FsObjectStore } from '../../../lib/store/FsObjectStore.js';
import { Publisher } from '../../../lib/wal/Publisher.js';
import { Wal } from '../../../lib/wal/Wal.js';
import { useTempRoots } from '../wal/walHelpers.js';

const REPO = 'team/art';
const alice = { token: 'alice', tokenId: 'a1a1a1a1a1a1a1a1' };
const bob = { token: 'bob', tokenId: 'b2b2b2b2b2b2b2b2' };

describe('LFS locks in the log', () => {
  const tempRoot = useTempRoots();

  /** `n` nodes sharing one store, each with its own Wal and Publisher, as separate servers have. */
  async function nodes(n: number, options: { maxLocks?: number } = {}) {
    const root = await tempRoot();
    const first = new Wal(new FsObjectStore(root));
    await first.createRepo(REPO, { public: false });
    return Array.from({ length: n }, () => {
      const wal = new Wal(new FsObjectStore(root));
      return { wal, locks: new LfsLocks({ wal, publisher: new Publisher(wal), ...options }) };
    });
  }

  it('gives a path to exactly one of two nodes locking it at once, and records only that lock', async () => {
    const [one, two] = await nodes(2);
    if (!one || !two) throw new Error('no nodes');
    // Both nodes have read the index before either locks: the loser decides on a stale index first.
    await Promise.all([one.wal.readIndex(REPO), two.wal.readIndex(REPO)]);
    const outcomes = await Promise.allSettled([
      one.locks.lock(REPO, 'art/a.psd', alice),
      two.locks.lock(REPO, 'art/a.psd', bob),
    ]);
    expect(outcomes.filter((o) => o.status === 'fulfilled')).toHaveLength(1);
    const refused = outcomes.find((o) => o.status === 'rejected');
    expect(refused?.status === 'rejected' && refused.reason).toBeInstanceOf(LockConflict);
    const loaded = await one.wal.readIndexFully(REPO);
    if (!loaded) throw new Error('no index');
    expect((await one.locks.locks(loaded.index)).map((l) => l.path)).toEqual(['art/a.psd']);
    const items = await one.wal.itemsAfter(loaded.index, 0);
    expect(items.map((i) => [i.kind, i.lock?.action])).toEqual([['lock', 'lock']]);
  });

  it('lets only the holder release a lock unless forced, and refuses unknown ids and too many locks', async () => {
    const [node] = await nodes(1, { maxLocks: 2 });
    if (!node) throw new Error('no node');
    const { lock } = await node.locks.lock(REPO, 'b.psd', alice);
    await node.locks.lock(REPO, 'a.psd', alice);
    await expect(node.locks.lock(REPO, 'c.psd', bob)).rejects.toBeInstanceOf(TooManyLocks);
    await expect(node.locks.unlock(REPO, lock.id, bob, false)).rejects.toBeInstanceOf(LockNotOwned);
    await expect(node.locks.unlock(REPO, 'ffffffffffffffff', alice, false)).rejects.toBeInstanceOf(
      LockNotFound,
    );
    const forced = await node.locks.unlock(REPO, lock.id, bob, true);
    expect(forced.lock.owner.name).toBe('alice');
    const loaded = await node.wal.readIndexFully(REPO);
    if (!loaded) throw new Error('no index');
    const page = await node.locks.list(loaded.index, {});
    expect(page.locks.map((l) => l.path)).toEqual(['a.psd']);
    const verify = await node.locks.verify(loaded.index, { name: 'bob', tokenId: bob.tokenId }, {});
    expect([verify.ours.length, verify.theirs.length]).toEqual([0, 1]);
    const items = await node.wal.itemsAfter(loaded.index, 0);
    expect(items.at(-1)?.lock).toEqual({
      action: 'unlock',
      id: lock.id,
      path: 'b.psd',
      owner: { name: 'alice', tokenId: alice.tokenId },
      forced: true,
    });
    // The last unlock leaves no table behind in the index.
    await node.locks.unlock(REPO, page.locks[0]?.id ?? '', alice, false);
    expect((await node.wal.readIndexFully(REPO))?.index.lfsLocks).toBeUndefined();
  });

  it('makes an event of each lock and unlock that says which lock', async () => {
    const [node] = await nodes(1);
    if (!node) throw new Error('no node');
    const { lock } = await node.locks.lock(REPO, 'art/a.psd', alice);
    await node.locks.unlock(REPO, lock.id, alice, false);
    const loaded = await node.wal.readIndexFully(REPO);
    if (!loaded) throw new Error('no index');
    const events = await eventsAfter(node.wal, loaded.index, 0, 10);
    expect(events.map((e) => [e.kind, e.lock?.action, e.lock?.path, e.who.token])).toEqual([
      ['lock', 'lock', 'art/a.psd', 'alice'],
      ['lock', 'unlock', 'art/a.psd', 'alice'],
    ]);
  });

  it('pages locks by path and refuses paths that name no file', async () => {
    const [node] = await nodes(1);
    if (!node) throw new Error('no node');
    for (const path of ['c', 'a', 'e', 'b', 'd']) await node.locks.lock(REPO, `dir/${path}.bin`, alice);
    const loaded = await node.wal.readIndexFully(REPO);
    if (!loaded) throw new Error('no index');
    const first = await node.locks.list(loaded.index, { limit: 2 });
    expect(first.locks.map((l) => l.path)).toEqual(['dir/a.bin', 'dir/b.bin']);
    const second = await node.locks.list(loaded.index, { limit: 2, cursor: first.next_cursor ?? '' });
    expect(second.locks.map((l) => l.path)).toEqual(['dir/c.bin', 'dir/d.bin']);
    for (const path of ['', '/abs', 'a/../b', 'a//b', 'tab\there', './a'])
      await expect(node.locks.lock(REPO, path, alice), JSON.stringify(path)).rejects.toThrow(
        /invalid path to lock/,
      );
  });
});
