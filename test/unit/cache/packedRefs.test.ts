import { describe, expect, it } from 'vitest';
import { parsePackedRefs, writePackedRefs } from '../../../lib/cache/packedRefs.js';

const A = 'a'.repeat(40);
const B = 'b'.repeat(40);
const C = 'c'.repeat(40);
const D = 'd'.repeat(40);

describe('packed-refs', () => {
  it('writes the sorted header and one line per ref', () => {
    const text = writePackedRefs(
      new Map([
        ['refs/heads/main', A],
        ['refs/tags/v1', B],
      ]),
    );
    expect(text).toBe(`# pack-refs with: sorted \n${A} refs/heads/main\n${B} refs/tags/v1\n`);
  });

  it('writes only the header for no refs', () => {
    expect(writePackedRefs(new Map())).toBe('# pack-refs with: sorted \n');
    expect(parsePackedRefs(writePackedRefs(new Map()))).toEqual(new Map());
  });

  it('sorts by bytes, as git compares ref names', () => {
    const refs = new Map([
      ['refs/heads/a', A],
      ['refs/heads/Z', B],
      ['refs/heads/a/b', C],
      ['refs/heads/a-b', D],
    ]);
    const names = writePackedRefs(refs)
      .split('\n')
      .slice(1, -1)
      .map((line) => line.slice(41));
    // 'Z' (0x5a) < 'a' (0x61); '-' (0x2d) < '/' (0x2f).
    expect(names).toEqual(['refs/heads/Z', 'refs/heads/a', 'refs/heads/a-b', 'refs/heads/a/b']);
  });

  it('sorts non-ASCII names by their UTF-8 bytes, not UTF-16 code units', () => {
    // U+FFFD is EF BF BD in UTF-8; U+1F600 is F0 9F 98 80, but its UTF-16 lead unit (D83D)
    // sorts before FFFD, so a JavaScript string comparison would order these the other way.
    const refs = new Map([
      ['refs/heads/\u{1F600}', A],
      ['refs/heads/\uFFFD', B],
      ['refs/heads/é', C],
      ['refs/heads/z', D],
    ]);
    const text = writePackedRefs(refs);
    const names = text
      .split('\n')
      .slice(1, -1)
      .map((line) => line.slice(41));
    expect(names).toEqual(['refs/heads/z', 'refs/heads/é', 'refs/heads/\uFFFD', 'refs/heads/\u{1F600}']);
    expect(parsePackedRefs(text)).toEqual(refs);
  });

  it('round-trips any ref map', () => {
    const refs = new Map([
      ['refs/tags/v2', D],
      ['refs/heads/main', A],
      ['refs/heads/feature/x', B],
      ['refs/notes/commits', C],
    ]);
    const parsed = parsePackedRefs(writePackedRefs(refs));
    expect(parsed).toEqual(refs);
    expect([...parsed.keys()]).toEqual([
      'refs/heads/feature/x',
      'refs/heads/main',
      'refs/notes/commits',
      'refs/tags/v2',
    ]);
  });

  it('ignores comments, blank lines and peeled (^) lines when parsing', () => {
    const text = [
      '# pack-refs with: peeled fully-peeled sorted ',
      `${A} refs/heads/main`,
      `${B} refs/tags/v1`,
      `^${C}`,
      '',
      `${D} refs/tags/v2`,
      `^${A}`,
      '',
    ].join('\n');
    expect(parsePackedRefs(text)).toEqual(
      new Map([
        ['refs/heads/main', A],
        ['refs/tags/v1', B],
        ['refs/tags/v2', D],
      ]),
    );
  });
});
