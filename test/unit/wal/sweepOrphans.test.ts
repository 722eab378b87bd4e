import { utimes } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { LfsLocks } from '../../../lib/lfs/LfsLocks.js';
import { FsObjectStore } from '../../../lib/store/FsObjectStore.js';
import type { HeadResult, ObjectStore } from '../../../lib/store/ObjectStore.js';
import { chunkKey, lfsIncomingKey, lfsObjectKey, packKey } from '../../../lib/wal/keys.js';
import { Publisher } from '../../../lib/wal/Publisher.js';
import { putImmutable, REFRESH_AFTER_MS } from '../../../lib/wal/putImmutable.js';
import { namedKeys, repoOfKey, sweepOrphans } from '../../../lib/wal/sweepOrphans.js';
import { Wal } from '../../../lib/wal/Wal.js';
import {
  CountingStore,
  cmd,
  ForwardingStore,
  fsStore,
  oid,
  push,
  useTempRoots,
  ZERO_OID,
} from './walHelpers.js';

const REPO = 'team/app';
const HOUR = 3_600_000;

async function listAll(store: ObjectStore): Promise<string[]> {
  const keys: string[] = [];
  let startAfter: string | undefined;
  do {
    const page = await store.list('', startAfter ? { startAfter } : {});
    keys.push(...page.keys);
    startAfter = page.next;
  } while (startAfter);
  return keys;
}

