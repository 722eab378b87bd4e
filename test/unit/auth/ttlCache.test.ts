import { describe, expect, it } from 'vitest';
import { TtlCache } from '../../../lib/auth/TtlCache.js';

describe('TtlCache', () => {
  it('serves a value until its life, counted from when it was read, runs out', () => {
    let now = 1_000;
    const cache = new TtlCache<string, number>({ ttlMs: 100, maxEntries: 10, now: () => now });
    cache.set('a', 1, 950);
    now = 1_049;
    expect(cache.get('a')).toBe(1);
    now = 1_050;
    expect(cache.get('a')).toBeUndefined();
  });

  it('keeps the life when a value is updated in place', () => {
    let now = 0;
    const cache = new TtlCache<string, number>({ ttlMs: 100, maxEntries: 10, now: () => now });
    cache.set('a', 1, 0);
    now = 60;
    cache.update('a', 2);
    cache.update('missing', 3);
    expect(cache.get('a')).toBe(2);
    expect(cache.get('missing')).toBeUndefined();
    now = 100;
    expect(cache.get('a')).toBeUndefined();
  });

  it('caches nothing with a life of 0', () => {
    const cache = new TtlCache<string, number>({ ttlMs: 0, maxEntries: 10, now: () => 0 });
    cache.set('a', 1, 0);
    expect(cache.get('a')).toBeUndefined();
  });

  it('drops the oldest entry past its size and forgets deleted ones', () => {
    const cache = new TtlCache<string, number>({ ttlMs: 1_000, maxEntries: 2, now: () => 0 });
    cache.set('a', 1, 0);
    cache.set('b', 2, 0);
    cache.set('c', 3, 0);
    expect([cache.get('a'), cache.get('b'), cache.get('c')]).toEqual([undefined, 2, 3]);
    cache.delete('b');
    expect(cache.get('b')).toBeUndefined();
  });
});
