import { describe, expect, it } from 'vitest';
import type { RefValue } from '../../../lib/protocol/refValue.js';
import { isStoreError } from '../../../lib/store/errors.js';
import { FaultyObjectStore } from '../../../lib/store/FaultyObjectStore.js';
import { FsObjectStore } from '../../../lib/store/FsObjectStore.js';
import { parseFaultSpec } from '../../../lib/store/faultSpec.js';
import type { ObjectStore } from '../../../lib/store/ObjectStore.js';
import { OutcomeUnknown, RepoExists } from '../../../lib/wal/errors.js';
import { Publisher, type PublishResult, type PushJob } from '../../../lib/wal/Publisher.js';
import type { LogItem } from '../../../lib/wal/types.js';
import { applyUpdates, Wal } from '../../../lib/wal/Wal.js';
import {
  CountingStore,
  cmd,
  isIndexKey,
  oid,
  push,
  RoutingStore,
  scriptedFaults,
  seededRandom,
  useTempRoots,
  ZERO_OID,
} from './walHelpers.js';

const REPO = 'faulty/repo';
const INDEX = 'repos/faulty/repo.git/index.json';

/** Rule indexes for `scriptedFaults`, in the order of FAULTS. */
const F409 = 0;
const F412 = 1;
const F500 = 2;
const F500_APPLIED = 3;
const FTIMEOUT_APPLIED = 4;
const FAULTS = 'put409=0.5,put412=0.5,put500=0.5,put500applied=0.5,puttimeoutapplied=0.5';

/** A store whose index.json operations go through a FaultyObjectStore; everything else is plain. */
function faultyIndexStore(inner: ObjectStore, spec: string, random: () => number): CountingStore {
  const faulty = new FaultyObjectStore(inner, { latencyMs: 0, faults: parseFaultSpec(spec), random });
  return new CountingStore(new RoutingStore(inner, faulty, isIndexKey));
}

/**
 * Checks the log against what publish answered: every ok (non-noop) push is in the log exactly
 * once, at the seq it was told; no refused push is; sequence numbers are dense; the refs are the
 * replay of the log.
 */
async function expectLogMatches(
  inner: ObjectStore,
  jobs: readonly PushJob[],
  results: readonly PublishResult[],
): Promise<LogItem[]> {
  const wal = new Wal(inner);
  const loaded = await wal.readIndex(REPO);
  if (loaded === null) throw new Error('index missing');
  const items = await wal.itemsAfter(loaded.index, 0);
  expect(items.map((i) => i.seq)).toEqual(Array.from({ length: loaded.index.seq }, (_, i) => i + 1));
  const published = results.filter((r) => r.seq !== null);
  expect(items).toHaveLength(published.length);
  for (const [j, job] of jobs.entries()) {
    const result = results[j];
    if (result === undefined) throw new Error('missing result');
    const mine = items.filter((item) =>
      item.updates.some((u) => job.commands.some((c) => c.ref === u.ref && c.newOid === u.new)),
    );
    const landed = result.outcomes.filter((o) => o.ok && !o.noop);
    if (landed.length > 0) {
      expect(mine).toHaveLength(1);
      expect(mine[0]?.seq).toBe(result.seq);
      expect(mine[0]?.updates.map((u) => u.ref)).toEqual(landed.map((o) => o.ref));
    } else {
      expect(mine).toEqual([]);
      expect(result.seq).toBeNull();
    }
  }
  const replay = new Map<string, RefValue>();
  for (const item of items) applyUpdates(replay, item);
  expect(await wal.allRefs(loaded.index)).toEqual(replay);
  return items;
}

