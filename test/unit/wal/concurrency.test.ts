import { describe, expect, it } from 'vitest';
import { PreconditionFailed } from '../../../lib/store/errors.js';
import { FsObjectStore } from '../../../lib/store/FsObjectStore.js';
import type {
  GetOptions,
  NotModified,
  PutBody,
  PutOptions,
  PutResult,
  StoredObject,
} from '../../../lib/store/ObjectStore.js';
import { Publisher, type PublishResult } from '../../../lib/wal/Publisher.js';
import { Wal } from '../../../lib/wal/Wal.js';
import { CountingStore, cmd, oid, oidsOf, push, useTempRoots, ZERO_OID } from './walHelpers.js';

const REPO = 'team/app';

/** Backoff with jitter so two nodes do not retry in lockstep, but short enough for a unit test. */
const NODE_OPTIONS = { backoffBaseMs: 1, backoffCapMs: 8 };

function seqs(results: readonly PublishResult[]): number[] {
  return results.map((r) => r.seq).filter((s): s is number => s !== null);
}

describe('Publisher: group commit on one node', () => {
  const tempRoot = useTempRoots();

  it('lands many concurrent pushes to distinct refs with dense seqs and few index writes', async () => {
    const inner = new FsObjectStore(await tempRoot());
    const store = new CountingStore(inner);
    const wal = new Wal(store);
    await wal.createRepo(REPO, { public: false });
    const publisher = new Publisher(wal, { random: () => 0 });
    const n = 24;
    const results = await Promise.all(
      Array.from({ length: n }, (_, i) =>
        publisher.publish(push(REPO, [cmd(`refs/heads/b${i}`, ZERO_OID, oid(i + 1))])),
      ),
    );
    for (const [i, r] of results.entries()) {
      expect(r.outcomes).toEqual([{ ref: `refs/heads/b${i}`, ok: true, noop: false }]);
    }
    expect(seqs(results).sort((a, b) => a - b)).toEqual(Array.from({ length: n }, (_, i) => i + 1));
    // Group commit: whoever waits while a CAS is in flight joins the next one.
    expect(store.indexCasCount()).toBeLessThanOrEqual(2);

    const loaded = await new Wal(inner).readIndex(REPO);
    if (loaded === null) throw new Error('index missing');
    expect(loaded.index.seq).toBe(n);
    const items = await wal.itemsAfter(loaded.index, 0);
    expect(items.map((i) => i.seq)).toEqual(Array.from({ length: n }, (_, i) => i + 1));
    // Each push's seq names the item holding exactly its update.
    for (const [i, r] of results.entries()) {
      const item = items.find((it) => it.seq === r.seq);
      expect(item?.updates).toEqual([{ ref: `refs/heads/b${i}`, old: ZERO_OID, new: oid(i + 1) }]);
    }
    const refs = await wal.allRefs(loaded.index);
    expect(refs.size).toBe(n);
  });

  it('refuses all but one of concurrent pushes of the same ref from the same old value', async () => {
    const wal = new Wal(new FsObjectStore(await tempRoot()));
    await wal.createRepo(REPO, { public: false });
    const publisher = new Publisher(wal, { random: () => 0 });
    const results = await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        publisher.publish(push(REPO, [cmd('refs/heads/main', ZERO_OID, oid(i + 1))])),
      ),
    );
    const winners = results.filter((r) => r.outcomes[0]?.ok === true);
    expect(winners).toHaveLength(1);
    expect(
      results.filter((r) => r.outcomes[0]?.ok === false && r.outcomes[0].reason === 'fetch first'),
    ).toHaveLength(9);
    const winner = results.indexOf(winners[0] as PublishResult);
    const loaded = await new Wal(wal.store).readIndex(REPO);
    if (loaded === null) throw new Error('index missing');
    expect(loaded.index.seq).toBe(1);
    expect(oidsOf(await wal.allRefs(loaded.index))).toEqual({
      'refs/heads/main': oid(winner + 1),
    });
  });
});

