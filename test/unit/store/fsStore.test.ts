import { createHash } from 'node:crypto';
import { chmod, mkdtemp, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { FsObjectStore } from '../../../lib/store/FsObjectStore.js';
import { describeObjectStoreConformance } from '../../helpers/storeConformance.js';

describeObjectStoreConformance('filesystem', async () => {
  const root = await mkdtemp(join(tmpdir(), 'narwal-fs-store-'));
  return { store: new FsObjectStore(root), cleanup: () => rm(root, { recursive: true, force: true }) };
});

describeObjectStoreConformance('filesystem, keeping empty directories', async () => {
  const root = await mkdtemp(join(tmpdir(), 'narwal-fs-store-keep-'));
  return {
    store: new FsObjectStore(root, { keepEmptyDirs: true }),
    cleanup: () => rm(root, { recursive: true, force: true }),
  };
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

  it('keeps the directories a delete empties when asked to, and writes into them again', async () => {
    const root = await mkdtemp(join(tmpdir(), 'narwal-fs-keep-'));
    try {
      const store = new FsObjectStore(root, { keepEmptyDirs: true });
      await store.put('p/k.k/r1.r', Buffer.from('x'));
      await store.delete('p/k.k/r1.r');
      expect(await readdir(join(root, 'objects', 'p'))).toEqual(['k.k']);
      expect(await readdir(join(root, 'objects', 'p', 'k.k'))).toEqual([]);
      await store.put('p/k.k/r2.r', Buffer.from('y'), { ifNoneMatch: '*' });
      expect((await store.list('p/')).keys).toEqual(['p/k.k/r2.r']);
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  });

  // A small file is staged without the thread pool, a large one streamed: both answer alike.
  it.each([
    ['small', Buffer.from('PACK bytes')],
    ['large', Buffer.alloc(3 * 1024 * 1024 + 7, 'PACK bytes')],
  ])(
    'keeps an immutable %s file by reference and copies any other, with the same answers',
    async (_, bytes) => {
      const root = await mkdtemp(join(tmpdir(), 'narwal-fs-link-'));
      try {
        const store = new FsObjectStore(root);
        const source = join(root, 'source.pack');
        await writeFile(source, bytes);
        await chmod(source, 0o444);
        const size = bytes.length;
        const linked = await store.put('r/packs/a.pack', { path: source, size, immutable: true });
        const copied = await store.put('r/packs/b.pack', { path: source, size }, { ifNoneMatch: '*' });
        expect(linked.etag).toBe(copied.etag);
        expect(linked.etag).toBe(`"${createHash('md5').update(bytes).digest('hex')}"`);
        const [origin, a, b] = await Promise.all(
          [
            source,
            join(root, 'objects', 'r', 'packs', 'a.pack'),
            join(root, 'objects', 'r', 'packs', 'b.pack'),
          ].map((p) => stat(p)),
        );
        expect(a?.ino).toBe(origin?.ino);
        expect(b?.ino).not.toBe(origin?.ino);
        for (const key of ['r/packs/a.pack', 'r/packs/b.pack']) {
          const got = await store.get(key);
          expect(got.notModified === false && got.body.equals(bytes)).toBe(true);
        }
        // Its staging name is gone; deleting it from the store leaves the file where it was.
        expect(await readdir(join(root, 'tmp'))).toEqual([]);
        await store.delete('r/packs/a.pack');
        expect((await stat(source)).nlink).toBe(1);
      } finally {
        await rm(root, { recursive: true, force: true });
      }
    },
  );

  it('leaves no lock behind a conditional write, won or lost, and refuses one while a lock is held', async () => {
    const root = await mkdtemp(join(tmpdir(), 'narwal-fs-lock-'));
    try {
      const store = new FsObjectStore(root);
      const first = await store.put('r/index.json', Buffer.from('1'), { ifNoneMatch: '*' });
      await store.put('r/index.json', Buffer.from('2'), { ifMatch: first.etag });
      await expect(
        store.put('r/index.json', Buffer.from('3'), { ifMatch: first.etag }),
      ).rejects.toMatchObject({
        name: 'PreconditionFailed',
      });
      expect(await readdir(join(root, 'locks'))).toEqual([]);
      expect(await readdir(join(root, 'tmp'))).toEqual([]);
      // A fresh lock of another writer: the write is contention, not a lost race, and changes nothing.
      const current = await store.head('r/index.json');
      await writeFile(join(root, 'locks', createHash('sha1').update('r/index.json').digest('hex')), '');
      await expect(
        store.put('r/index.json', Buffer.from('4'), { ifMatch: current.etag }),
      ).rejects.toMatchObject({
        name: 'ConditionalConflict',
      });
      const got = await store.get('r/index.json');
      expect(got.notModified === false && got.body.toString()).toBe('2');
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  });

  it('makes its staging directory again when it is gone, and refuses a body whose file is missing', async () => {
    const root = await mkdtemp(join(tmpdir(), 'narwal-fs-stage-'));
    try {
      const store = new FsObjectStore(root);
      await store.put('a/one', Buffer.from('1'));
      await rm(join(root, 'tmp'), { recursive: true });
      await store.put('a/two', Buffer.from('2'), { ifNoneMatch: '*' });
      await rm(join(root, 'tmp'), { recursive: true });
      await store.put('a/three', { path: join(root, 'objects', 'a', 'one'), size: 1, immutable: true });
      await expect(store.put('a/four', { path: join(root, 'missing'), size: 1 })).rejects.toMatchObject({
        code: 'ENOENT',
      });
      expect((await store.list('a/')).keys).toEqual(['a/one', 'a/three', 'a/two']);
      expect(await readdir(join(root, 'tmp'))).toEqual([]);
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  });
});
