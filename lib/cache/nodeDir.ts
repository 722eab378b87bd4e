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

/**
 * A directory is its node's from `mkdir` on, before `owner.json` is written (another node may be
 * starting at this moment), so the pid in its name decides; `owner.json` is only a fallback for
 * names of another form. A half-written or unreadable `owner.json` is not a reason to crash.
 */
async function sweepDeadNodes(nodes: string): Promise<void> {
  for (const name of await readdir(nodes)) {
    const pid = pidOfName(name) ?? (await ownerPid(join(nodes, name, 'owner.json')));
    if (pid !== undefined && isAlive(pid)) continue;
    await rm(join(nodes, name), { recursive: true, force: true });
  }
}

function pidOfName(name: string): number | undefined {
  const match = /^(\d+)-[0-9a-f]+$/.exec(name);
  return match?.[1] ? Number(match[1]) : undefined;
}

async function ownerPid(path: string): Promise<number | undefined> {
  try {
    const owner = JSON.parse(await readFile(path, 'utf8')) as { pid?: unknown };
    return typeof owner.pid === 'number' ? owner.pid : undefined;
  } catch {
    return undefined;
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