describe('Publisher under injected index faults', () => {
  const tempRoot = useTempRoots();

  async function setup(
    spec: string,
    random: () => number,
    options: ConstructorParameters<typeof Publisher>[1] = {},
  ) {
    const inner = new FsObjectStore(await tempRoot());
    await new Wal(inner).createRepo(REPO, { public: false });
    const store = faultyIndexStore(inner, spec, random);
    const publisher = new Publisher(new Wal(store), { random: () => 0, ...options });
    return { inner, store, publisher };
  }

  it('retries 409, 412 and unapplied 5xx, and takes an applied failure as success, once', async () => {
    const script = [
      [F409, F412, null], // push 1: two refusals, then lands
      [F500_APPLIED], // push 2: landed, caller heard 500
      [FTIMEOUT_APPLIED], // push 3: landed, caller heard a timeout
      [F500, null], // push 4: did not land, re-read says so, retried
      [F409, F500_APPLIED], // push 5: refused, then landed with a 500
      [null], // push 6: clean
    ];
    const { inner, store, publisher } = await setup(FAULTS, scriptedFaults(5, script.flat()));
    const jobs: PushJob[] = [];
    const results: PublishResult[] = [];
    const casBefore: number[] = [];
    for (let i = 1; i <= script.length; i++) {
      const job = push(REPO, [cmd(`refs/heads/b${i}`, ZERO_OID, oid(i))]);
      casBefore.push(store.indexCasCount());
      jobs.push(job);
      results.push(await publisher.publish(job));
    }
    for (const [i, r] of results.entries()) {
      expect(r.outcomes).toEqual([{ ref: `refs/heads/b${i + 1}`, ok: true, noop: false }]);
      expect(r.seq).toBe(i + 1);
    }
    // Exactly one CAS per scripted step: no extra write after an applied failure.
    casBefore.push(store.indexCasCount());
    expect(casBefore.slice(1).map((n, i) => n - (casBefore[i] ?? 0))).toEqual(script.map((s) => s.length));
    const items = await expectLogMatches(inner, jobs, results);
    expect(new Set(items.map((i) => i.key)).size).toBe(items.length);
  });

  it('recognises an applied failure on a CAS that pages the log and moves refs into a table', async () => {
    const n = 36;
    const steps = Array.from({ length: n }, (_, i) =>
      i === 32 ? F500_APPLIED : i === 33 ? FTIMEOUT_APPLIED : null,
    );
    const { inner, publisher } = await setup(FAULTS, scriptedFaults(5, steps), {
      policy: { maxRecentRows: 3, geometricFactor: 2 },
    });
    const jobs = Array.from({ length: n }, (_, i) =>
      push(REPO, [cmd(`refs/heads/f${i}`, ZERO_OID, oid(i + 1))]),
    );
    const results: PublishResult[] = [];
    for (const job of jobs) results.push(await publisher.publish(job));
    expect(results.map((r) => r.seq)).toEqual(Array.from({ length: n }, (_, i) => i + 1));
    // The 33rd CAS paged entries 1-32 and was answered with a 500 after it applied.
    expect(results[32]?.loaded.index.paged).toBe(32);
    expect(results[32]?.loaded.index.tail.map((i) => i.seq)).toEqual([33]);
    expect(results[35]?.loaded.index.tables.length).toBeGreaterThan(0);
    await expectLogMatches(inner, jobs, results);
  });

  it('keeps the log exact when two faulty nodes race, some pushes on the same ref', async () => {
    const inner = new FsObjectStore(await tempRoot());
    await new Wal(inner).createRepo(REPO, { public: false });
    const spec = 'put409=0.15,put412=0.15,put500=0.1,put500applied=0.1,puttimeoutapplied=0.1';
    const nodes = [1, 2].map(
      (seed) =>
        new Publisher(new Wal(faultyIndexStore(inner, spec, seededRandom(seed))), {
          backoffBaseMs: 1,
          backoffCapMs: 8,
          policy: { maxRecentRows: 3, geometricFactor: 2 },
        }),
    );
    const jobs: PushJob[] = [];
    const results: PublishResult[] = [];
    for (let round = 0; round < 3; round++) {
      const batch = Array.from({ length: 16 }, (_, i) =>
        i < 4
          ? push(REPO, [cmd(`refs/heads/hot${round}`, ZERO_OID, oid(1000 + round * 100 + i))])
          : push(REPO, [cmd(`refs/heads/r${round}-${i}`, ZERO_OID, oid(round * 100 + i))]),
      );
      jobs.push(...batch);
      results.push(...(await Promise.all(batch.map((job, i) => (nodes[i % 2] as Publisher).publish(job)))));
    }
    for (const r of results) {
      for (const o of r.outcomes) {
        if (!o.ok) expect(o.reason).toMatch(/^(fetch first|narwal: busy: .*)$/);
      }
    }
    for (let round = 0; round < 3; round++) {
      const hot = results.filter((r) => r.outcomes[0]?.ref === `refs/heads/hot${round}`);
      expect(hot).toHaveLength(4);
      // The same ref from the same old value: at most one winner (exactly one unless all were busy).
      const winners = hot.filter((r) => r.outcomes[0]?.ok === true).length;
      const busy = hot.filter(
        (r) => r.outcomes[0]?.ok === false && r.outcomes[0].reason !== 'fetch first',
      ).length;
      expect(winners).toBe(busy === 4 ? 0 : 1);
    }
    const items = await expectLogMatches(inner, jobs, results);
    expect(items.length).toBeGreaterThan(30);
  });

  it('answers busy, not an error, when every CAS meets a 409 and attempts run out', async () => {
    const { inner, store, publisher } = await setup('put409=1', () => 0, { maxAttempts: 2 });
    const result = await publisher.publish(
      push(REPO, [cmd('refs/heads/main', ZERO_OID, oid(1)), cmd('refs/heads/dev', ZERO_OID, oid(2))]),
    );
    const busy = `narwal: busy: too many concurrent pushes to ${REPO}; retry the push in a moment`;
    expect(result.outcomes).toEqual([
      { ref: 'refs/heads/main', ok: false, reason: busy },
      { ref: 'refs/heads/dev', ok: false, reason: busy },
    ]);
    expect(result.seq).toBeNull();
    expect(result.loaded.index.seq).toBe(0);
    expect(store.indexCasCount()).toBe(2);
    const loaded = await new Wal(inner).readIndex(REPO);
    expect(loaded?.index.seq).toBe(0);
  });

  it('rejects with OutcomeUnknown when a CAS fails and the index cannot be read back', async () => {
    // First consult (createRepo's put) passes; the CAS and every read after it fail.
    let calls = 0;
    const random = () => (calls++ === 0 ? 0.9 : 0.1);
    const inner = new FsObjectStore(await tempRoot());
    const store = faultyIndexStore(inner, 'put500=0.5,get503=0.5', random);
    const wal = new Wal(store);
    await wal.createRepo(REPO, { public: false });
    const publisher = new Publisher(wal, { random: () => 0, maxAttempts: 2 });
    const error = await publisher.publish(push(REPO, [cmd('refs/heads/main', ZERO_OID, oid(1))])).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(OutcomeUnknown);
    expect((error as OutcomeUnknown).repo).toBe(REPO);
    expect(isStoreError((error as OutcomeUnknown).cause, 'StoreUnavailable')).toBe(true);
    const loaded = await new Wal(inner).readIndex(REPO);
    expect(loaded?.index.seq).toBe(0);
    expect((await inner.head(INDEX)).etag).toBe(loaded?.etag);
  });

  it('creates the repository when a create-only put is refused but nothing is there', async () => {
    // The first put hears 412 without taking effect (the rule set is put412 only), the retry lands.
    const inner = new FsObjectStore(await tempRoot());
    const store = faultyIndexStore(inner, 'put412=0.5', scriptedFaults(1, [0, null]));
    const created = await new Wal(store).createRepo(REPO, { public: false });
    expect(created.index.seq).toBe(0);
    expect((await new Wal(inner).readIndex(REPO))?.etag).toBe(created.etag);
    await expect(new Wal(inner).createRepo(REPO, { public: false })).rejects.toBeInstanceOf(RepoExists);
  });
});
