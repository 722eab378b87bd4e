import { describe, expect, it } from 'vitest';
import { FsObjectStore } from '../../../lib/store/FsObjectStore.js';
import { withCheckpointTable, writeTable } from '../../../lib/wal/boundIndex.js';
import { emptyIndex, encodeJson } from '../../../lib/wal/indexCodec.js';
import { chunkKey, indexKey, pageKey, tableKey } from '../../../lib/wal/keys.js';
import { Publisher } from '../../../lib/wal/Publisher.js';
import { CHUNK_SIZE, PAGE_SIZE } from '../../../lib/wal/types.js';
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
      expect(index.tail.length).toBeLessThanOrEqual(CHUNK_SIZE);
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

  it('keeps items past the last full page in chunks, read whole by a node with empty caches', async () => {
    const root = await tempRoot();
    const wal = new Wal(new FsObjectStore(root));
    await wal.createRepo(REPO, { public: false });
    const publisher = new Publisher(wal, { random: () => 0 });
    const n = PAGE_SIZE + 3 * CHUNK_SIZE + 5;
    for (let i = 1; i <= n; i++)
      await publisher.publish(push(REPO, [cmd('refs/heads/main', i === 1 ? ZERO_OID : oid(i - 1), oid(i))]));
    const fresh = new Wal(new FsObjectStore(root));
    const loaded = await fresh.readIndex(REPO);
    if (loaded === null) throw new Error('index missing');
    const { index } = loaded;
    expect(index.paged).toBe(PAGE_SIZE);
    expect(index.chunked).toBe(PAGE_SIZE + 3 * CHUNK_SIZE);
    expect(index.tail.map((i) => i.seq)).toEqual([57, 58, 59, 60, 61]);
    const chunk = await fresh.chunk(index, PAGE_SIZE / CHUNK_SIZE + 1);
    expect(chunk.items.map((i) => i.seq)).toEqual([41, 42, 43, 44, 45, 46, 47, 48]);
    for (const k of [0, 31, 32, 33, 40, 47, 55, 56, 57, 60, 61]) {
      const items = await fresh.itemsAfter(index, k);
      expect(items.map((i) => i.seq)).toEqual(Array.from({ length: n - k }, (_, i) => k + i + 1));
    }
    expect((await fresh.itemsAfter(index, 30, 50)).map((i) => i.seq)).toEqual(
      Array.from({ length: 20 }, (_, i) => 31 + i),
    );
  });

  it('carries on from an index written before chunks, with its longer tail', async () => {
    const root = await tempRoot();
    const store = new FsObjectStore(root);
    const wal = new Wal(store);
    await wal.createRepo(REPO, { public: false });
    const publisher = new Publisher(wal, { random: () => 0 });
    const move = (i: number) => push(REPO, [cmd('refs/heads/main', i === 1 ? ZERO_OID : oid(i - 1), oid(i))]);
    for (let i = 1; i <= 20; i++) await publisher.publish(move(i));
    // The same log as an older version kept it: no chunks, every item past the last page in the tail.
    const current = await wal.readIndexFully(REPO);
    if (current === null) throw new Error('index missing');
    const { chunked: _dropped, ...rest } = current.index;
    const legacy = { ...rest, tail: await wal.itemsAfter(current.index, 0) };
    await store.put(indexKey(REPO), encodeJson(legacy), { ifMatch: current.etag });
    for (const c of [0, 1]) await store.delete(chunkKey(REPO, current.index.created, c));
    const older = new Wal(store);
    const reread = await older.readIndexFully(REPO);
    expect((await older.itemsAfter(reread?.index ?? legacy, 0)).map((i) => i.seq)).toHaveLength(20);
    const next = new Publisher(older, { random: () => 0 });
    for (let i = 21; i <= 40; i++) await next.publish(move(i));
    const after = await new Wal(store).readIndexFully(REPO);
    if (after === null) throw new Error('index missing');
    expect([after.index.paged, after.index.chunked]).toEqual([32, 32]);
    expect((await new Wal(store).itemsAfter(after.index, 0)).map((i) => i.seq)).toEqual(
      Array.from({ length: 40 }, (_, i) => i + 1),
    );
  });

  it('stores tables and pages gzip-compressed, and still reads those stored as plain JSON', async () => {
    const root = await tempRoot();
    const store = new FsObjectStore(root);
    const wal = new Wal(store);
    await wal.createRepo(REPO, { public: false });
    const publisher = new Publisher(wal, { policy: POLICY, random: () => 0 });
    for (let i = 1; i <= PAGE_SIZE + 1; i++)
      await publisher.publish(push(REPO, [cmd(`refs/heads/b${i}`, ZERO_OID, oid(i))]));
    const loaded = await wal.readIndexFully(REPO);
    if (loaded === null) throw new Error('index missing');
    const gzipped = async (key: string) => {
      const got = await store.get(key);
      return !got.notModified && got.body[0] === 0x1f && got.body[1] === 0x8b;
    };
    expect(await gzipped(pageKey(REPO, loaded.index.created, 0))).toBe(true);
    expect(loaded.index.tables.length).toBeGreaterThan(0);
    for (const t of loaded.index.tables) expect(await gzipped(t.key)).toBe(true);
    // A table an older version wrote: plain JSON under its key.
    const plain = { v: 1, seq: 1, rows: [['refs/heads/plain', oid(7)]] };
    const key = tableKey(REPO, 'f'.repeat(64));
    await store.put(key, encodeJson(plain));
    expect(await new Wal(store).table(key)).toEqual(plain);
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
