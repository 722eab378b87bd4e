/**
 * Nodes that share a cache but not process ids: each `narwal serve` runs in a PID namespace of
 * its own (unshare, as root), as Lambda sandboxes and pool containers do, all on one data
 * directory, and one of them is PID 1 in its namespace (a pool container's node). No node may
 * take another's live scratch directory for a dead one; a directory whose node is really gone is
 * removed all the same, PID 1 or not.
 */
import { readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deleteInUse } from '../helpers/deleteInUse.js';
import { type GitOutput, git, gitOk, makeHome, workRepo } from '../helpers/gitClient.js';
import { startProcess, tempDataDir } from '../helpers/narwalServer.js';
import { namespacePid, ownPidNamespace } from '../helpers/pidNamespace.js';

type Node = Awaited<ReturnType<typeof startProcess>>;

// Records vouch for a second; every node sweeps every second (with idle eviction).
const ENV = { NARWAL_NODE_TTL_MS: '1000', NARWAL_IDLE_EVICT_MS: '1000' };

let home: string;
let dataDir: string;
const started: Node[] = [];

beforeAll(async () => {
  home = await makeHome();
  dataDir = await tempDataDir();
});
afterAll(async () => {
  for (const node of started) {
    if (node.child.exitCode === null && node.child.signalCode === null) await node.stop();
  }
  await rm(dataDir, { recursive: true, force: true });
  await rm(home, { recursive: true, force: true });
});

async function start(pid1: boolean): Promise<Node> {
  const node = await startProcess({ dataDir, env: ENV, launcher: ownPidNamespace({ pid1 }) });
  started.push(node);
  return node;
}

const nodeDirs = async () => new Set(await readdir(join(dataDir, 'cache', 'nodes')).catch(() => []));

async function push(node: Node, work: string, message: string): Promise<GitOutput> {
  await gitOk(['commit', '-q', '--allow-empty', '-m', message], { cwd: work, home });
  return git(['push', `${node.authUrl}/ns/app.git`, 'main'], { cwd: work, home });
}

describe('nodes in PID namespaces of their own, sharing one cache', () => {
  it('keep each other’s live directories, and remove those of nodes that are gone', async () => {
    const lambda = await start(false);
    // Far from 1: nothing in a namespace of a few processes has this pid.
    expect(namespacePid(lambda.pid())).toBeGreaterThan(50);
    const work = await workRepo(home, 1, 'ns');
    expect((await push(lambda, work, 'first')).stderr).toMatch(/main -> main/);
    const lambdaDirs = await nodeDirs();
    expect(lambdaDirs.size).toBeGreaterThan(0);

    const pool = await start(true);
    expect(namespacePid(pool.pid())).toBe(1);
    const poolDirs = [...(await nodeDirs())].filter((name) => !lambdaDirs.has(name));
    expect(poolDirs.length).toBeGreaterThan(0);

    // The pool node's start did not take the Lambda node's directory...
    const after = await nodeDirs();
    for (const name of lambdaDirs) expect(after, 'the directory of the lambda node').toContain(name);
    // ...where a push into a cold cache spools its body while the repository is prepared.
    await deleteInUse(join(dataDir, 'cache', 'repos'));
    const again = await push(lambda, work, 'through the lambda node after the pool node started');
    expect(again.stderr).not.toMatch(/ENOENT|error/i);
    expect(again.code).toBe(0);

    const third = await start(false);
    for (const [i, node] of [pool, third, lambda, pool, third, lambda].entries()) {
      const pushed = await push(node, work, `round ${i}`);
      expect(pushed.stderr).not.toMatch(/ENOENT|error/i);
      expect(pushed.code).toBe(0);
    }
    const head = (await gitOk(['rev-parse', 'HEAD'], { cwd: work, home })).trim();
    for (const node of [lambda, pool, third]) {
      const listed = await gitOk(['ls-remote', `${node.authUrl}/ns/app.git`, 'main'], { home });
      expect(listed.split('\t')[0]).toBe(head);
    }

    // The pool node dies as a machine does: no clean-up. Another sandbox starts meanwhile.
    pool.child.kill('SIGKILL');
    await new Promise((done) => pool.child.once('close', done));
    const latecomer = await start(false);
    let left = poolDirs;
    for (let tries = 0; tries < 60 && left.length > 0; tries++) {
      await sleep(500);
      const now = await nodeDirs();
      left = poolDirs.filter((name) => now.has(name));
    }
    expect(left).toEqual([]);

    for (const node of [lambda, third, latecomer]) {
      const pushed = await push(node, work, 'after the pool node went');
      expect(pushed.code).toBe(0);
    }
  });
});
