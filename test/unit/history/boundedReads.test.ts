/**
 * Reading the log costs a bounded number of store reads whatever its length: a page of the log,
 * one entry, the refs after an old entry. Counted on a fresh reader over a log of 1,200 entries
 * (with checkpoints, and pushes wider than a log item shows).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildLongLog, fakeOid } from '../../../bench/longLog.js';
import { logPage } from '../../../lib/history/logPage.js';
import { refMoves } from '../../../lib/history/refMoves.js';
import { FsObjectStore } from '../../../lib/store/FsObjectStore.js';
import type { GetOptions, NotModified, ObjectStore, StoredObject } from '../../../lib/store/ObjectStore.js';
import { checkpointAt, itemAt, refsAt } from '../../../lib/wal/stateAt.js';
import type { RepoIndex } from '../../../lib/wal/types.js';
import { PAGE_SIZE } from '../../../lib/wal/types.js';
import { applyUpdates, Wal } from '../../../lib/wal/Wal.js';
import { ForwardingStore } from '../wal/walHelpers.js';

class ReadCounter extends ForwardingStore {
  gets: string[] = [];
  override get(key: string, options?: GetOptions): Promise<StoredObject | NotModified> {
    this.gets.push(key);
    return super.get(key, options);
  }
}

const REPO = 'team/long';
const ENTRIES = 1200;
let root: string;
let store: ObjectStore;
let index: RepoIndex;

/** A reader with nothing cached, counting its reads. */
async function freshReader(): Promise<{ wal: Wal; counter: ReadCounter }> {
  const counter = new ReadCounter(store);
  return { wal: new Wal(counter), counter };
}

describe('reads of a long log', () => {
  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), 'narwal-long-log-'));
    store = new FsObjectStore(root);
    await buildLongLog(store, REPO, { entries: ENTRIES, checkpointEvery: 100, wideEvery: 37 });
    const loaded = await new Wal(store).readIndex(REPO);
    index = (loaded as { index: RepoIndex }).index;
  }, 120_000);
  afterAll(async () => {
    await rm(root, { recursive: true, force: true });
  });

  it('lists any page of the log in at most three reads', async () => {
    expect(index.seq).toBe(ENTRIES);
    for (const before of [undefined, ENTRIES - 200, 601, 40, 2]) {
      const { wal, counter } = await freshReader();
      const slice = await logPage(wal, index, { limit: 50, ...(before ? { before } : {}) });
      const newest = before === undefined ? ENTRIES : before - 1;
      expect(slice.items[0]?.seq).toBe(newest);
      expect(slice.items.map((i) => i.seq)).toEqual(
        Array.from({ length: Math.min(50, newest) }, (_, k) => newest - k),
      );
      expect(counter.gets.length).toBeLessThanOrEqual(Math.ceil(50 / PAGE_SIZE) + 1);
    }
  });

  it('finds one entry in one read, and its whole update list in one more', async () => {
    const { wal, counter } = await freshReader();
    const wide = await itemAt(wal, index, 37);
    expect(counter.gets).toHaveLength(1);
    expect(wide.count).toBe(24);
    expect(wide.updates.length).toBeLessThan(24);
  });

  it('gives the refs after an old entry from the checkpoint before it plus a bounded replay', async () => {
    const { wal, counter } = await freshReader();
    const seq = 555;
    const checkpoint = await checkpointAt(wal, index, seq);
    expect(checkpoint?.seq).toBeLessThanOrEqual(seq);
    expect(seq - (checkpoint?.seq ?? 0)).toBeLessThanOrEqual(101);
    counter.gets = [];
    const refs = await refsAt(new Wal(counter), index, seq);
    // One page for the checkpoint, its table, the pages of the replay, and a few wide entries.
    expect(counter.gets.length).toBeLessThanOrEqual(1 + 1 + Math.ceil(101 / PAGE_SIZE) + 1 + 4);

    // The same refs as replaying the whole log from the start.
    const all = new Map();
    const full = new Wal(store);
    for (const item of await full.itemsAfter(index, 0, seq)) {
      const updates =
        item.count && item.count > item.updates.length ? (await full.entry(item.key)).updates : item.updates;
      applyUpdates(all, { updates });
    }
    expect(refs).toEqual(all);
    expect(refs.size).toBeGreaterThan(8);
    expect([...refs.values()].every((v) => v.oid.startsWith(fakeOid(1).slice(0, 4)))).toBe(true);
  });

  it('finds every move of a ref with one read per page of the log', async () => {
    const { wal, counter } = await freshReader();
    const moves = await refMoves(wal, index, 'refs/heads/b3');
    expect(moves.length).toBeGreaterThan(100);
    expect(moves.map((m) => m.seq)).toEqual([...moves.map((m) => m.seq)].sort((a, b) => b - a));
    for (const [i, m] of moves.entries()) if (i + 1 < moves.length) expect(m.old).toBe(moves[i + 1]?.new);
    const wideEntries = Math.ceil(ENTRIES / 37);
    expect(counter.gets.length).toBeLessThanOrEqual(Math.ceil(ENTRIES / PAGE_SIZE) + wideEntries);
  });
});
