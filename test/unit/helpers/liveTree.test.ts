import { mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { livePaths, liveTree } from '../../helpers/liveTree.js';

describe('liveTree', () => {
  const roots: string[] = [];
  afterEach(async () => {
    for (const root of roots.splice(0)) await rm(root, { recursive: true, force: true });
  });

  it("lists what readdir's recursive listing lists, directories marked", async () => {
    const root = await mkdtemp(join(tmpdir(), 'live-tree-'));
    roots.push(root);
    await mkdir(join(root, 'a', 'b', 'c'), { recursive: true });
    await mkdir(join(root, 'empty'));
    await writeFile(join(root, 'a', 'b', 'file.pack'), 'x');
    await writeFile(join(root, 'top'), 'y');
    const expected = ((await readdir(root, { recursive: true })) as string[]).sort();
    expect((await livePaths(root)).sort()).toEqual(expected);
    const directories = (await liveTree(root)).filter((e) => e.directory).map((e) => e.path);
    expect(directories.sort()).toEqual(['a', 'a/b', 'a/b/c', 'empty']);
  });

  it('fails when the root itself is missing, as readdir does', async () => {
    await expect(liveTree(join(tmpdir(), 'live-tree-missing-root'))).rejects.toMatchObject({
      code: 'ENOENT',
    });
  });
});
