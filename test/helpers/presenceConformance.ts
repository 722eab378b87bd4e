/**
 * One behavioural contract for every PresenceStore adapter. Each adapter's test file calls
 * `describePresenceConformance` with a factory that builds the adapter around the clock it is
 * given; the suite moves that clock, so expiry is tested without waiting. Several "machines" are
 * simulated by skewing the clock between calls.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { PresenceRecord, PresenceStore } from '../../lib/presence/PresenceStore.js';

export interface PresenceFixture {
  readonly store: PresenceStore;
  cleanup(): Promise<void>;
}

const T0 = Date.UTC(2030, 0, 1);

const ids = (records: readonly PresenceRecord[]) => records.map((r) => r.id).sort();

export function describePresenceConformance(
  name: string,
  make: (now: () => number) => Promise<PresenceFixture>,
): void {
  describe(`PresenceStore conformance: ${name}`, () => {
    let fixture: PresenceFixture;
    let store: PresenceStore;
    let clock = T0;
    let skew = 0;
    const now = () => clock + skew;
    // Every test works in its own partitions so suites can share one table.
    const run = `${Date.now().toString(36)}-${randomBytes(3).toString('hex')}`;
    let n = 0;
    const freshKey = (label: string) => `repo#conformance/${run}/${++n}/${label}`;
    const record = (key: string, id: string, owner: string, ttlMs = 30_000): PresenceRecord => ({
      key,
      id,
      owner,
      expiresAt: now() + ttlMs,
    });

    beforeAll(async () => {
      fixture = await make(now);
      store = fixture.store;
    });
    afterAll(async () => {
      await fixture?.cleanup();
    });
    beforeEach(() => {
      clock = T0;
      skew = 0;
    });

    it('creates, reads back, lists and releases a record', async () => {
      const key = freshKey('basic');
      const full: PresenceRecord = {
        ...record(key, 'writer', 'node-a'),
        data: { purpose: 'build', generation: '000000000042-abcdef012345', host: 'ip-10-0-0-1' },
      };
      expect(await store.tryCreate(full)).toBe(true);
      expect(await store.get(key, 'writer')).toStrictEqual(full);
      expect(await store.list(key)).toStrictEqual([full]);
      await store.release(key, 'writer', 'node-a');
      expect(await store.get(key, 'writer')).toBeNull();
      expect(await store.list(key)).toStrictEqual([]);
    });

    it('round-trips a record without data, and empty data, as given', async () => {
      const key = freshKey('data');
      const bare = record(key, 'bare', 'node-a');
      const empty = { ...record(key, 'empty', 'node-a'), data: {} };
      expect(await store.tryCreate(bare)).toBe(true);
      expect(await store.tryCreate(empty)).toBe(true);
      expect(await store.get(key, 'bare')).toStrictEqual(bare);
      expect(await store.get(key, 'empty')).toStrictEqual(empty);
      expect(await store.get(key, 'missing')).toBeNull();
      expect(await store.list(freshKey('nothing'))).toStrictEqual([]);
    });

    it('refuses tryCreate while a record is live, through its expiry instant, then replaces it', async () => {
      const key = freshKey('expiry');
      const a = record(key, 'writer', 'node-a', 1000);
      expect(await store.tryCreate(a)).toBe(true);
      expect(await store.tryCreate(record(key, 'writer', 'node-b'))).toBe(false);

      clock = a.expiresAt; // "after which the record no longer counts": at the instant it still does
      expect(await store.get(key, 'writer')).toStrictEqual(a);
      expect(await store.tryCreate(record(key, 'writer', 'node-b'))).toBe(false);

      clock = a.expiresAt + 1;
      expect(await store.get(key, 'writer')).toBeNull();
      expect(await store.list(key)).toStrictEqual([]);
      // Expiry is a filter on read, not a delete: an earlier clock still sees the record.
      clock = T0;
      expect(await store.get(key, 'writer')).toStrictEqual(a);

      clock = a.expiresAt + 1;
      const b = record(key, 'writer', 'node-b');
      expect(await store.tryCreate(b)).toBe(true);
      expect(await store.get(key, 'writer')).toStrictEqual(b);
      expect(await store.tryCreate(record(key, 'writer', 'node-a'))).toBe(false);
    });

    it('renews for the owner only, and not after expiry', async () => {
      const key = freshKey('renew');
      const a = record(key, 'writer', 'node-a', 1000);
      expect(await store.tryCreate(a)).toBe(true);
      expect(await store.renew(key, 'writer', 'node-b', T0 + 60_000)).toBe(false);
      expect((await store.get(key, 'writer'))?.expiresAt).toBe(a.expiresAt);

      clock = T0 + 500;
      expect(await store.renew(key, 'writer', 'node-a', T0 + 5_000)).toBe(true);
      clock = T0 + 4_000; // past the first expiry, inside the renewed one
      expect(await store.get(key, 'writer')).toStrictEqual({ ...a, expiresAt: T0 + 5_000 });
      expect(await store.tryCreate(record(key, 'writer', 'node-b'))).toBe(false);

      clock = T0 + 5_001;
      expect(await store.renew(key, 'writer', 'node-a', T0 + 60_000)).toBe(false);
      expect(await store.get(key, 'writer')).toBeNull();
      expect(await store.renew(key, 'nothing-here', 'node-a', T0 + 60_000)).toBe(false);
    });

    it('does not let the old owner renew or release a record someone created over its expired one', async () => {
      const key = freshKey('taken-over');
      expect(await store.tryCreate(record(key, 'writer', 'node-a', 1000))).toBe(true);
      clock = T0 + 2_000;
      const b = record(key, 'writer', 'node-b');
      expect(await store.tryCreate(b)).toBe(true);
      expect(await store.renew(key, 'writer', 'node-a', T0 + 60_000)).toBe(false);
      await store.release(key, 'writer', 'node-a');
      expect(await store.get(key, 'writer')).toStrictEqual(b);
    });

    it('ignores a release by someone other than the owner; releasing a missing record is fine', async () => {
      const key = freshKey('release');
      const a = record(key, 'writer', 'node-a');
      expect(await store.tryCreate(a)).toBe(true);
      await store.release(key, 'writer', 'node-b');
      expect(await store.get(key, 'writer')).toStrictEqual(a);
      await store.release(key, 'writer', 'node-a');
      expect(await store.get(key, 'writer')).toBeNull();
      await store.release(key, 'writer', 'node-a');
      await store.release(key, 'never-created', 'node-a');
      expect(await store.tryCreate(record(key, 'writer', 'node-b'))).toBe(true);
    });

    it('frees an id at once when its owner releases it just before it expires', async () => {
      const key = freshKey('release-late');
      const a = record(key, 'writer', 'node-a', 10_000);
      expect(await store.tryCreate(a)).toBe(true);
      clock = a.expiresAt - 200;
      await store.release(key, 'writer', 'node-a');
      expect(await store.get(key, 'writer')).toBeNull();
      expect(await store.list(key)).toStrictEqual([]);
      clock = T0; // not merely filtered by a later clock: released
      expect(await store.get(key, 'writer')).toBeNull();
      expect(await store.tryCreate(record(key, 'writer', 'node-b'))).toBe(true);
    });

    it('lists live records only, by id prefix, whatever the characters in the ids', async () => {
      const key = freshKey('list');
      const live = [
        'lease#000000000001-aaaaaaaaaaaa#1',
        'lease#000000000001-aaaaaaaaaaaa#2',
        'lease#000000000002-bbbbbbbbbbbb#1',
        'writer',
        'a/b',
        'a#b',
        'a b',
        'a',
        'ab',
        'a/b/../c',
        'Ünïcödé',
        '日本語',
        '日本',
        '😀 smile',
        '%41',
        'A',
      ];
      for (const id of live) expect(await store.tryCreate(record(key, id, 'node-a'))).toBe(true);
      expect(await store.tryCreate(record(key, 'lease#000000000001-aaaaaaaaaaaa#3', 'node-a', 10))).toBe(
        true,
      );
      clock = T0 + 11;

      expect(ids(await store.list(key))).toEqual([...live].sort());
      expect(ids(await store.list(key, ''))).toEqual([...live].sort());
      expect(ids(await store.list(key, 'lease#'))).toEqual([
        'lease#000000000001-aaaaaaaaaaaa#1',
        'lease#000000000001-aaaaaaaaaaaa#2',
        'lease#000000000002-bbbbbbbbbbbb#1',
      ]);
      expect(ids(await store.list(key, 'lease#000000000001-aaaaaaaaaaaa#'))).toEqual([
        'lease#000000000001-aaaaaaaaaaaa#1',
        'lease#000000000001-aaaaaaaaaaaa#2',
      ]);
      expect(ids(await store.list(key, 'a'))).toEqual(['a', 'a b', 'a#b', 'a/b', 'a/b/../c', 'ab']);
      expect(ids(await store.list(key, 'a/'))).toEqual(['a/b', 'a/b/../c']);
      expect(ids(await store.list(key, 'a#'))).toEqual(['a#b']);
      expect(ids(await store.list(key, 'a '))).toEqual(['a b']);
      expect(ids(await store.list(key, 'A'))).toEqual(['A']);
      expect(ids(await store.list(key, '%'))).toEqual(['%41']);
      expect(ids(await store.list(key, '日本'))).toEqual(['日本', '日本語']);
      expect(ids(await store.list(key, 'Ü'))).toEqual(['Ünïcödé']);
      expect(ids(await store.list(key, '😀'))).toEqual(['😀 smile']);
      expect(ids(await store.list(key, 'writer#'))).toEqual([]);
      expect(ids(await store.list(key, 'zzz'))).toEqual([]);
      for (const r of await store.list(key)) expect(await store.get(key, r.id)).toStrictEqual(r);
    });

    it('handles long ids and lists them by long prefixes', async () => {
      const key = freshKey('long');
      const stem = `lease#${'g'.repeat(100)}#${'é'.repeat(40)}`;
      const long = [`${stem}#1`, `${stem}#2`, `${stem}`, `${stem.slice(0, 64)}`];
      for (const id of long) expect(await store.tryCreate(record(key, id, 'node-a'))).toBe(true);
      expect(await store.tryCreate(record(key, `${stem}#1`, 'node-b'))).toBe(false);
      expect(ids(await store.list(key, stem))).toEqual([stem, `${stem}#1`, `${stem}#2`].sort());
      expect(ids(await store.list(key, `${stem}#`))).toEqual([`${stem}#1`, `${stem}#2`]);
      expect(ids(await store.list(key, stem.slice(0, 64)))).toEqual([...long].sort());
      expect((await store.get(key, stem))?.id).toBe(stem);
    });

    it('keeps records in different keys apart, even when one key is a prefix of another', async () => {
      const base = freshKey('keys');
      const keys = [base, `${base}#x`, `${base}/x`, `${base}x`];
      for (const [i, key] of keys.entries()) {
        expect(await store.tryCreate(record(key, 'writer', `node-${i}`))).toBe(true);
        expect(await store.tryCreate(record(key, `lease#${i}`, `node-${i}`))).toBe(true);
      }
      for (const [i, key] of keys.entries()) {
        expect((await store.get(key, 'writer'))?.owner).toBe(`node-${i}`);
        expect(ids(await store.list(key))).toEqual([`lease#${i}`, 'writer']);
        expect((await store.list(key)).every((r) => r.key === key)).toBe(true);
      }
      await store.release(base, 'writer', 'node-0');
      expect(await store.get(base, 'writer')).toBeNull();
      for (const key of keys.slice(1)) expect(await store.get(key, 'writer')).not.toBeNull();
    });

    it('lets exactly one of 20 racing tryCreate on one record win', async () => {
      const key = freshKey('race');
      const results = await Promise.all(
        Array.from({ length: 20 }, (_, i) => store.tryCreate(record(key, 'writer', `racer-${i}`))),
      );
      expect(results.filter(Boolean)).toHaveLength(1);
      expect((await store.get(key, 'writer'))?.owner).toBe(`racer-${results.indexOf(true)}`);
    });

    it('lets exactly one of 20 racing tryCreate over one expired record win', async () => {
      const key = freshKey('race-expired');
      expect(await store.tryCreate(record(key, 'writer', 'crashed', 1000))).toBe(true);
      clock = T0 + 1001;
      const results = await Promise.all(
        Array.from({ length: 20 }, (_, i) => store.tryCreate(record(key, 'writer', `racer-${i}`))),
      );
      expect(results.filter(Boolean)).toHaveLength(1);
      expect((await store.get(key, 'writer'))?.owner).toBe(`racer-${results.indexOf(true)}`);
    });

    it('treats expiry as absolute: a writer whose clock runs 10 s ahead does not shorten it for others', async () => {
      const key = freshKey('skew');
      skew = 10_000; // the writer's clock
      const a = record(key, 'writer', 'fast-clock', 30_000); // expires at T0 + 40 s
      expect(await store.tryCreate(a)).toBe(true);
      skew = 0; // a reader 10 s behind it
      clock = T0 + 39_000;
      expect(await store.get(key, 'writer')).toStrictEqual(a);
      expect(await store.tryCreate(record(key, 'writer', 'slow-clock'))).toBe(false);
      clock = a.expiresAt;
      expect(ids(await store.list(key))).toEqual(['writer']);
      clock = a.expiresAt + 1;
      expect(await store.get(key, 'writer')).toBeNull();
      // The writer, by its own clock, also sees it expire at the same absolute instant.
      skew = 10_000;
      clock = a.expiresAt - 10_000;
      expect(await store.renew(key, 'writer', 'fast-clock', a.expiresAt + 30_000)).toBe(true);
      skew = 0;
      clock = a.expiresAt + 1;
      expect((await store.get(key, 'writer'))?.owner).toBe('fast-clock');
    });
  });
}
