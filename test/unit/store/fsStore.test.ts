import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { FsObjectStore } from '../../../lib/store/FsObjectStore.js';
import { describeObjectStoreConformance } from '../../helpers/storeConformance.js';

describeObjectStoreConformance('filesystem', async () => {
  const root = await mkdtemp(join(tmpdir(), 'narwal-fs-store-'));
  return { store: new FsObjectStore(root), cleanup: () => rm(root, { recursive: true, force: true }) };
});

describe('filesystem store layout', () => {
  it('leaves no empty directories behind a delete, and writes into a pruned path again', async () => {
    const root = await mkdtemp(join(tmpdir(), 'narwal-fs-prune-'));
    try {
      const store = new FsObjectStore(root);
      await store.put('a/b/c/leaf', Buffer.from('x'));
      await store.put('a/keep', Buffer.from('y'));
      await store.delete('a/b/c/leaf');
      expect(await readdir(join(root, 'objects', 'a'))).toEqual(['keep']);
      await store.put('a/b/c/leaf', Buffer.from('again'), { ifNoneMatch: '*' });
      const got = await store.get('a/b/c/leaf');
      expect(got.notModified === false && got.body.toString()).toBe('again');
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  });
});
