import { describe, expect, it } from 'vitest';
import { FsObjectStore } from '../../../lib/store/FsObjectStore.js';
import { DEFAULT_FOLD_POLICY, needsFold } from '../../../lib/wal/fold.js';
import { emptyIndex } from '../../../lib/wal/indexCodec.js';
import { Publisher } from '../../../lib/wal/Publisher.js';
import type { LogItem, RepoIndex } from '../../../lib/wal/types.js';
import { Wal } from '../../../lib/wal/Wal.js';
import { cmd, oid, push, useTempRoots, ZERO_OID } from './walHelpers.js';

const REPO = 'fold/me';
const POLICY = { maxTailItems: 4, maxTailUpdates: 100 };

function item(seq: number, updates: number): LogItem {
  return {
    seq,
    key: `k${seq}`,
    time: 't',
    who: { token: 't' },
    updates: Array.from({ length: updates }, (_, u) => ({
      ref: `refs/heads/${seq}-${u}`,
      old: ZERO_OID,
      new: oid(1),
    })),
    packs: [],
  };
}

function withTail(tail: LogItem[]): RepoIndex {
  return { ...emptyIndex('r', { public: false, now: new Date(0) }), seq: tail.length, tail };
}

describe('needsFold', () => {
  it('folds past the item bound or the update bound, not at them', () => {
    expect(needsFold(withTail([]), POLICY)).toBe(false);
    expect(needsFold(withTail([1, 2, 3, 4].map((s) => item(s, 1))), POLICY)).toBe(false);
    expect(needsFold(withTail([1, 2, 3, 4, 5].map((s) => item(s, 1))), POLICY)).toBe(true);
    expect(needsFold(withTail([item(1, 100)]), POLICY)).toBe(false);
    expect(needsFold(withTail([item(1, 60), item(2, 41)]), POLICY)).toBe(true);
    expect(DEFAULT_FOLD_POLICY).toEqual({ maxTailItems: 32, maxTailUpdates: 512 });
  });
});

describe('Publisher with folding', () => {
  const tempRoot = useTempRoots();

  it('keeps the tail bounded while segments and the table hold the whole log', async () => {
    const root = await tempRoot();
    const wal = new Wal(new FsObjectStore(root));
    await wal.createRepo(REPO, { public: false });
    const publisher = new Publisher(wal, { fold: POLICY, random: () => 0 });
    const n = 21;
    const expected = new Map<string, string>();
    const current = new Map<string, string>();
    for (let i = 1; i <= n; i++) {
      // Five refs, each updated repeatedly, and one created in the first segment and deleted in
      // the third, so a later table must drop a ref an earlier one holds.
      const ref = i === 2 || i === 13 ? 'refs/tags/doomed' : `refs/heads/r${i % 5}`;
      const old = current.get(ref) ?? ZERO_OID;
      const next = i === 13 ? ZERO_OID : oid(i);
      const result = await publisher.publish(push(REPO, [cmd(ref, old, next)]));
      expect(result.outcomes).toEqual([{ ref, ok: true, noop: false }]);
      expect(result.seq).toBe(i);
      expect(result.loaded.index.tail.length).toBeLessThanOrEqual(POLICY.maxTailItems);
      if (next === ZERO_OID) current.delete(ref);
      else current.set(ref, next);
    }
    for (const [k, v] of current) expected.set(k, v);

    const loaded = await wal.readIndexFully(REPO);
    if (loaded === null) throw new Error('index missing');
    const { index } = loaded;
    expect(index.seq).toBe(n);
    expect(index.tail.length).toBeLessThanOrEqual(POLICY.maxTailItems);
    // Segments cover 1..table.seq contiguously; the tail covers the rest.
    expect(index.segments.map((s) => [s.from, s.to])).toEqual([
      [1, 5],
      [6, 10],
      [11, 15],
      [16, 20],
    ]);
    let next = 1;
    for (const s of index.segments) {
      expect(s.from).toBe(next);
      expect(s.to).toBeGreaterThanOrEqual(s.from);
      next = s.to + 1;
    }
    expect(index.table?.seq).toBe(next - 1);
    expect(index.tail.map((t) => t.seq)).toEqual(Array.from({ length: n - next + 1 }, (_, i) => next + i));

    // The table holds every ref as of its seq, sorted, with its count.
    const table = await wal.refTableMap(index.table?.key ?? '');
    expect(index.table?.count).toBe(table.size);
    expect(Object.fromEntries(await wal.allRefs(index))).toEqual(Object.fromEntries(expected));
    expect(expected.has('refs/tags/doomed')).toBe(false);
    expect(
      Object.fromEntries(await wal.resolveRefs(index, [...expected.keys(), 'refs/tags/doomed'])),
    ).toEqual({
      ...Object.fromEntries(expected),
      'refs/tags/doomed': ZERO_OID,
    });

    for (const k of [0, 1, 3, 5, 6, 9, 12, next - 2, next - 1, next, n - 1, n]) {
      const items = await wal.itemsAfter(index, k);
      expect(items.map((i) => i.seq)).toEqual(Array.from({ length: n - k }, (_, i) => k + i + 1));
    }

    // A node with empty caches reads the same store to the same refs and the same log.
    const fresh = new Wal(new FsObjectStore(root));
    const freshLoaded = await fresh.readIndex(REPO);
    if (freshLoaded === null) throw new Error('index missing');
    expect(freshLoaded.etag).toBe(loaded.etag);
    expect(await fresh.allRefs(freshLoaded.index)).toEqual(await wal.allRefs(index));
    expect(await fresh.itemsAfter(freshLoaded.index, 2)).toEqual(await wal.itemsAfter(index, 2));
    // Stored segments and tables are what the writer seeded into its own cache.
    for (const s of index.segments) {
      const segment = await fresh.segment(s.key);
      expect(segment.from).toBe(s.from);
      expect(segment.to).toBe(s.to);
      expect(segment.items.map((i) => i.seq)).toEqual(
        Array.from({ length: s.to - s.from + 1 }, (_, i) => s.from + i),
      );
    }
  });

  it('folds on the update bound when one push carries many refs', async () => {
    const wal = new Wal(new FsObjectStore(await tempRoot()));
    await wal.createRepo(REPO, { public: false });
    const publisher = new Publisher(wal, {
      fold: { maxTailItems: 100, maxTailUpdates: 10 },
      random: () => 0,
    });
    const many = Array.from({ length: 11 }, (_, i) => cmd(`refs/tags/t${i}`, ZERO_OID, oid(i + 1)));
    const result = await publisher.publish(push(REPO, many));
    expect(result.seq).toBe(1);
    expect(result.loaded.index.tail).toEqual([]);
    expect(result.loaded.index.segments.map((s) => [s.from, s.to])).toEqual([[1, 1]]);
    expect(result.loaded.index.table).toMatchObject({ seq: 1, count: 11 });
    const fresh = new Wal(wal.store);
    expect((await fresh.allRefs(result.loaded.index)).size).toBe(11);
    expect((await fresh.itemsAfter(result.loaded.index, 0)).map((i) => i.seq)).toEqual([1]);
  });
});
