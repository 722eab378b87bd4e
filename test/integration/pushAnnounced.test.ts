/**
 * A push is announced by its advertisement (`info/refs?service=git-receive-pack` with
 * credentials): the node makes the scratch repositories it keeps ready, each with its
 * receive-pack started, then, and not at the end of the push before (lib/git/scratchRepo.ts).
 * Against the real app, its node directory and the processes of the machine.
 */
import { readdir, readlink } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '../helpers/eventually.js';
import { git, gitOk, makeHome, workRepo } from '../helpers/gitClient.js';
import { ADMIN_TOKEN, type RunningNarwal, startInProcess } from '../helpers/narwalServer.js';

let narwal: RunningNarwal;
let home: string;
let work: string;

beforeAll(async () => {
  narwal = await startInProcess();
  home = await makeHome();
  work = await workRepo(home, 1);
  await gitOk(['push', '-q', `${narwal.authUrl}/team/ready.git`, 'main'], { cwd: work, home });
});

afterAll(async () => {
  await narwal.stop();
});

/** Scratch repositories no push has taken yet (no refs snapshot in them), of any node directory. */
async function spares(): Promise<string[]> {
  const nodes = join(narwal.dataDir, 'cache', 'nodes');
  const found: string[] = [];
  for (const node of await readdir(nodes).catch(() => [] as string[])) {
    const scratch = join(nodes, node, 'push');
    const names = await readdir(scratch).catch(() => [] as string[]);
    for (const name of names.filter((n) => n.endsWith('.git'))) {
      const inside = await readdir(join(scratch, name)).catch(() => [] as string[]);
      if (!inside.includes('packed-refs')) found.push(join(scratch, name));
    }
  }
  return found;
}

/** Processes of this machine whose working directory is `dir`. */
async function processesIn(dir: string): Promise<number> {
  let count = 0;
  for (const pid of (await readdir('/proc')).filter((n) => /^\d+$/.test(n))) {
    const cwd = await readlink(`/proc/${pid}/cwd`).catch(() => null);
    if (cwd === dir) count++;
  }
  return count;
}

async function advertisement(withCredentials: boolean): Promise<number> {
  const credentials = Buffer.from(`admin:${ADMIN_TOKEN}`).toString('base64');
  const response = await fetch(`${narwal.url}/team/ready.git/info/refs?service=git-receive-pack`, {
    headers: withCredentials ? { authorization: `Basic ${credentials}` } : {},
  });
  await response.arrayBuffer();
  return response.status;
}

/** Waits until there are `count` spares, each with its receive-pack started in it (its cwd). */
async function readyWithProcesses(count: number): Promise<void> {
  const ready = async () => {
    const dirs = await spares();
    if (dirs.length !== count) return false;
    for (const dir of dirs) if ((await processesIn(dir)) !== 1) return false;
    return true;
  };
  expect(await eventually(ready)).toBe(true);
}

describe('a push announced by its advertisement', () => {
  it('gets its receive-pack ready then; an anonymous probe or a push that took one makes none', async () => {
    // The set-up push's advertisement made two ready, each with its receive-pack started in it,
    // and the push took one.
    await readyWithProcesses(1);

    // Another push: its advertisement makes the missing one, the push takes one, and once over it
    // makes none (that work would fall on its client's next push).
    await gitOk(['commit', '-q', '--allow-empty', '-m', 'second'], { cwd: work, home });
    await gitOk(['push', '-q', `${narwal.authUrl}/team/ready.git`, 'main'], { cwd: work, home });
    await sleep(300);
    expect(await spares()).toHaveLength(1);

    // git's first, anonymous request is answered 401 and gets nothing ready.
    expect(await advertisement(false)).toBe(401);
    await sleep(300);
    expect(await spares()).toHaveLength(1);

    // With credentials, the announcement makes the missing one, its process started.
    expect(await advertisement(true)).toBe(200);
    await readyWithProcesses(2);

    // And the next push uses one: the repository still takes pushes and serves them.
    await gitOk(['commit', '-q', '--allow-empty', '-m', 'third'], { cwd: work, home });
    await gitOk(['push', '-q', `${narwal.authUrl}/team/ready.git`, 'main'], { cwd: work, home });
    const remote = await git(['ls-remote', `${narwal.authUrl}/team/ready.git`, 'refs/heads/main'], { home });
    const head = (await gitOk(['rev-parse', 'HEAD'], { cwd: work, home })).trim();
    expect(remote.stdout.split('\t')[0]).toBe(head);
  });
});
