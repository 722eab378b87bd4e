import { describe, expect, it } from 'vitest';
import { FsObjectStore } from '../../../lib/store/FsObjectStore.js';
import { withCheckpointTable, writeTable } from '../../../lib/wal/boundIndex.js';
import { emptyIndex } from '../../../lib/wal/indexCodec.js';
import { Publisher } from '../../../lib/wal/Publisher.js';
import { PAGE_SIZE } from '../../../lib/wal/types.js';
import { Wal } from '../../../lib/wal/Wal.js';
import { CountingStore, cmd, isIndexKey, oid, oidsOf, push, useTempRoots, ZERO_OID } from './walHelpers.js';

const REPO = 'bound/me';
const POLICY = { maxRecentRows: 4, geometricFactor: 2 };

describe('the index stays bounded', () => {
  const tempRoot = useTempRoots();

  it('pages the log and stacks ref tables while every read sees the whole log and every ref', async () => {
    const root = await tempRoot();
    const wal = new Wal(new FsObjectStore(root));
    await wal.createRepo(REPO, { public: false });
    const publisher = new Publisher(wal, { policy: POLICY, random: () => 0 });
    const n = 3 * PAGE_SIZE + 7;
    const current = new Map<string, string>();
    for (let i = 1; i <= n; i++) {
      // Refs updated again and again, new refs, and one ref created early and deleted later, so
      // a newer table must hide a ref an older one holds.
      const ref = i === 2 || i === 50 ? 'refs/tags/doomed' : `refs/heads/r${i % 11}-${Math.floor(i / 40)}`;
      const old = current.get(ref) ?? ZERO_OID;
      const next = i === 50 ? ZERO_OID : oid(i);
      const result = await publisher.publish(push(REPO, [cmd(ref, old, next)]));
      expect(result.outcomes).toEqual([{ ref, ok: true, noop: false }]);
      expect(result.seq).toBe(i);
      const { index } = result.loaded;
      expect(index.tail.length).toBeLessThanOrEqual(PAGE_SIZE);
      expect(index.recent.length).toBeLessThanOrEqual(POLICY.maxRecentRows);
      // Geometric above the bottom (which only a checkpoint replaces): each delta table has more
      // than twice the rows of the one above it, so the stack stays logarithmic.
      for (let t = 2; t < index.tables.length; t++) {
        expect((index.tables[t - 1]?.count ?? 0) > 2 * (index.tables[t]?.count ?? 0)).toBe(true);
      }
      if (next === ZERO_OID) current.delete(ref);
      else current.set(ref, next);
    }
    const loaded = await wal.readIndexFully(REPO);
    if (loaded === null) throw new Error('index missing');
    const { index } = loaded;
    expect(index.seq).toBe(n);
    expect(index.paged).toBe(3 * PAGE_SIZE);
    expect(index.tail.map((t) => t.seq)).toEqual(Array.from({ length: 7 }, (_, i) => 3 * PAGE_SIZE + i + 1));
    expect(oidsOf(await wal.allRefs(index))).toEqual(Object.fromEntries(current));
    expect(current.has('refs/tags/doomed')).toBe(false);
    expect(Object.fromEntries(await wal.resolveRefs(index, [...current.keys(), 'refs/tags/doomed']))).toEqual(
      {
        ...Object.fromEntries(current),
        'refs/tags/doomed': ZERO_OID,
      },
    );
    for (const k of [0, 1, 31, 32, 33, 63, 64, 95, 96, n - 1, n]) {
      const items = await wal.itemsAfter(index, k);
      expect(items.map((i) => i.seq)).toEqual(Array.from({ length: n - k }, (_, i) => k + i + 1));
    }
    expect((await wal.itemsAfter(index, 10, 40)).map((i) => i.seq)).toEqual(
      Array.from({ length: 30 }, (_, i) => 11 + i),
    );

    // A node with empty caches reads the same store to the same refs and the same log.
    const fresh = new Wal(new FsObjectStore(root));
    const freshLoaded = await fresh.readIndex(REPO);
    if (freshLoaded === null) throw new Error('index missing');
    expect(freshLoaded.etag).toBe(loaded.etag);
    expect(await fresh.allRefs(freshLoaded.index)).toEqual(await wal.allRefs(index));
    expect(await fresh.itemsAfter(freshLoaded.index, 2)).toEqual(await wal.itemsAfter(index, 2));
    for (let page = 0; page < 3; page++) {
      const stored = await fresh.page(freshLoaded.index, page);
      expect(stored.items.map((i) => i.seq)).toEqual(
        Array.from({ length: PAGE_SIZE }, (_, i) => page * PAGE_SIZE + i + 1),
      );
    }
  });

  it('costs a push the same two writes and a bounded index at 10 refs and at 10,000', async () => {
    const sizes: number[] = [];
    for (const refs of [10, 10_000]) {
      const inner = new FsObjectStore(await tempRoot());
      const store = new CountingStore(inner);
      const wal = new Wal(store);
      await wal.createRepo(REPO, { public: false });
      const publisher = new Publisher(wal, { random: () => 0 });
      const many = Array.from({ length: refs }, (_, i) => cmd(`refs/tags/t${i}`, ZERO_OID, oid(i + 1)));
      await publisher.publish(push(REPO, many));
      // A further push of one ref, from a process that has never seen the repository.
      const cold = new CountingStore(inner);
      const coldPublisher = new Publisher(new Wal(cold), { random: () => 0 });
      const result = await coldPublisher.publish(push(REPO, [cmd('refs/heads/main', ZERO_OID, oid(1))]));
      expect(result.seq).toBe(2);
      // The entry, then the index CAS: nothing that grows with the number of refs is rewritten.
      expect(cold.puts.map((p) => (isIndexKey(p.key) ? 'index' : p.key.split('/')[3]))).toEqual([
        'entries',
        'index',
      ]);
      sizes.push((await inner.head(`repos/${REPO}.git/index.json`)).size);
    }
    // Small at both sizes: log items show at most MAX_ITEM_UPDATES updates, refs live in tables.
    for (const size of sizes) expect(size).toBeLessThan(4096);
  });

  it('puts a checkpoint table under the tables newer than the checkpoint', async () => {
    const wal = new Wal(new FsObjectStore(await tempRoot()));
    const store = wal.store;
    const t1 = await writeTable(wal, store, REPO, 10, [['refs/heads/a', oid(1)]]);
    const t2 = await writeTable(wal, store, REPO, 20, [['refs/heads/b', oid(2)]]);
    const t3 = await writeTable(wal, store, REPO, 30, [['refs/heads/a', ZERO_OID]]);
    const cp = await writeTable(wal, store, REPO, 25, [
      ['refs/heads/a', oid(1)],
      ['refs/heads/b', oid(2)],
    ]);
    const index = { ...emptyIndex(REPO, { public: false, now: new Date(0) }), seq: 31, tables: [t1, t2, t3] };
    const pointer = { seq: 25, key: 'k', table: cp.key, count: cp.count, packs: [], bytes: 0 };
    const replaced = withCheckpointTable(index, pointer);
    expect(replaced.tables.map((t) => t.key)).toEqual([cp.key, t3.key]);
    expect(oidsOf(await wal.allRefs(replaced))).toEqual(oidsOf(await wal.allRefs(index)));
    expect(oidsOf(await wal.allRefs(replaced))).toEqual({ 'refs/heads/b': oid(2) });
    // A checkpoint older than the bottom table changes nothing.
    const old = { ...pointer, seq: 5 };
    expect(withCheckpointTable(index, old)).toBe(index);
  });
});
