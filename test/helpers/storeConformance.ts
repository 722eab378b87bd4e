/**
 * One behavioural contract for every ObjectStore adapter: the S3 semantics narwal's log relies on.
 * Each adapter's test file calls `describeObjectStoreConformance` with a factory.
 */
import { createHash, randomBytes } from 'node:crypto';
import { rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isStoreError } from '../../lib/store/errors.js';
import type { ObjectStore } from '../../lib/store/ObjectStore.js';

export interface StoreFixture {
  readonly store: ObjectStore;
  readonly cleanup: () => Promise<void>;
}

/** What an adapter can do beyond the common contract. */
export interface StoreCapabilities {
  /** Hands out presigned URLs (S3): clients move bytes without narwal in between. */
  readonly presigns: boolean;
}

const sha256Hex = (data: Buffer) => createHash('sha256').update(data).digest('hex');

/** A body that arrives in pieces, as a request body does. */
function streamOf(data: Buffer, pieces = 7): Readable {
  const size = Math.ceil(data.length / pieces) || 1;
  const chunks: Buffer[] = [];
  for (let i = 0; i < data.length; i += size) chunks.push(data.subarray(i, i + size));
  return Readable.from(chunks);
}

async function codeOf(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
    return 'ok';
  } catch (error) {
    if (isStoreError(error)) return error.code;
    throw error;
  }
}

async function readAll(stream: NodeJS.ReadableStream): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(Buffer.from(chunk as Buffer));
  return Buffer.concat(chunks);
}

