import { describe, expect, it } from 'vitest';
import {
  decideTransferRoute,
  estimatePackBytes,
  largestRecentPush,
  parseClientRoute,
  poolLocation,
  RECENT_PUSHES,
  type RouteInput,
} from '../../../lib/http/transferRoute.js';
import { ZERO_OID } from '../../../lib/protocol/refValue.js';
import type { LogItem, RepoIndex } from '../../../lib/wal/types.js';

const limits = { maxCloneBytes: 1000, maxPushBytes: 100 };

function item(seq: number, bytes: number | undefined, refs = 1): LogItem {
  return {
    seq,
    key: `entries/${seq}.json`,
    time: '2026-12-01T00:00:00Z',
    who: { token: 't' },
    updates: Array.from({ length: refs }, (_, i) => ({
      ref: `refs/heads/b${i}`,
      old: ZERO_OID,
      new: 'a'.repeat(40),
    })),
    packs: bytes === undefined ? [] : [`pack-${seq}`],
    ...(bytes === undefined ? {} : { bytes }),
  };
}

function index(tail: LogItem[], checkpoint?: { seq: number; bytes: number }): RepoIndex {
  return {
    v: 2,
    repo: 'o/r',
    created: '2026-12-01T00:00:00Z',
    seq: tail.at(-1)?.seq ?? checkpoint?.seq ?? 0,
    head: 'refs/heads/main',
    public: false,
    tables: [],
    recent: [],
    paged: 0,
    pagedCheckpoint: null,
    checkpoint: checkpoint
      ? {
          seq: checkpoint.seq,
          key: 'checkpoints/c.json',
          table: 'tables/t.json',
          count: 1,
          packs: ['pack-c'],
          bytes: checkpoint.bytes,
        }
      : null,
    tail,
  };
}

function decide(partial: Partial<RouteInput>): ReturnType<typeof decideTransferRoute> {
  return decideTransferRoute({
    service: 'git-upload-pack',
    index: null,
    itemsAfterCheckpoint: [],
    recentItems: [],
    clientAsked: false,
    limits,
    ...partial,
  });
}

describe('estimatePackBytes', () => {
  it('adds the checkpoint pack to the packs pushed after it, counting unsized items as empty', () => {
    const idx = index([item(3, 50), item(4, undefined), item(5, 25)], { seq: 2, bytes: 900 });
    expect(estimatePackBytes(idx, idx.tail)).toBe(975);
    expect(estimatePackBytes(index([]), [])).toBe(0);
  });
});

describe('largestRecentPush', () => {
  it('looks only at the newest pushes, not at checkpoints or older history', () => {
    const old = item(1, 5000);
    const recent = Array.from({ length: RECENT_PUSHES }, (_, i) => item(i + 2, 10 + i));
    expect(largestRecentPush([old, ...recent])).toBe(10 + RECENT_PUSHES - 1);
    expect(largestRecentPush([item(1, 400), item(2, 7000, 0)])).toBe(400);
  });
});

describe('decideTransferRoute for fetches and clones', () => {
  it('keeps a small repository on Lambda and says how big it is', () => {
    const idx = index([item(1, 300), item(2, 200)]);
    expect(decide({ index: idx, itemsAfterCheckpoint: idx.tail })).toEqual({
      target: 'lambda',
      reason: 'estimated pack of 500 bytes',
    });
  });

  it('sends a repository whose estimated pack exceeds the limit to the pool', () => {
    const idx = index([item(4, 101)], { seq: 3, bytes: 900 });
    expect(decide({ index: idx, itemsAfterCheckpoint: idx.tail })).toEqual({
      target: 'pool',
      reason: 'estimated pack of 1001 bytes exceeds 1000',
    });
  });

  it('keeps a pack of exactly the limit on Lambda', () => {
    const idx = index([item(1, 1000)]);
    expect(decide({ index: idx, itemsAfterCheckpoint: idx.tail }).target).toBe('lambda');
  });

  it('answers a missing repository where it is asked', () => {
    expect(decide({ index: null })).toEqual({ target: 'lambda', reason: 'no such repository' });
  });

  it('sends the transfer to the pool when the client asks, whatever the size', () => {
    expect(decide({ index: index([]), clientAsked: true })).toEqual({
      target: 'pool',
      reason: 'the client asked for the pool',
    });
  });
});

describe('decideTransferRoute for pushes', () => {
  const push = (partial: Partial<RouteInput>) =>
    decide({ service: 'git-receive-pack', recentItems: partial.index?.tail ?? [], ...partial });

  it('sends the first push into a missing or empty repository to the pool', () => {
    expect(push({ index: null })).toEqual({ target: 'pool', reason: 'push to an empty repository' });
    expect(push({ index: index([]) })).toEqual({ target: 'pool', reason: 'push to an empty repository' });
  });

  it('keeps pushes on Lambda while recent pushes were small', () => {
    expect(push({ index: index([item(1, 90), item(2, 100)]) })).toEqual({
      target: 'lambda',
      reason: 'recent pushes at most 100 bytes',
    });
  });

  it('sends pushes to the pool after a large recent push', () => {
    expect(push({ index: index([item(1, 101), item(2, 3)]) })).toEqual({
      target: 'pool',
      reason: 'a recent push of 101 bytes exceeds 100',
    });
  });

  it('ignores the size of the repository itself', () => {
    expect(push({ index: index([item(2, 1)], { seq: 1, bytes: 10 ** 9 }) }).target).toBe('lambda');
  });

  it('sends the push to the pool when the client asks', () => {
    expect(push({ index: index([item(1, 1)]), clientAsked: true }).target).toBe('pool');
  });
});

describe('poolLocation', () => {
  it('keeps the path and the query, so git takes the pool as its new base URL', () => {
    expect(
      poolLocation(
        'https://pool.example',
        '/team/app.git/info/refs',
        new URLSearchParams('service=git-upload-pack'),
      ),
    ).toBe('https://pool.example/team/app.git/info/refs?service=git-upload-pack');
    expect(poolLocation('http://p:8080/base', '/r/info/refs', new URLSearchParams())).toBe(
      'http://p:8080/base/r/info/refs',
    );
    expect(poolLocation('http://p', 'r/info/refs', new URLSearchParams('a=1&b=x%20y'))).toBe(
      'http://p/r/info/refs?a=1&b=x+y',
    );
  });
});

describe('parseClientRoute', () => {
  it.each([
    [undefined, null],
    ['', null],
    ['pool', 'pool'],
    [' Pool ', 'pool'],
    ['lambda', 'invalid'],
    ['yes', 'invalid'],
  ] as const)('reads %j as %j', (value, expected) => {
    expect(parseClientRoute(value)).toBe(expected);
  });
});
