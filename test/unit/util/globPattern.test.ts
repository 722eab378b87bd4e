import { describe, expect, it } from 'vitest';
import { globRegExp, matchesGlob } from '../../../lib/util/globPattern.js';

describe('matchesGlob', () => {
  it('matches `*` within one segment and `**` across segments', () => {
    expect(matchesGlob('team/*', 'team/app')).toBe(true);
    expect(matchesGlob('team/*', 'team/app/sub')).toBe(false);
    expect(matchesGlob('team/**', 'team/app/sub')).toBe(true);
    expect(matchesGlob('refs/heads/release-*', 'refs/heads/release-1.2')).toBe(true);
    expect(matchesGlob('refs/heads/main', 'refs/heads/main')).toBe(true);
    expect(matchesGlob('refs/heads/main', 'refs/heads/mainline')).toBe(false);
  });

  it('takes every other character literally', () => {
    expect(matchesGlob('a.b/*', 'axb/c')).toBe(false);
    expect(matchesGlob('a+(b)/*', 'a+(b)/c')).toBe(true);
    expect(matchesGlob('x[1]/*', 'x1/c')).toBe(false);
    expect(matchesGlob('x[1]/*', 'x[1]/c')).toBe(true);
  });

  it('compiles a pattern once', () => {
    expect(globRegExp('team/**')).toBe(globRegExp('team/**'));
  });
});
