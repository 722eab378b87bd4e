import { mkdtemp, readdir, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { dropOtherBitmaps } from '../../../lib/cache/dropOtherBitmaps.js';

async function packDir(files: readonly string[]): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'narwal-bitmaps-'));
  for (const file of files) await writeFile(join(dir, file), 'x');
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

  it('keeps an older bitmap when the new one did not arrive', async () => {
    const dir = await packDir(['old.pack', 'old.idx', 'old.bitmap', 'new.pack', 'new.idx']);
    await dropOtherBitmaps(dir, ['new']);
    expect(await readdir(dir)).toContain('old.bitmap');
  });
});
