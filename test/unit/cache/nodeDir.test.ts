import { mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { claimNodeDir } from '../../../lib/cache/nodeDir.js';

let root = '';
afterEach(async () => {
  if (root) await rm(root, { recursive: true, force: true });
});

describe('claimNodeDir', () => {
  it('keeps the directory of a live node that has not written owner.json yet', async () => {
    root = await mkdtemp(join(tmpdir(), 'narwal-nodedir-'));
    const starting = `${process.pid}-abcd1234`;
    await mkdir(join(root, 'nodes', starting), { recursive: true });
    const claimed = await claimNodeDir(root);
    expect((await readdir(join(root, 'nodes'))).sort()).toEqual([claimed.id, starting].sort());
  });

  it('does not fail on a half-written owner.json, and removes directories of dead nodes', async () => {
    root = await mkdtemp(join(tmpdir(), 'narwal-nodedir-'));
    // pid 2^22 + 1 is above Linux's pid_max: never alive.
    const dead = `${2 ** 22 + 1}-00ff00ff`;
    await mkdir(join(root, 'nodes', dead), { recursive: true });
    await writeFile(join(root, 'nodes', dead, 'owner.json'), '{"pid":');
    await mkdir(join(root, 'nodes', 'other'), { recursive: true });
    await writeFile(join(root, 'nodes', 'other', 'owner.json'), '{"pi');
    const claimed = await claimNodeDir(root);
    expect(await readdir(join(root, 'nodes'))).toEqual([claimed.id]);
  });
});
