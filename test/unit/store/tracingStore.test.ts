import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { FsObjectStore } from '../../../lib/store/FsObjectStore.js';
import { type StoreSpan, TracingObjectStore } from '../../../lib/store/TracingObjectStore.js';
import { describeObjectStoreConformance } from '../../helpers/storeConformance.js';

describeObjectStoreConformance('tracing wrapper', async () => {
  const root = await mkdtemp(join(tmpdir(), 'narwal-tracing-'));
  const store = new TracingObjectStore(new FsObjectStore(root), 'store', () => {});
  return { store, cleanup: () => rm(root, { recursive: true, force: true }) };
});

describe('TracingObjectStore', () => {
  it('reports every operation with its outcome', async () => {
    const root = await mkdtemp(join(tmpdir(), 'narwal-tracing-'));
    try {
      const spans: StoreSpan[] = [];
      const store = new TracingObjectStore(new FsObjectStore(root), 'store', (s) => spans.push(s));
      const before = Date.now();
      const { etag } = await store.put('a/b.json', Buffer.from('{}'), { ifNoneMatch: '*' });
      await expect(store.put('a/b.json', Buffer.from('{}'), { ifNoneMatch: '*' })).rejects.toThrow();
      await store.get('a/b.json', { ifNoneMatch: etag });
      await expect(store.get('a/missing.json')).rejects.toThrow();
      expect(spans.map((s) => [s.op, s.key, s.error, s.notModified, s.conditional])).toEqual([
        ['put', 'a/b.json', undefined, undefined, true],
        ['put', 'a/b.json', 'PreconditionFailed', undefined, true],
        ['get', 'a/b.json', undefined, true, true],
        ['get', 'a/missing.json', 'NotFound', undefined, undefined],
      ]);
      for (const s of spans) {
        expect(s.store).toBe('store');
        expect(s.ms).toBeGreaterThanOrEqual(0);
        expect(s.start).toBeGreaterThanOrEqual(before - 1);
      }
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  });
});
