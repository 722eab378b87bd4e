import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { isStoreError } from '../../../lib/store/errors.js';
import { FaultyObjectStore } from '../../../lib/store/FaultyObjectStore.js';
import { FsObjectStore } from '../../../lib/store/FsObjectStore.js';
import { parseFaultSpec } from '../../../lib/store/faultSpec.js';
import { describeObjectStoreConformance } from '../../helpers/storeConformance.js';

describeObjectStoreConformance('faulty wrapper with latency and no faults', async () => {
  const root = await mkdtemp(join(tmpdir(), 'narwal-faulty-'));
  const store = new FaultyObjectStore(new FsObjectStore(root), { latencyMs: 2, faults: [] });
  return { store, cleanup: () => rm(root, { recursive: true, force: true }) };
});

describe('parseFaultSpec', () => {
  it('parses the documented example', () => {
    expect(parseFaultSpec('put409=0.05,put412=0.02,put500=0.01,get503=0.01')).toEqual([
      { op: 'put', kind: '409', applied: false, rate: 0.05 },
      { op: 'put', kind: '412', applied: false, rate: 0.02 },
      { op: 'put', kind: '500', applied: false, rate: 0.01 },
      { op: 'get', kind: '503', applied: false, rate: 0.01 },
    ]);
    expect(parseFaultSpec('puttimeoutapplied=0.1')).toEqual([
      { op: 'put', kind: 'timeout', applied: true, rate: 0.1 },
    ]);
    expect(parseFaultSpec('')).toEqual([]);
  });

  it.each(['put=0.1', 'put409', 'put409=2', 'post500=0.1', 'put409=abc'])(
    'rejects %s with a clear message',
    (spec) => {
      expect(() => parseFaultSpec(spec)).toThrow(/invalid fault rule/);
    },
  );
});

describe('FaultyObjectStore', () => {
  async function withStore(
    spec: string,
    test: (store: FaultyObjectStore, inner: FsObjectStore) => Promise<void>,
  ) {
    const root = await mkdtemp(join(tmpdir(), 'narwal-faulty-'));
    const inner = new FsObjectStore(root);
    try {
      await test(
        new FaultyObjectStore(inner, { latencyMs: 0, faults: parseFaultSpec(spec), random: () => 0 }),
        inner,
      );
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  }

  it('injects 409 only on conditional writes', () =>
    withStore('put409=1', async (store) => {
      await store.put('a', Buffer.from('x'));
      await expect(store.put('b', Buffer.from('x'), { ifNoneMatch: '*' })).rejects.toMatchObject({
        code: 'ConditionalConflict',
      });
    }));

  it('applies the write before an "applied" failure', () =>
    withStore('put500applied=1', async (store, inner) => {
      const error = await store.put('k', Buffer.from('landed')).catch((e: unknown) => e);
      expect(isStoreError(error, 'StoreUnavailable')).toBe(true);
      const got = await inner.get('k');
      expect(got.notModified === false && got.body.toString()).toBe('landed');
    }));

  it('fails without applying a plain 500', () =>
    withStore('put500=1', async (store, inner) => {
      await expect(store.put('k', Buffer.from('x'))).rejects.toMatchObject({ code: 'StoreUnavailable' });
      await expect(inner.get('k')).rejects.toMatchObject({ code: 'NotFound' });
    }));

  it('reports each injected fault and nothing else', async () => {
    const root = await mkdtemp(join(tmpdir(), 'narwal-faulty-'));
    const seen: string[] = [];
    const rolls = [0.9, 0.1];
    const store = new FaultyObjectStore(new FsObjectStore(root), {
      latencyMs: 0,
      faults: parseFaultSpec('put503=0.5'),
      random: () => rolls.shift() ?? 1,
      onFault: (fault, key) => seen.push(`${fault.op}${fault.kind} ${key}`),
    });
    try {
      await store.put('first', Buffer.from('x'));
      await expect(store.put('second', Buffer.from('x'))).rejects.toMatchObject({ code: 'StoreUnavailable' });
      expect(seen).toEqual(['put503 second']);
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  });
});