describe('sweepOrphans', () => {
  const tempRoot = useTempRoots();

  /** A repository with published pushes (packs and a table stack) and the orphans of a failed push. */
  async function setup() {
    const root = await tempRoot();
    const store = new FsObjectStore(root);
    const wal = new Wal(store);
    await wal.createRepo(REPO, { public: false });
    // A tiny bound, so that ref rows move into tables and compaction replaces some.
    const publisher = new Publisher(wal, { policy: { maxRecentRows: 2, geometricFactor: 2 } });
    for (let i = 1; i <= 40; i++) {
      const pack = `pack-${String(i).padStart(40, '0')}`;
      await store.put(packKey(REPO, pack, 'pack'), Buffer.from(`pack ${i}`));
      await store.put(packKey(REPO, pack, 'idx'), Buffer.from(`idx ${i}`));
      await publisher.publish({ ...push(REPO, [cmd(`refs/heads/b${i}`, ZERO_OID, oid(i))]), packs: [pack] });
    }
    // What a push killed between upload and CAS leaves behind.
    const orphans = [
      packKey(REPO, `pack-${'f'.repeat(40)}`, 'pack'),
      packKey(REPO, `pack-${'f'.repeat(40)}`, 'idx'),
      `repos/${REPO}.git/entries/${'e'.repeat(64)}.json`,
    ];
    for (const key of orphans) await store.put(key, Buffer.from('orphan'));
    await store.put('auth/tokens/0123456789abcdef.json', Buffer.from('{}'));
    return { root, store, wal, orphans };
  }

  it('deletes only old objects no index names, and everything named still reads', async () => {
    const { store, wal, orphans } = await setup();
    const loaded = await wal.readIndexFully(REPO);
    if (!loaded) throw new Error('repository missing');
    const named = await namedKeys(wal, loaded.index);
    const before = await listAll(store);
    const unnamed = before.filter((k) => k.startsWith('repos/') && !named.has(k));
    // The orphans, plus tables that compaction replaced and the chunks that page 0 replaced.
    expect(unnamed).toEqual(expect.arrayContaining(orphans));
    const replaced = unnamed.filter((k) => !orphans.includes(k));
    expect(replaced.some((k) => k.includes('/tables/'))).toBe(true);
    expect(replaced.filter((k) => k.includes('/log/')).map((k) => k.split('/').pop())).toEqual([
      'chunk-0000000000.json',
      'chunk-0000000001.json',
      'chunk-0000000002.json',
    ]);
    expect(replaced.every((k) => k.includes('/tables/') || k.includes('/chunk-'))).toBe(true);

    const report = await sweepOrphans(wal, {
      retentionMs: HOUR,
      dryRun: false,
      now: () => Date.now() + 2 * HOUR,
    });
    expect(report.deleted).toBe(unnamed.length);
    expect(report.unknown).toEqual([]);
    expect(report.repos.map((r) => r.missing)).toEqual([[]]);
    const after = await listAll(store);
    expect(after.sort()).toEqual(before.filter((k) => !unnamed.includes(k)).sort());
    expect(after).toContain('auth/tokens/0123456789abcdef.json');

    // A fresh process reads every ref and item from what is left.
    const fresh = new Wal(store);
    const reread = await fresh.readIndexFully(REPO);
    if (!reread) throw new Error('repository missing');
    expect((await fresh.allRefs(reread.index)).size).toBe(40);
    expect(await fresh.itemsAfter(reread.index, 0)).toHaveLength(40);
  });

  it('keeps unnamed objects younger than the window, and a dry run deletes nothing', async () => {
    const { store, wal, orphans } = await setup();
    const before = await listAll(store);
    const young = await sweepOrphans(wal, { retentionMs: HOUR, dryRun: false });
    expect(young.deleted).toBe(0);
    expect(young.young).toBeGreaterThanOrEqual(orphans.length);
    const seen: string[] = [];
    const dry = await sweepOrphans(wal, {
      retentionMs: HOUR,
      dryRun: true,
      now: () => Date.now() + 2 * HOUR,
      onOrphan: (key) => seen.push(key),
    });
    expect(dry.deleted).toBe(0);
    expect(dry.orphans).toBeGreaterThanOrEqual(orphans.length);
    expect(seen).toEqual(expect.arrayContaining(orphans));
    expect((await listAll(store)).sort()).toEqual(before.sort());
  });

  it('keeps replaced tables while a table the index names is young', async () => {
    const { root, wal, orphans } = await setup();
    // Everything was written three hours ago...
    const past = new Date(Date.now() - 3 * HOUR);
    for (const key of await listAll(wal.store))
      await utimes(join(root, 'objects', ...key.split('/')), past, past);
    // ...then pushes install new tables, replacing some: a reader may still hold an index naming them.
    const publisher = new Publisher(wal, { policy: { maxRecentRows: 2, geometricFactor: 2 } });
    for (let i = 41; i <= 46; i++)
      await publisher.publish(push(REPO, [cmd(`refs/heads/b${i}`, ZERO_OID, oid(i))]));
    const seen: string[] = [];
    const report = await sweepOrphans(wal, {
      retentionMs: HOUR,
      dryRun: false,
      onOrphan: (key) => seen.push(key),
    });
    // The chunks that page 0 replaced three hours ago go too; replaced tables stay.
    const created = (await wal.readIndexFully(REPO))?.index.created ?? '';
    const chunks = [0, 1, 2].map((n) => chunkKey(REPO, created, n));
    expect(seen.sort()).toEqual([...orphans, ...chunks].sort());
    expect(report.young).toBeGreaterThan(0);
  });

  it('keeps replaced chunks while the page that replaced them is young, then deletes them', async () => {
    const root = await tempRoot();
    const wal = new Wal(new FsObjectStore(root));
    await wal.createRepo(REPO, { public: false });
    const publisher = new Publisher(wal);
    const chunks = (keys: string[]) => keys.filter((k) => k.includes('/chunk-')).sort();
    const move = (i: number) => push(REPO, [cmd('refs/heads/main', i === 1 ? ZERO_OID : oid(i), oid(i + 1))]);
    for (let i = 1; i <= 25; i++) await publisher.publish(move(i));
    // Entries 1-24 are in chunks 0-2, written hours ago.
    const past = new Date(Date.now() - 3 * HOUR);
    for (const key of await listAll(wal.store))
      await utimes(join(root, 'objects', ...key.split('/')), past, past);
    for (let i = 26; i <= 33; i++) await publisher.publish(move(i));
    // Page 0 has just replaced chunks 0-2; chunk 3 was never written (its items went to the page).
    expect(chunks(await listAll(wal.store))).toHaveLength(3);
    const options = { retentionMs: HOUR, dryRun: false } as const;
    expect((await sweepOrphans(wal, options)).deleted).toBe(0);
    const later = await sweepOrphans(wal, { ...options, now: () => Date.now() + 2 * HOUR });
    expect(chunks(await listAll(wal.store))).toEqual([]);
    expect(later.repos[0]?.missing).toEqual([]);
    const fresh = new Wal(new FsObjectStore(root));
    const loaded = await fresh.readIndexFully(REPO);
    if (!loaded) throw new Error('repository missing');
    expect((await fresh.itemsAfter(loaded.index, 0)).map((i) => i.seq)).toEqual(
      Array.from({ length: 33 }, (_, i) => i + 1),
    );
  });

  it('names keys by repository and leaves keys of no known layout alone', () => {
    expect(repoOfKey('repos/app.git/index.json')).toBe('app');
    expect(repoOfKey(`repos/team/app.git/lfs/objects/${'a'.repeat(64)}`)).toBe('team/app');
    expect(repoOfKey('repos/team/app.git/lfs/incoming/x/y')).toBe('team/app');
    expect(repoOfKey('repos/team/app.git/lfs/locks/x.json')).toBe('team/app');
    expect(repoOfKey('repos/team/app.git/lfs/other/x')).toBeNull();
    expect(repoOfKey('repos/team/app.git/packs/pack-1.pack')).toBe('team/app');
    expect(repoOfKey('repos/team/app.git/log/abc/0000000000.json')).toBe('team/app');
    expect(repoOfKey('repos/team/app.git/other/x')).toBeNull();
    expect(repoOfKey('auth/tokens/x.json')).toBeNull();
  });

  it('reports objects the log names but the store lacks', async () => {
    const { store, wal } = await setup();
    const loaded = await wal.readIndexFully(REPO);
    const first = loaded?.index.tail[loaded.index.tail.length - 1];
    if (!first) throw new Error('no item');
    await store.delete(first.key);
    const report = await sweepOrphans(wal, { retentionMs: HOUR, dryRun: true });
    expect(report.repos[0]?.missing).toEqual([first.key]);
  });

  it('stops at its deadline between repositories, and the next run resumes after the last one swept', async () => {
    const { store, wal } = await setup();
    for (const repo of ['a/one', 'b/two']) {
      await wal.createRepo(repo, { public: false });
      await store.put(packKey(repo, `pack-${'a'.repeat(40)}`, 'pack'), Buffer.from('orphan'));
    }
    const later = () => Date.now() + 2 * HOUR;
    let asked = 0;
    // Time runs out once the first repository is swept.
    const first = await sweepOrphans(wal, {
      retentionMs: HOUR,
      dryRun: false,
      now: later,
      stop: () => asked++ >= 1,
    });
    expect(first.repos.map((r) => r.repo)).toEqual(['a/one']);
    expect(first.resumeAfter).toBe('a/one');
    const rest = await sweepOrphans(wal, {
      retentionMs: HOUR,
      dryRun: false,
      now: later,
      startAfter: first.resumeAfter,
    });
    expect(rest.repos.map((r) => r.repo)).toEqual(['b/two', REPO]);
    expect(rest.resumeAfter).toBeUndefined();
  });
});