describe('Publisher: two nodes sharing one store', () => {
  const tempRoot = useTempRoots();

  async function twoNodes() {
    const root = await tempRoot();
    // Separate store instances on one directory, as two processes would have.
    const walA = new Wal(new FsObjectStore(root));
    const walB = new Wal(new FsObjectStore(root));
    await walA.createRepo(REPO, { public: false });
    return {
      root,
      walA,
      walB,
      a: new Publisher(walA, NODE_OPTIONS),
      b: new Publisher(walB, NODE_OPTIONS),
    };
  }

  it('lands every push when two nodes race distinct refs', async () => {
    const { root, a, b } = await twoNodes();
    const n = 20;
    const results = await Promise.all(
      Array.from({ length: n }, (_, i) =>
        (i % 2 === 0 ? a : b).publish(push(REPO, [cmd(`refs/heads/r${i}`, ZERO_OID, oid(i + 1))])),
      ),
    );
    for (const [i, r] of results.entries()) {
      expect(r.outcomes).toEqual([{ ref: `refs/heads/r${i}`, ok: true, noop: false }]);
    }
    expect(seqs(results).sort((x, y) => x - y)).toEqual(Array.from({ length: n }, (_, i) => i + 1));
    const fresh = new Wal(new FsObjectStore(root));
    const loaded = await fresh.readIndex(REPO);
    if (loaded === null) throw new Error('index missing');
    expect(loaded.index.seq).toBe(n);
    expect(oidsOf(await fresh.allRefs(loaded.index))).toEqual(
      Object.fromEntries(Array.from({ length: n }, (_, i) => [`refs/heads/r${i}`, oid(i + 1)])),
    );
    const items = await fresh.itemsAfter(loaded.index, 0);
    expect(items.map((i) => i.seq)).toEqual(Array.from({ length: n }, (_, i) => i + 1));
  });

  it('takes pushes that arrive while it lost a race into its retry: one CAS for all of them', async () => {
    const inner = new FsObjectStore(await tempRoot());
    await new Wal(inner).createRepo(REPO, { public: false });
    let publisher: Publisher | undefined;
    let late: Promise<PublishResult> | undefined;
    /** The first CAS loses (another node won) while a second push arrives at this node. */
    class LosingOnce extends CountingStore {
      override async put(key: string, body: PutBody, options?: PutOptions): Promise<PutResult> {
        if (key.endsWith('/index.json') && options?.ifMatch !== undefined && late === undefined) {
          late = publisher?.publish(push(REPO, [cmd('refs/heads/late', ZERO_OID, oid(2))]));
          this.puts.push({ key, options });
          throw new PreconditionFailed(key);
        }
        return super.put(key, body, options);
      }
    }
    const store = new LosingOnce(inner);
    publisher = new Publisher(new Wal(store), NODE_OPTIONS);
    const first = await publisher.publish(push(REPO, [cmd('refs/heads/first', ZERO_OID, oid(1))]));
    const second = await late;
    expect(first.outcomes).toEqual([{ ref: 'refs/heads/first', ok: true, noop: false }]);
    expect(second?.outcomes).toEqual([{ ref: 'refs/heads/late', ok: true, noop: false }]);
    expect([first.seq, second?.seq]).toEqual([1, 2]);
    // The lost CAS, then one that carried both pushes.
    expect(store.indexCasCount()).toBe(2);
    expect(second?.loaded.etag).toBe(first.loaded.etag);
  });

  it('reads the index beside each CAS once it lost a race, so the next lost race retries at once', async () => {
    const inner = new FsObjectStore(await tempRoot());
    await new Wal(inner).createRepo(REPO, { public: false });
    /** Index operations of node A, in the order A starts them. */
    const ops: string[] = [];
    class Tracing extends CountingStore {
      override get(key: string, options?: GetOptions): Promise<StoredObject | NotModified> {
        if (key.endsWith('/index.json')) ops.push('read');
        return super.get(key, options);
      }
      override put(key: string, body: PutBody, options?: PutOptions): Promise<PutResult> {
        if (key.endsWith('/index.json')) ops.push('cas');
        return super.put(key, body, options);
      }
    }
    const a = new Publisher(new Wal(new Tracing(inner)), NODE_OPTIONS);
    const b = new Publisher(new Wal(inner), NODE_OPTIONS);
    const landed: (number | null)[] = [];
    landed.push((await a.publish(push(REPO, [cmd('refs/heads/a1', ZERO_OID, oid(1))]))).seq);
    // B moves the index on; A's next CAS starts from the index it knows and loses.
    landed.push((await b.publish(push(REPO, [cmd('refs/heads/b1', ZERO_OID, oid(2))]))).seq);
    ops.length = 0;
    landed.push((await a.publish(push(REPO, [cmd('refs/heads/a2', ZERO_OID, oid(3))]))).seq);
    // Not yet contended: the lost CAS, then a read before anything else, then the CAS that lands
    // (from here on with a read beside it).
    expect(ops).toEqual(['cas', 'read', 'read', 'cas']);
    landed.push((await b.publish(push(REPO, [cmd('refs/heads/b2', ZERO_OID, oid(4))]))).seq);
    ops.length = 0;
    landed.push((await a.publish(push(REPO, [cmd('refs/heads/a3', ZERO_OID, oid(5))]))).seq);
    // Contended: each CAS goes out with a read beside it, and the retry follows the lost CAS
    // without reading first.
    expect(ops).toEqual(['read', 'cas', 'read', 'cas']);
    expect(landed).toEqual([1, 2, 3, 4, 5]);
    const loaded = await new Wal(inner).readIndex(REPO);
    if (loaded === null) throw new Error('index missing');
    expect(Object.keys(oidsOf(await new Wal(inner).allRefs(loaded.index))).sort()).toEqual(
      ['a1', 'a2', 'a3', 'b1', 'b2'].map((n) => `refs/heads/${n}`),
    );
  });

  it('gives exactly one node the ref when both push it from the same old value; no lost update', async () => {
    const { root, a, b } = await twoNodes();
    const base = await a.publish(push(REPO, [cmd('refs/heads/main', ZERO_OID, oid(1))]));
    expect(base.seq).toBe(1);
    const n = 12;
    const results = await Promise.all(
      Array.from({ length: n }, (_, i) =>
        (i % 2 === 0 ? a : b).publish(push(REPO, [cmd('refs/heads/main', oid(1), oid(100 + i))])),
      ),
    );
    const oks = results.flatMap((r, i) => (r.outcomes[0]?.ok === true ? [i] : []));
    expect(oks).toHaveLength(1);
    for (const [i, r] of results.entries()) {
      if (i !== oks[0])
        expect(r.outcomes).toEqual([{ ref: 'refs/heads/main', ok: false, reason: 'fetch first' }]);
    }
    const fresh = new Wal(new FsObjectStore(root));
    const loaded = await fresh.readIndex(REPO);
    if (loaded === null) throw new Error('index missing');
    expect(loaded.index.seq).toBe(2);
    expect(oidsOf(await fresh.allRefs(loaded.index))).toEqual({
      'refs/heads/main': oid(100 + (oks[0] ?? -1)),
    });
  });

  it('does not refuse a ref because of a stale cached index when another ref moved', async () => {
    const { root, a, b } = await twoNodes();
    await b.publish(
      push(REPO, [cmd('refs/heads/main', ZERO_OID, oid(1)), cmd('refs/heads/x', ZERO_OID, oid(2))]),
    );
    // A moves another ref; B's cached index is now stale.
    const moved = await a.publish(push(REPO, [cmd('refs/heads/x', oid(2), oid(3))]));
    expect(moved.seq).toBe(2);
    const result = await b.publish(push(REPO, [cmd('refs/heads/main', oid(1), oid(4))]));
    expect(result.outcomes).toEqual([{ ref: 'refs/heads/main', ok: true, noop: false }]);
    expect(result.seq).toBe(3);
    const fresh = new Wal(new FsObjectStore(root));
    const loaded = await fresh.readIndex(REPO);
    if (loaded === null) throw new Error('index missing');
    expect(oidsOf(await fresh.allRefs(loaded.index))).toEqual({
      'refs/heads/main': oid(4),
      'refs/heads/x': oid(3),
    });
  });

  it('does not refuse a ref whose old value only the stale cached index contradicts', async () => {
    const { root, a, b } = await twoNodes();
    await b.publish(push(REPO, [cmd('refs/heads/main', ZERO_OID, oid(1))]));
    // A moves the same ref; B still believes main is oid(1).
    await a.publish(push(REPO, [cmd('refs/heads/main', oid(1), oid(2))]));
    const result = await b.publish(push(REPO, [cmd('refs/heads/main', oid(2), oid(3))]));
    expect(result.outcomes).toEqual([{ ref: 'refs/heads/main', ok: true, noop: false }]);
    expect(result.seq).toBe(3);
    const loaded = await new Wal(new FsObjectStore(root)).readIndex(REPO);
    expect(loaded?.index.seq).toBe(3);
    // And a push whose old value really is stale is refused after a fresh read.
    const stale = await a.publish(push(REPO, [cmd('refs/heads/main', oid(2), oid(5))]));
    expect(stale.outcomes).toEqual([{ ref: 'refs/heads/main', ok: false, reason: 'fetch first' }]);
    expect(stale.seq).toBeNull();
  });
});

describe('Publisher: answers that no CAS vouches for', () => {
  const tempRoot = useTempRoots();

  it('does not answer ok (noop) from a stale cached index', async () => {
    const root = await tempRoot();
    const walA = new Wal(new FsObjectStore(root));
    const walB = new Wal(new FsObjectStore(root));
    await walA.createRepo('r', { public: false });
    const a = new Publisher(walA, { random: () => 0 });
    const b = new Publisher(walB, { random: () => 0 });
    await b.publish(push('r', [cmd('refs/heads/main', ZERO_OID, oid(1))]));
    await a.publish(push('r', [cmd('refs/heads/main', oid(1), oid(2))]));
    // B still believes main is at 1: putting it back to 1 is a real update, not a no-op.
    const result = await b.publish(push('r', [cmd('refs/heads/main', oid(2), oid(1))]));
    expect(result.outcomes).toEqual([{ ref: 'refs/heads/main', ok: true, noop: false }]);
    expect(result.seq).toBe(3);
    const loaded = await new Wal(new FsObjectStore(root)).readIndex('r');
    if (loaded === null) throw new Error('index missing');
    expect(oidsOf(await walA.allRefs(loaded.index))).toEqual({ 'refs/heads/main': oid(1) });
  });
});
