import { describe, expect, it } from 'vitest';
import { diffStates } from '../../../lib/history/diffStates.js';
import { InvalidRefPattern, refMatcher } from '../../../lib/history/refPattern.js';

describe('ref patterns for rewinds', () => {
  it('matches exact names, one segment with *, any depth with **, and prefixes ending in /', () => {
    const cases: [string, string, boolean][] = [
      ['refs/heads/main', 'refs/heads/main', true],
      ['refs/heads/main', 'refs/heads/main2', false],
      ['refs/heads/*', 'refs/heads/main', true],
      ['refs/heads/*', 'refs/heads/team/x', false],
      ['refs/heads/**', 'refs/heads/team/x', true],
      ['refs/heads/release-*', 'refs/heads/release-1.2', true],
      ['refs/heads/release-*', 'refs/heads/releaseX', false],
      ['refs/tags/', 'refs/tags/v1', true],
      ['refs/tags/', 'refs/heads/v1', false],
      ['refs/heads/a.b', 'refs/heads/aXb', false],
      ['refs/*/main', 'refs/heads/main', true],
    ];
    for (const [pattern, ref, expected] of cases)
      expect(refMatcher(pattern)(ref), `${pattern} ~ ${ref}`).toBe(expected);
  });

  it('refuses patterns it cannot mean', () => {
    for (const bad of ['', 'refs/[a]', 'refs/heads/a b', 'refs/***', 'a?b', 'x'.repeat(300), 'refs\\heads'])
      expect(() => refMatcher(bad), bad).toThrow(InvalidRefPattern);
  });
});

describe('diffs of two ref states', () => {
  it('sorts refs into added, removed and moved', () => {
    const a = new Map([
      ['refs/heads/main', { oid: '1'.repeat(40) }],
      ['refs/heads/gone', { oid: '2'.repeat(40) }],
      ['refs/heads/same', { oid: '3'.repeat(40) }],
    ]);
    const b = new Map([
      ['refs/heads/main', { oid: '4'.repeat(40) }],
      ['refs/heads/same', { oid: '3'.repeat(40) }],
      ['refs/tags/new', { oid: '5'.repeat(40) }],
    ]);
    expect(diffStates(a, b)).toEqual({
      added: [{ ref: 'refs/tags/new', new: '5'.repeat(40) }],
      removed: [{ ref: 'refs/heads/gone', old: '2'.repeat(40) }],
      moved: [{ ref: 'refs/heads/main', old: '1'.repeat(40), new: '4'.repeat(40) }],
    });
    expect(diffStates(a, a)).toEqual({ added: [], removed: [], moved: [] });
  });
});
