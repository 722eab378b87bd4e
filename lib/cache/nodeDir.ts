/**
 * Each narwal process is a node with a cache directory of its own under `<cache>/nodes/`. Nodes
 * sharing a data directory share the store (the truth) but not caches: one node's catch-up can
 * never move another node's repository backwards. A node removes its directory when it stops;
 * directories of nodes whose process is gone are swept at start-up.
 */
import { randomBytes } from 'node:crypto';
import { mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

export interface NodeDir {
  readonly id: string;
  readonly dir: string;
  remove(): Promise<void>;
}

export async function claimNodeDir(cacheRoot: string): Promise<NodeDir> {
  const nodes = join(cacheRoot, 'nodes');
  await mkdir(nodes, { recursive: true });
  await sweepDeadNodes(nodes);
  const id = `${process.pid}-${randomBytes(4).toString('hex')}`;
  const dir = join(nodes, id);
  await mkdir(dir);
  await writeFile(
    join(dir, 'owner.json'),
    JSON.stringify({ pid: process.pid, started: new Date().toISOString() }),
  );
  return { id, dir, remove: () => rm(dir, { recursive: true, force: true }) };
}

async function sweepDeadNodes(nodes: string): Promise<void> {
  for (const name of await readdir(nodes)) {
    const owner = await readFile(join(nodes, name, 'owner.json'), 'utf8').then(
      (text) => JSON.parse(text) as { pid?: unknown },
      () => ({ pid: undefined }),
    );
    if (typeof owner.pid === 'number' && isAlive(owner.pid)) continue;
    await rm(join(nodes, name), { recursive: true, force: true });
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return error instanceof Error && 'code' in error && error.code === 'EPERM';
  }
}