export function describeObjectStoreConformance(
  name: string,
  make: () => Promise<StoreFixture>,
  capabilities: StoreCapabilities = { presigns: false },
): void {
  describe(`ObjectStore conformance: ${name}`, () => {
    let fixture: StoreFixture;
    let store: ObjectStore;
    // Every test works under its own prefix so suites can share one bucket.
    const prefix = `conformance-${Date.now().toString(36)}-${randomBytes(3).toString('hex')}`;
    let n = 0;
    const key = (suffix: string) => `${prefix}/${++n}/${suffix}`;

    beforeAll(async () => {
      fixture = await make();
      store = fixture.store;
    });
    afterAll(async () => {
      await fixture?.cleanup();
    });

    it('reads back what was written, with a stable etag', async () => {
      const k = key('a.json');
      const { etag } = await store.put(k, Buffer.from('{"a":1}'));
      const got = await store.get(k);
      expect(got.notModified).toBe(false);
      if (got.notModified) return;
      expect(got.body.toString()).toBe('{"a":1}');
      expect(got.etag).toBe(etag);
      expect((await store.head(k)).etag).toBe(etag);
      expect((await store.head(k)).size).toBe(7);
    });

    it('tells when an object was written (S3 Last-Modified: whole seconds)', async () => {
      const k = key('aged');
      const before = Date.now();
      await store.put(k, Buffer.from('x'));
      const after = Date.now();
      const { modified } = await store.head(k);
      expect(modified).toBeGreaterThanOrEqual(Math.floor(before / 1000) * 1000 - 1000);
      expect(modified).toBeLessThanOrEqual(after + 1000);
    });

    it('gives different etags to different contents of one key', async () => {
      const k = key('b');
      const first = await store.put(k, Buffer.from('one'));
      const second = await store.put(k, Buffer.from('two'));
      expect(second.etag).not.toBe(first.etag);
    });

    it('answers NotFound for get, head and getStream of a missing key', async () => {
      const k = key('missing');
      expect(await codeOf(store.get(k))).toBe('NotFound');
      expect(await codeOf(store.head(k))).toBe('NotFound');
      expect(await codeOf(store.getStream(k))).toBe('NotFound');
    });

    it('answers notModified to a conditional get with the current etag only', async () => {
      const k = key('c');
      const { etag } = await store.put(k, Buffer.from('x'));
      const same = await store.get(k, { ifNoneMatch: etag });
      expect(same.notModified).toBe(true);
      expect(same.etag).toBe(etag);
      await store.put(k, Buffer.from('y'));
      const changed = await store.get(k, { ifNoneMatch: etag });
      expect(changed.notModified).toBe(false);
      if (!changed.notModified) expect(changed.body.toString()).toBe('y');
    });

    it('creates only once with ifNoneMatch *', async () => {
      const k = key('create-only');
      await store.put(k, Buffer.from('first'), { ifNoneMatch: '*' });
      expect(await codeOf(store.put(k, Buffer.from('second'), { ifNoneMatch: '*' }))).toBe(
        'PreconditionFailed',
      );
      const got = await store.get(k);
      if (!got.notModified) expect(got.body.toString()).toBe('first');
    });

    it('replaces only the matching version with ifMatch', async () => {
      const k = key('cas');
      const v1 = await store.put(k, Buffer.from('v1'), { ifNoneMatch: '*' });
      const v2 = await store.put(k, Buffer.from('v2'), { ifMatch: v1.etag });
      expect(await codeOf(store.put(k, Buffer.from('v3'), { ifMatch: v1.etag }))).toBe('PreconditionFailed');
      const got = await store.get(k);
      if (!got.notModified) {
        expect(got.body.toString()).toBe('v2');
        expect(got.etag).toBe(v2.etag);
      }
    });

    it('refuses ifMatch on a missing key', async () => {
      // AWS answers 404 here and Ceph RGW 412; both mean "not the version you expected".
      const code = await codeOf(store.put(key('nothing'), Buffer.from('x'), { ifMatch: '"0123"' }));
      expect(['PreconditionFailed', 'NotFound']).toContain(code);
    });

    it('lets exactly one of 20 racing create-only writes win', async () => {
      const k = key('race-create');
      const codes = await Promise.all(
        Array.from({ length: 20 }, (_, i) =>
          codeOf(store.put(k, Buffer.from(`writer ${i}`), { ifNoneMatch: '*' })),
        ),
      );
      expect(codes.filter((c) => c === 'ok')).toHaveLength(1);
      for (const c of codes) expect(['ok', 'PreconditionFailed', 'ConditionalConflict']).toContain(c);
    });

    it('lets exactly one of 20 racing ifMatch writes on one version win', async () => {
      const k = key('race-cas');
      const { etag } = await store.put(k, Buffer.from('base'), { ifNoneMatch: '*' });
      const outcomes = await Promise.all(
        Array.from({ length: 20 }, async (_, i) => ({
          i,
          code: await codeOf(store.put(k, Buffer.from(`writer ${i}`), { ifMatch: etag })),
        })),
      );
      const winners = outcomes.filter((o) => o.code === 'ok');
      expect(winners).toHaveLength(1);
      for (const o of outcomes) expect(['ok', 'PreconditionFailed', 'ConditionalConflict']).toContain(o.code);
      const got = await store.get(k);
      if (!got.notModified) expect(got.body.toString()).toBe(`writer ${winners[0]?.i}`);
    });

    it('writes a file body and streams it back', async () => {
      const k = key('pack');
      const data = randomBytes(3 * 1024 * 1024 + 17);
      const path = join(tmpdir(), `narwal-conformance-${process.pid}-${n}`);
      await writeFile(path, data);
      await store.put(k, { path, size: data.length }, { ifNoneMatch: '*' });
      const stream = await store.getStream(k);
      expect(stream.size).toBe(data.length);
      expect((await readAll(stream.body)).equals(data)).toBe(true);
      expect(await codeOf(store.put(k, { path, size: data.length }, { ifNoneMatch: '*' }))).toBe(
        'PreconditionFailed',
      );
      await rm(path, { force: true });
    });

    it('tells the size and age of an object without reading it, and NotFound for a missing one', async () => {
      const k = key('stat');
      const before = Date.now();
      await store.put(k, Buffer.from('twelve bytes'));
      const info = await store.stat(k);
      expect(info.size).toBe(12);
      expect(info.modified).toBeGreaterThanOrEqual(Math.floor(before / 1000) * 1000 - 1000);
      expect(await codeOf(store.stat(key('no-such')))).toBe('NotFound');
    });

    it('renews an object: its bytes stay, its age starts again', async () => {
      const k = key('renewed');
      const data = randomBytes(3000);
      await store.put(k, data);
      // S3's Last-Modified has whole seconds: let one pass.
      await new Promise((resolve) => setTimeout(resolve, 1100));
      const before = Date.now();
      await store.renew(k);
      expect((await store.stat(k)).modified).toBeGreaterThanOrEqual(Math.floor(before / 1000) * 1000);
      const got = await store.get(k);
      expect(!got.notModified && got.body.equals(data)).toBe(true);
      expect(await codeOf(store.renew(key('never-written')))).toBe('NotFound');
    });

    it('streams a byte range of an object', async () => {
      const k = key('ranged');
      const data = randomBytes(100_000);
      await store.put(k, data);
      const middle = await store.getStream(k, { range: { start: 1000, end: 1999 } });
      expect(middle.size).toBe(1000);
      expect((await readAll(middle.body)).equals(data.subarray(1000, 2000))).toBe(true);
      const tail = await store.getStream(k, { range: { start: 99_990 } });
      expect(tail.size).toBe(10);
      expect((await readAll(tail.body)).equals(data.subarray(99_990))).toBe(true);
    });

    it('stores a streamed body of the size and SHA-256 it was announced with', async () => {
      const k = key('streamed');
      const data = randomBytes(11 * 1024 * 1024 + 5);
      await store.putStream(k, streamOf(data, 40), { size: data.length, sha256: sha256Hex(data) });
      const stream = await store.getStream(k);
      expect(stream.size).toBe(data.length);
      expect((await readAll(stream.body)).equals(data)).toBe(true);
      expect((await store.stat(k)).size).toBe(data.length);
    });

    it('stores nothing from a streamed body whose size or SHA-256 is not the announced one', async () => {
      const data = randomBytes(64 * 1024);
      const cases = [
        { what: 'short', body: data.subarray(1), size: data.length, sha256: sha256Hex(data) },
        {
          what: 'long',
          body: Buffer.concat([data, Buffer.from('x')]),
          size: data.length,
          sha256: sha256Hex(data),
        },
        { what: 'other bytes', body: randomBytes(data.length), size: data.length, sha256: sha256Hex(data) },
        {
          what: 'large, other bytes',
          body: randomBytes(9 * 1024 * 1024),
          size: 9 * 1024 * 1024,
          sha256: sha256Hex(data),
        },
      ];
      for (const c of cases) {
        const k = key(`mismatch-${c.what.replace(/\W/g, '-')}`);
        expect(
          await codeOf(store.putStream(k, streamOf(c.body), { size: c.size, sha256: c.sha256 })),
          c.what,
        ).toBe('ContentMismatch');
        expect(await codeOf(store.stat(k)), c.what).toBe('NotFound');
      }
    });

    it('creates a streamed body only once with ifNoneMatch *', async () => {
      const k = key('streamed-once');
      const data = randomBytes(1000);
      const options = { size: data.length, sha256: sha256Hex(data), ifNoneMatch: '*' } as const;
      await store.putStream(k, streamOf(data), options);
      expect(await codeOf(store.putStream(k, streamOf(data), options))).toBe('PreconditionFailed');
    });

    it(
      capabilities.presigns ? 'hands out presigned PUT and GET requests' : 'hands out no presigned URLs',
      async () => {
        if (!capabilities.presigns) {
          expect(store.presigner).toBeUndefined();
          return;
        }
        const presigner = store.presigner;
        if (presigner === undefined) throw new Error('no presigner');
        const k = key('presigned');
        const data = randomBytes(70_000);
        const put = await presigner.presign(k, {
          method: 'PUT',
          expiresInSeconds: 600,
          size: data.length,
          sha256: sha256Hex(data),
          ifNoneMatch: '*',
        });
        expect(put.expiresAt.getTime()).toBeGreaterThan(Date.now() + 500_000);
        const first = await fetch(put.url, { method: 'PUT', headers: put.headers, body: data });
        expect(first.status).toBe(200);
        // The signed If-None-Match holds: the same URL cannot replace what it created.
        const again = await fetch(put.url, {
          method: 'PUT',
          headers: put.headers,
          body: randomBytes(data.length),
        });
        expect(again.status).toBe(412);
        // A body of another length than the signed one is refused.
        const short = await fetch(put.url, { method: 'PUT', headers: put.headers, body: data.subarray(1) });
        expect(short.ok).toBe(false);
        const get = await presigner.presign(k, { method: 'GET', expiresInSeconds: 600 });
        const whole = await fetch(get.url, { headers: get.headers });
        expect(Buffer.from(await whole.arrayBuffer()).equals(data)).toBe(true);
        const resumed = await fetch(get.url, { headers: { ...get.headers, range: 'bytes=60000-' } });
        expect(resumed.status).toBe(206);
        expect(Buffer.from(await resumed.arrayBuffer()).equals(data.subarray(60_000))).toBe(true);
        expect(typeof (await presigner.verifiesChecksums(key('checksum-probe')))).toBe('boolean');
      },
    );

    it('lists keys under a prefix in order, page by page', async () => {
      const dir = key('list');
      const names = ['b', 'a', 'c/d', 'c/e', 'f'];
      await Promise.all(names.map((x) => store.put(`${dir}/${x}`, Buffer.from(x))));
      await store.put(`${dir}-sibling`, Buffer.from('not under the prefix'));
      const first = await store.list(`${dir}/`, { limit: 2 });
      expect(first.keys).toEqual([`${dir}/a`, `${dir}/b`]);
      expect(first.next).toBeDefined();
      const rest = await store.list(`${dir}/`, { startAfter: first.next, limit: 10 });
      expect(rest.keys).toEqual([`${dir}/c/d`, `${dir}/c/e`, `${dir}/f`]);
      expect(rest.next).toBeUndefined();
    });

    it('deletes, and deleting a missing key succeeds', async () => {
      const k = key('gone');
      await store.put(k, Buffer.from('x'));
      await store.delete(k);
      expect(await codeOf(store.get(k))).toBe('NotFound');
      await store.delete(k);
      await store.put(k, Buffer.from('again'), { ifNoneMatch: '*' });
    });
  });
}
