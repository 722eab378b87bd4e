/**
 * The advertisements that open a transfer, with real git and a fake of the cache (fakeCache.ts):
 * receive-pack's written from the index alone, upload-pack's asked of git once per state.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { silentLogger } from '../../../lib/log.js';
import type { RefValue } from '../../../lib/protocol/refValue.js';
import {
  type AdvertiseDeps,
  advertiseReceivePack,
  advertiseUploadPack,
} from '../../../lib/transfer/advertiseRefs.js';
import { StateAnswers } from '../../../lib/transfer/StateAnswers.js';
import { FakeCache, type Fixture, fixture, gitWith, loadedIndex } from './fakeCache.js';

let f: Fixture;
beforeAll(async () => {
  f = await fixture();
});

function deps(
  cache: FakeCache,
  options: { slots?: number; refs?: Map<string, RefValue> } = {},
): AdvertiseDeps {
  return {
    git: gitWith(f.home, options.slots ?? 8),
    packObjectsHook: null,
    ensureHooks: async () => {},
    cache: Object.assign(cache, { emptyRepo: async () => f.bare }),
    wal: { allRefs: async () => options.refs ?? new Map() },
    refAnswers: new StateAnswers({ maxBytes: 1 << 20 }),
    logger: silentLogger,
    gitAgent: 'git/2.39.5',
  };
}

describe('advertiseReceivePack', () => {
  it('writes the refs of the index without git or a generation', async () => {
    const cache = new FakeCache(f.bare, { complete: false });
    const refs = new Map([['refs/heads/main', { oid: f.main }]]);
    const answer = await advertiseReceivePack(deps(cache, { slots: 0, refs }), loadedIndex(), undefined);
    expect(answer.toString()).toContain(`${f.main} refs/heads/main\0`);
    expect(answer.toString()).toContain('agent=git/2.39.5');
    expect(cache.leased).toBe(0);
  });
});

describe('advertiseUploadPack', () => {
  it('asks git once per state and answers again from memory', async () => {
    const cache = new FakeCache(f.bare, { complete: false });
    const d = deps(cache);
    const request = { repo: 'team/app', loaded: loadedIndex(), protocol: undefined, owner: 't' };
    const first = await advertiseUploadPack(d, request);
    expect(first.toString()).toContain(`${f.main} refs/heads/main`);
    const again = await advertiseUploadPack({ ...d, git: gitWith(f.home, 0) }, request);
    expect(again).toEqual(first);
    expect(cache.leased).toBe(1);
    await expect.poll(() => cache.held).toBe(0);
  });

  it('answers a v2 client its capabilities, the same for every repository, with no generation', async () => {
    const cache = new FakeCache(f.bare, { complete: false });
    const answer = await advertiseUploadPack(deps(cache), {
      repo: 'team/app',
      loaded: null,
      protocol: 'version=2',
      owner: 't',
    });
    expect(answer.toString()).toContain('version 2');
    expect(answer.toString()).toContain('ls-refs');
    expect(cache.leased).toBe(0);
  });
});