describe('sweepOrphans and Git LFS', () => {
  const tempRoot = useTempRoots();
  const lfsOid = (c: string) => c.repeat(64);
  const later = () => Date.now() + 2 * HOUR;

  /**
   * A repository whose push points at LFS object `a`; objects `b` (uploaded, never pushed) and an
   * unfinished upload of `c`; a lock taken and another taken and released (the table with both is
   * replaced; the one with the first lock alone is content-addressed, so named again).
   */
  async function setup(options: { unscannedPush?: boolean } = {}) {
    const root = await tempRoot();
    const store = new FsObjectStore(root);
    const wal = new Wal(store);
    await wal.createRepo(REPO, { public: false });
    const publisher = new Publisher(wal);
    const pack = `pack-${'1'.repeat(40)}`;
    await store.put(packKey(REPO, pack, 'pack'), Buffer.from('pack'));
    await store.put(packKey(REPO, pack, 'idx'), Buffer.from('idx'));
    await publisher.publish({
      ...push(REPO, [cmd('refs/heads/main', ZERO_OID, oid(1))]),
      packs: [pack],
      lfs: [lfsOid('a')],
    });
    if (options.unscannedPush) {
      const older = `pack-${'2'.repeat(40)}`;
      await store.put(packKey(REPO, older, 'pack'), Buffer.from('pack'));
      await store.put(packKey(REPO, older, 'idx'), Buffer.from('idx'));
      await publisher.publish({ ...push(REPO, [cmd('refs/heads/old', ZERO_OID, oid(2))]), packs: [older] });
    }
    const keys = {
      reached: lfsObjectKey(REPO, lfsOid('a')),
      unreached: lfsObjectKey(REPO, lfsOid('b')),
      unfinished: lfsIncomingKey(REPO, lfsOid('c'), '0'.repeat(32)),
    };
    for (const key of Object.values(keys)) await store.put(key, Buffer.from('bytes'));
    const locks = new LfsLocks({ wal, publisher });
    await locks.lock(REPO, 'art/kept.psd', { token: 'alice' });
    const released = await locks.lock(REPO, 'art/gone.psd', { token: 'alice' });
    await locks.unlock(REPO, released.lock.id, { token: 'alice' }, false);
    return { root, store, wal, keys };
  }

  const lockTables = (keys: string[]) => keys.filter((k) => k.includes('/lfs/locks/')).sort();

  it('keeps every LFS object an entry points at, and sweeps old unreached objects and unfinished uploads', async () => {
    const { store, wal, keys } = await setup();
    const loaded = await wal.readIndexFully(REPO);
    const current = loaded?.index.lfsLocks?.key;
    if (!current) throw new Error('no lock table');
    const tables = lockTables(await listAll(store));
    expect(tables).toHaveLength(2);
    // Young: nothing goes.
    expect((await sweepOrphans(wal, { retentionMs: HOUR, dryRun: false })).deleted).toBe(0);
    const report = await sweepOrphans(wal, { retentionMs: HOUR, dryRun: false, now: later });
    const after = await listAll(store);
    expect(after).toContain(keys.reached);
    expect(after).not.toContain(keys.unreached);
    expect(after).not.toContain(keys.unfinished);
    // The lock state has not changed for a window: only the table the index names stays.
    expect(lockTables(after)).toEqual([current]);
    expect(report.unknown).toEqual([]);
    expect(report.repos[0]?.lfsKept).toBe(1);
    expect(report.repos[0]?.missing).toEqual([]);
    expect(report.deleted).toBe(3);
  });

  it('keeps replaced lock tables while the lock state changed within the window', async () => {
    const { root, store, wal } = await setup();
    const past = new Date(Date.now() - 3 * HOUR);
    for (const key of await listAll(store))
      await utimes(join(root, 'objects', ...key.split('/')), past, past);
    // A lock taken now installs a young table: a reader may still hold an index naming an old one.
    await new LfsLocks({ wal, publisher: new Publisher(wal) }).lock(REPO, 'art/new.psd', { token: 'bob' });
    const seen: string[] = [];
    await sweepOrphans(wal, { retentionMs: HOUR, dryRun: false, onOrphan: (key) => seen.push(key) });
    expect(lockTables(seen)).toEqual([]);
    expect(lockTables(await listAll(store))).toHaveLength(3);
  });

  it('learns the age of an LFS object without reading it (a HEAD on the embedded store hashes the file)', async () => {
    const { store } = await setup();
    class HeadWatch extends ForwardingStore {
      readonly heads: string[] = [];
      override head(key: string): Promise<HeadResult> {
        this.heads.push(key);
        return super.head(key);
      }
    }
    const watched = new HeadWatch(store);
    const report = await sweepOrphans(new Wal(watched), { retentionMs: HOUR, dryRun: true, now: later });
    expect(report.orphans).toBeGreaterThan(0);
    expect(watched.heads).toEqual([]);
  });

  it('keeps every LFS object while the log has a push never looked at for pointers', async () => {
    const { store, wal, keys } = await setup({ unscannedPush: true });
    const report = await sweepOrphans(wal, { retentionMs: HOUR, dryRun: false, now: later });
    const after = await listAll(store);
    expect(after).toContain(keys.reached);
    expect(after).toContain(keys.unreached);
    expect(after).not.toContain(keys.unfinished);
    expect(report.repos[0]?.lfsKept).toBe(2);
  });
});

describe('putImmutable', () => {
  const tempRoot = useTempRoots();

  it('renews an old object it finds already stored, and leaves a recent one alone', async () => {
    const store = new CountingStore(await fsStore(tempRoot));
    await putImmutable(store, 'k', Buffer.from('same'));
    await putImmutable(store, 'k', Buffer.from('same'));
    expect(store.puts.map((p) => p.options?.ifNoneMatch ?? 'plain')).toEqual(['*', '*']);
    await putImmutable(store, 'k', Buffer.from('same'), 6, () => Date.now() + REFRESH_AFTER_MS + 1000);
    expect(store.puts.map((p) => p.options?.ifNoneMatch ?? 'plain')).toEqual(['*', '*', '*', 'plain']);
  });
});
