/**
 * A node warms its page libraries and a git reader up before it listens; that is a courtesy to the
 * first visitor, never a condition of starting. The chaos run found nodes that would not start
 * because the shared cache was deleted under the warm-up's git (`git cat-file exited (128)`).
 */
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { startProcess, tempDataDir } from '../helpers/narwalServer.js';

const dirs: string[] = [];
afterAll(async () => {
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
});

describe('narwal serve', () => {
  it('starts and answers even when its warm-up cannot read the shared cache', async () => {
    const dataDir = await tempDataDir();
    dirs.push(dataDir);
    // The empty repository the warm-up reads, damaged: it has the file that marks it complete
    // and nothing else, as a deletion in the middle of it would leave it.
    const empty = join(dataDir, 'cache', 'empty.git');
    await mkdir(empty, { recursive: true });
    await writeFile(join(empty, 'packed-refs'), '');
    const node = await startProcess({ dataDir });
    try {
      const response = await fetch(`${node.url}/healthz`);
      expect(response.status).toBe(200);
      expect(node.output()).toMatch(/warm-up skipped/);
    } finally {
      await node.stop();
    }
  });
});
