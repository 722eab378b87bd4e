/**
 * Which plans are made ahead: the wants of git's own clones (every ref for `clone --bare` and the
 * bundle list, branches and tags for `clone`), each set once, kept under a name that depends on
 * the set alone.
 */
import { describe, expect, it } from 'vitest';
import type { RefValue } from '../../../lib/protocol/refValue.js';
import { cloneWants } from '../../../lib/transfer/plansAhead.js';
import { planKey, tagsToFollow } from '../../../lib/transfer/uriPlan.js';

const oid = (c: string) => c.repeat(40);

describe('planKey', () => {
  it('names a set of wants: order and repeats change nothing, another set another name', () => {
    const key = planKey([oid('a'), oid('b')]);
    expect(planKey([oid('b'), oid('a'), oid('b')])).toBe(key);
    expect(key).toMatch(/^clone-[0-9a-f]{64}$/);
    expect(planKey([oid('a')])).not.toBe(key);
    expect(planKey([oid('a'), oid('b'), oid('c')])).not.toBe(key);
  });

  it('names the same wants with tags to follow apart', () => {
    expect(planKey([oid('a')], true)).not.toBe(planKey([oid('a')]));
    expect(planKey([oid('a')], false)).toBe(planKey([oid('a')]));
  });
});

describe('tagsToFollow', () => {
  it('is the annotated tags under refs/tags/ not wanted, by object, with what each peels to', () => {
    const refs = new Map<string, RefValue>([
      ['refs/heads/main', { oid: oid('a') }],
      ['refs/tags/v1', { oid: oid('b'), peeled: oid('a') }],
      ['refs/tags/v1-again', { oid: oid('b'), peeled: oid('a') }],
      ['refs/tags/v2', { oid: oid('c'), peeled: oid('d') }],
      ['refs/tags/light', { oid: oid('a') }],
      ['refs/notes/tagged', { oid: oid('e'), peeled: oid('a') }],
    ]);
    expect(tagsToFollow(refs, [oid('a')])).toEqual(
      new Map([
        [oid('b'), oid('a')],
        [oid('c'), oid('d')],
      ]),
    );
    // A clone of every ref wants every tag already.
    expect(tagsToFollow(refs, [oid('a'), oid('b'), oid('c'), oid('e')]).size).toBe(0);
  });
});

describe('cloneWants', () => {
  const refs = (entries: [string, string][]): Map<string, RefValue> =>
    new Map(entries.map(([name, value]) => [name, { oid: value }]));

  it('is every ref and the branches and tags, when other refs are there', () => {
    const sets = cloneWants(
      refs([
        ['refs/heads/main', oid('a')],
        ['refs/tags/v1', oid('b')],
        ['refs/pull/1/head', oid('c')],
        ['refs/notes/commits', oid('d')],
      ]),
    );
    expect(sets.map((wants) => [...wants].sort())).toEqual([
      [oid('a'), oid('b'), oid('c'), oid('d')],
      [oid('a'), oid('b')],
    ]);
  });

  it('is one set when branches and tags are all the refs, and none for no refs', () => {
    const sets = cloneWants(
      refs([
        ['refs/heads/main', oid('a')],
        ['refs/heads/dev', oid('a')],
        ['refs/tags/v1', oid('b')],
      ]),
    );
    expect(sets).toHaveLength(1);
    expect(planKey(sets[0] as string[])).toBe(planKey([oid('a'), oid('b')]));
    expect(cloneWants(new Map())).toEqual([]);
  });

  it('is the other refs alone when there are no branches or tags', () => {
    expect(cloneWants(refs([['refs/pull/1/head', oid('c')]]))).toEqual([[oid('c')]]);
  });
});
