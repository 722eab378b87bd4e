import { mkdtemp, readdir, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { dropOtherBitmaps } from '../../../lib/cache/dropOtherBitmaps.js';

/** A pack directory with `files`, each made a second after the one before it. */
async function packDir(files: readonly string[]): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'narwal-bitmaps-'));
  const start = Date.now() / 1000 - files.length;
  for (const [i, file] of files.entries()) {
    await writeFile(join(dir, file), 'x');
    await utimes(join(dir, file), start + i, start + i);
  }
  return dir;
}

describe('one reachability bitmap per pack directory', () => {
  it("drops the other packs' bitmaps, and only their bitmaps, once the kept one is there", async () => {
    const dir = await packDir([
      'old.pack',
      'old.idx',
      'old.bitmap',
      'new.pack',
      'new.idx',
      'new.bitmap',
      'x.idx',
    ]);
    await dropOtherBitmaps(dir, ['new']);
    expect((await readdir(dir)).sort()).toEqual([
      'new.bitmap',
      'new.idx',
      'new.pack',
      'old.idx',
      'old.pack',
      'x.idx',
    ]);
  });

  it("keeps a newer pack's bitmap when a generation of a past state names an older checkpoint", async () => {
    const dir = await packDir(['old.pack', 'old.idx', 'old.bitmap', 'new.pack', 'new.idx', 'new.bitmap']);
    await dropOtherBitmaps(dir, ['old']);
    expect((await readdir(dir)).filter((f) => f.endsWith('.bitmap')).sort()).toEqual([
      'new.bitmap',
      'old.bitmap',
    ]);
  });

  it('keeps an older bitmap when the new one did not arrive', async () => {
    const dir = await packDir(['old.pack', 'old.idx', 'old.bitmap', 'new.pack', 'new.idx']);
    await dropOtherBitmaps(dir, ['new']);
    expect(await readdir(dir)).toContain('old.bitmap');
  });
});
