import { execFileSync } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { PACKED_REFS_HEADER, writePackedRefs } from '../../../lib/cache/packedRefs.js';
import type { RefValue } from '../../../lib/protocol/refValue.js';

const A = 'a'.repeat(40);
const B = 'b'.repeat(40);
const C = 'c'.repeat(40);
const D = 'd'.repeat(40);

const values = (entries: [string, string][]) =>
  new Map<string, RefValue>(entries.map(([name, oid]) => [name, { oid }]));
const names = (text: string) =>
  text
    .split('\n')
    .filter((line) => line !== '' && !line.startsWith('#') && !line.startsWith('^'))
    .map((line) => line.slice(41));

describe('packed-refs', () => {
  it('writes the fully-peeled header, one line per ref and a ^ line after each annotated tag', () => {
    const text = writePackedRefs(
      new Map<string, RefValue>([
        ['refs/tags/v1', { oid: B, peeled: C }],
        ['refs/heads/main', { oid: A }],
      ]),
    );
    expect(text).toBe(`${PACKED_REFS_HEADER}${A} refs/heads/main\n${B} refs/tags/v1\n^${C}\n`);
    expect(PACKED_REFS_HEADER).toBe('# pack-refs with: peeled fully-peeled sorted \n');
  });

  it('writes only the header for no refs', () => {
    expect(writePackedRefs(new Map())).toBe(PACKED_REFS_HEADER);
  });

  it('sorts by bytes, as git compares ref names', () => {
    const text = writePackedRefs(
      values([
        ['refs/heads/a', A],
        ['refs/heads/Z', B],
        ['refs/heads/a/b', C],
        ['refs/heads/a-b', D],
      ]),
    );
    // 'Z' (0x5a) < 'a' (0x61); '-' (0x2d) < '/' (0x2f).
    expect(names(text)).toEqual(['refs/heads/Z', 'refs/heads/a', 'refs/heads/a-b', 'refs/heads/a/b']);
  });

  it('sorts non-ASCII names by their UTF-8 bytes, not UTF-16 code units', () => {
    // U+FFFD is EF BF BD in UTF-8; U+1F600 is F0 9F 98 80, but its UTF-16 lead unit (D83D)
    // sorts before FFFD, so a JavaScript string comparison would order these the other way.
    const text = writePackedRefs(
      values([
        ['refs/heads/\u{1F600}', A],
        ['refs/heads/\uFFFD', B],
        ['refs/heads/é', C],
        ['refs/heads/z', D],
      ]),
    );
    expect(names(text)).toEqual([
      'refs/heads/z',
      'refs/heads/é',
      'refs/heads/\uFFFD',
      'refs/heads/\u{1F600}',
    ]);
  });

  it('is read by git as written, peeled values included, with no objects present', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'narwal-packed-refs-'));
    try {
      await mkdir(join(dir, 'objects', 'pack'), { recursive: true });
      await mkdir(join(dir, 'refs'));
      await writeFile(join(dir, 'HEAD'), 'ref: refs/heads/main\n');
      await writeFile(join(dir, 'config'), '[core]\n\trepositoryformatversion = 0\n\tbare = true\n');
      await writeFile(
        join(dir, 'packed-refs'),
        writePackedRefs(
          new Map<string, RefValue>([
            ['refs/heads/main', { oid: A }],
            ['refs/tags/v1', { oid: B, peeled: A }],
          ]),
        ),
      );
      const advertised = execFileSync('git', ['upload-pack', '--stateless-rpc', '--advertise-refs', dir], {
        env: { PATH: process.env.PATH, GIT_CONFIG_NOSYSTEM: '1', HOME: dir },
      }).toString();
      expect(advertised).toContain(`${A} refs/heads/main`);
      expect(advertised).toContain(`${B} refs/tags/v1`);
      expect(advertised).toContain(`${A} refs/tags/v1^{}`);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
