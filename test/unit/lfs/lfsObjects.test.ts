import { createHash, randomBytes } from 'node:crypto';
import { utimes } from 'node:fs/promises';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { LfsObjects } from '../../../lib/lfs/LfsObjects.js';
import { FsObjectStore } from '../../../lib/store/FsObjectStore.js';
import { lfsObjectKey } from '../../../lib/wal/keys.js';
import { REFRESH_AFTER_MS } from '../../../lib/wal/putImmutable.js';
import { useTempRoots } from '../wal/walHelpers.js';

const REPO = 'team/art';
const links = { base: 'http://narwal.test', headers: {} };

describe('LfsObjects keeps what it vouches for young', () => {
  const tempRoot = useTempRoots();

  /** An object stored long ago (older than REFRESH_AFTER_MS), as one no push has named yet. */
  async function oldObject() {
    const root = await tempRoot();
    const store = new FsObjectStore(root);
    const objects = new LfsObjects({ store, maxObjectBytes: 1 << 20, urlTtlSeconds: 600, presign: false });
    const bytes = randomBytes(1000);
    const oid = createHash('sha256').update(bytes).digest('hex');
    await objects.receive(REPO, oid, bytes.length, Readable.from([bytes]));
    const long = new Date(Date.now() - 2 * REFRESH_AFTER_MS);
    await utimes(join(root, 'objects', lfsObjectKey(REPO, oid)), long, long);
    const age = async () => Date.now() - (await store.stat(lfsObjectKey(REPO, oid))).modified;
    expect(await age()).toBeGreaterThan(REFRESH_AFTER_MS);
    return { store, objects, bytes, oid, age };
  }

  it('renews an old object when a batch upload is told it need not send it', async () => {
    const { objects, bytes, oid, age } = await oldObject();
    const answer = await objects.batch(
      REPO,
      { operation: 'upload', objects: [{ oid, size: bytes.length }] },
      links,
    );
    expect(answer.objects).toEqual([{ oid, size: bytes.length }]);
    expect(await age()).toBeLessThan(REFRESH_AFTER_MS);
  });

  it('renews an old object when a push check finds it, and when an upload of it arrives again', async () => {
    const first = await oldObject();
    expect(await first.objects.state(REPO, first.oid, first.bytes.length, { renew: true })).toBe('present');
    expect(await first.age()).toBeLessThan(REFRESH_AFTER_MS);
    const second = await oldObject();
    await second.objects.receive(REPO, second.oid, second.bytes.length, Readable.from([second.bytes]));
    expect(await second.age()).toBeLessThan(REFRESH_AFTER_MS);
  });

  it('leaves an object alone on a download answer', async () => {
    const { objects, bytes, oid, age } = await oldObject();
    await objects.batch(REPO, { operation: 'download', objects: [{ oid, size: bytes.length }] }, links);
    expect(await age()).toBeGreaterThan(REFRESH_AFTER_MS);
  });
});
