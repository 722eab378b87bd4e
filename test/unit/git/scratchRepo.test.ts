/**
 * Scratch repositories: what git sees in one (the generation's objects and refs, nothing else),
 * the skeletons kept ahead of pushes (and the processes started in them), and what happens when
 * their directory goes away or the node's scratch root changes.
 */
import { execFileSync } from 'node:child_process';
import { mkdir, mkdtemp, readdir, readFile, realpath, rm, stat, unlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { StartedAhead } from '../../../lib/git/GitRunner.js';
import { removeScratch, ScratchRepos } from '../../../lib/git/scratchRepo.js';

/** Stands in for GitRunner.startAhead: records where each was started and what became of it. */
function starter() {
  const started: { dir: string; state: 'waiting' | 'taken' | 'discarded'; ahead: StartedAhead }[] = [];
  return {
    started,
    startIn: (dir: string): StartedAhead => {
      const entry = { dir, state: 'waiting' as 'waiting' | 'taken' | 'discarded', ahead: {} as StartedAhead };
      entry.ahead = {
        take: async () => {
          entry.state = 'taken';
          return null;
        },
        discard: () => {
          if (entry.state === 'waiting') entry.state = 'discarded';
        },
      };
      started.push(entry);
      return entry.ahead;
    },
  };
}

let root: string;
let generation: { dir: string; objects: string };
let commit: string;
const env = { ...process.env, GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: '/dev/null' };
const git = (cwd: string, args: string[]) => execFileSync('git', args, { cwd, env }).toString('utf8').trim();

/** Skeletons under `dir` that no push has taken: no packed-refs in them yet. */
async function spares(dir: string): Promise<string[]> {
  const names = (await readdir(dir)).filter((n) => n.endsWith('.git'));
  const free = await Promise.all(
    names.map(async (n) => ((await stat(join(dir, n, 'packed-refs')).catch(() => null)) === null ? n : null)),
  );
  return free.filter((n): n is string => n !== null);
}

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'narwal-scratch-'));
  // A "generation": a bare repository whose objects live elsewhere, as the cache lays them out.
  const source = join(root, 'source');
  git(root, ['init', '-q', '-b', 'main', source]);
  execFileSync(
    'git',
    ['-c', 'user.name=a', '-c', 'user.email=a@b', 'commit', '-q', '--allow-empty', '-m', 'x'],
    {
      cwd: source,
      env,
    },
  );
  commit = git(source, ['rev-parse', 'HEAD']);
  git(source, ['pack-refs', '--all']);
  generation = { dir: join(source, '.git'), objects: join(source, '.git', 'objects') };
});

afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

describe('ScratchRepos', () => {
  it("makes a repository git accepts, borrowing the generation's objects and starting from its refs", async () => {
    const scratchRoot = join(root, 'a');
    await mkdir(scratchRoot);
    const repos = new ScratchRepos(async () => scratchRoot);
    const scratch = await repos.create(generation);
    expect(git(scratch.dir, ['rev-parse', '--is-bare-repository'])).toBe('true');
    expect(git(scratch.dir, ['rev-parse', 'refs/heads/main'])).toBe(commit);
    expect(git(scratch.dir, ['cat-file', '-t', commit])).toBe('commit');
    expect(await readFile(join(scratch.dir, 'objects', 'info', 'alternates'), 'utf8')).toBe(
      `${generation.objects}\n`,
    );
    expect(await scratch.packs()).toEqual([]);
    await scratch.remove();
    // Removing it leaves the generation's refs and the shared alternates file where they were.
    expect(git(generation.dir, ['rev-parse', 'refs/heads/main'])).toBe(commit);
    expect((await readdir(scratchRoot)).filter((n) => n.startsWith('alternates-'))).toHaveLength(1);
  });

  it("keeps a push's connectivity check from listing the repository's own refs again by the alternate-refs command", async () => {
    const scratchRoot = join(root, 'alt');
    await mkdir(scratchRoot);
    // Records the repository git runs core.alternateRefsCommand for (its argument), then lists none.
    const marker = join(root, 'alternate-refs-runs');
    const recorder = join(root, 'record-alternate-refs');
    await writeFile(recorder, `#!/bin/sh\necho "$1" >>'${marker}'\n`, { mode: 0o755 });
    const client = join(root, 'alt-client');
    git(root, ['clone', '-q', generation.dir, client]);
    git(client, ['-c', 'user.name=a', '-c', 'user.email=a@b', 'commit', '-q', '--allow-empty', '-m', 'y']);
    const pushInto = (dir: string) =>
      git(client, [
        'push',
        '-q',
        `--receive-pack=git -c core.alternateRefsCommand=${recorder} receive-pack`,
        dir,
        'HEAD:refs/heads/topic',
      ]);
    const runs = async () => (await readFile(marker, 'utf8').catch(() => '')).split('\n').filter(Boolean);
    const repos = new ScratchRepos(async () => scratchRoot, { spares: 0 });
    const scratch = await repos.create(generation);
    pushInto(scratch.dir);
    expect(git(scratch.dir, ['rev-parse', 'refs/heads/topic'])).toBe(git(client, ['rev-parse', 'HEAD']));
    expect(await runs()).not.toContain(await realpath(scratch.dir));
    // A repository whose objects are a directory of that name: git runs it for the repository itself.
    const plain = join(scratchRoot, 'plain.git');
    git(root, ['init', '-q', '--bare', plain]);
    await writeFile(join(plain, 'objects', 'info', 'alternates'), `${generation.objects}\n`);
    pushInto(plain);
    expect(await runs()).toContain(await realpath(plain));
  });

  it('makes skeletons ready when a push is announced, a push takes one, and the next announcement makes it again', async () => {
    const scratchRoot = join(root, 'b');
    await mkdir(scratchRoot);
    const repos = new ScratchRepos(async () => scratchRoot, { spares: 2 });
    repos.prepare();
    await repos.settled();
    const ready = await spares(scratchRoot);
    expect(ready).toHaveLength(2);
    const scratch = await repos.create(generation);
    expect(ready).toContain(scratch.dir.slice(scratchRoot.length + 1));
    expect(git(scratch.dir, ['rev-parse', 'refs/heads/main'])).toBe(commit);
    expect(await spares(scratchRoot)).toHaveLength(1);
    // Over, a push that took a spare makes none: that work would fall on its client's next push.
    await scratch.remove();
    await repos.settled();
    expect(await spares(scratchRoot)).toHaveLength(1);
    // The next push's announcement makes the missing one; announcements never make more.
    repos.prepare();
    repos.prepare();
    await repos.settled();
    expect(await spares(scratchRoot)).toHaveLength(2);
    repos.prepare();
    await repos.settled();
    expect(await spares(scratchRoot)).toHaveLength(2);
  });

  it('makes the spares once a push that found none is over, not while it runs', async () => {
    const scratchRoot = join(root, 'b2');
    await mkdir(scratchRoot);
    const repos = new ScratchRepos(async () => scratchRoot, { spares: 2 });
    const scratch = await repos.create(generation);
    await repos.settled();
    expect(await spares(scratchRoot)).toHaveLength(0);
    await scratch.remove();
    await repos.settled();
    expect(await spares(scratchRoot)).toHaveLength(2);
  });

  it('tells when no skeleton is being made, and makes none once stopped (a node about to remove its directory)', async () => {
    const scratchRoot = join(root, 'stop');
    await mkdir(scratchRoot);
    const repos = new ScratchRepos(async () => scratchRoot, { spares: 2 });
    repos.prepare();
    // The two spares of the announcement are on disk once it says so, without polling.
    await repos.settled();
    expect(await spares(scratchRoot)).toHaveLength(2);
    const taken = await repos.create(generation);
    const spareless = await new ScratchRepos(async () => scratchRoot, { spares: 0 }).create(generation);
    expect(await spares(scratchRoot)).toHaveLength(1);
    await repos.settled({ stop: true });
    // After the stop, neither an announcement nor a push that is over makes a spare.
    repos.prepare();
    await Promise.all([taken.remove(), spareless.remove()]);
    await repos.settled();
    await sleep(50);
    expect(await spares(scratchRoot)).toHaveLength(1);
  });

  it('makes a new one when its skeletons or its alternates file went away', async () => {
    const scratchRoot = join(root, 'c');
    await mkdir(scratchRoot);
    const repos = new ScratchRepos(async () => scratchRoot, { spares: 1 });
    // A first push (which found no spare, and leaves one) made the shared alternates file.
    await (await repos.create(generation)).remove();
    await repos.settled();
    const [spare] = await spares(scratchRoot);
    expect(spare).toBeDefined();
    await rm(join(scratchRoot, spare ?? ''), { recursive: true });
    const [alternates] = (await readdir(scratchRoot)).filter((n) => n.startsWith('alternates-'));
    await unlink(join(scratchRoot, alternates ?? ''));
    const scratch = await repos.create(generation);
    expect(scratch.dir.endsWith(spare ?? '')).toBe(false);
    expect(git(scratch.dir, ['cat-file', '-t', commit])).toBe('commit');
  });

  it("uses only skeletons made under the node's current scratch root", async () => {
    const first = join(root, 'd1');
    const second = join(root, 'd2');
    await Promise.all([mkdir(first), mkdir(second)]);
    let current = first;
    const repos = new ScratchRepos(async () => current, { spares: 2 });
    repos.prepare();
    await repos.settled();
    expect(await spares(first)).toHaveLength(2);
    current = second;
    const scratch = await repos.create(generation);
    expect(scratch.dir.startsWith(`${second}/`)).toBe(true);
    expect(git(scratch.dir, ['rev-parse', 'refs/heads/main'])).toBe(commit);
  });

  it('removes a repository that received a pack, and one holding what its layout does not know', async () => {
    const scratchRoot = join(root, 'r');
    await mkdir(scratchRoot);
    const repos = new ScratchRepos(async () => scratchRoot, { spares: 0 });
    const received = await repos.create(generation);
    // A pack as receive-pack leaves it (index-pack writes .pack, .idx and .rev).
    const pack = execFileSync('git', ['pack-objects', '--stdout', '--revs'], {
      cwd: generation.dir,
      env,
      input: `${commit}\n`,
    });
    execFileSync('git', ['index-pack', '--stdin', '--rev-index'], { cwd: received.dir, env, input: pack });
    expect(await received.packs()).toHaveLength(1);
    const odd = await repos.create(generation);
    await mkdir(join(odd.dir, 'objects', 'incoming-x', 'pack'), { recursive: true });
    await mkdir(join(odd.dir, 'refs', 'heads'));
    expect(await removeScratch(received.dir)).toBe('layout');
    expect(await removeScratch(odd.dir)).toBe('recursive');
    expect((await readdir(scratchRoot)).filter((n) => n.endsWith('.git'))).toEqual([]);
    // The generation's refs and the shared alternates file stay.
    expect(git(generation.dir, ['rev-parse', 'refs/heads/main'])).toBe(commit);
    expect((await readdir(scratchRoot)).filter((n) => n.startsWith('alternates-'))).toHaveLength(1);
  });

  it('tells when its directory was removed under it (the cache deleted during a push)', async () => {
    const scratchRoot = join(root, 'g');
    await mkdir(scratchRoot);
    const repos = new ScratchRepos(async () => scratchRoot, { spares: 0 });
    const scratch = await repos.create(generation);
    expect(await scratch.gone()).toBe(false);
    await rm(scratchRoot, { recursive: true, force: true });
    expect(await scratch.gone()).toBe(true);
    await scratch.remove();
  });

  it('refuses a generation whose refs are gone, and leaves nothing of the attempt', async () => {
    const scratchRoot = join(root, 'e');
    await mkdir(scratchRoot);
    const repos = new ScratchRepos(async () => scratchRoot, { spares: 0 });
    await expect(
      repos.create({ dir: join(root, 'missing'), objects: generation.objects }),
    ).rejects.toMatchObject({
      code: 'ENOENT',
    });
    expect((await readdir(scratchRoot)).filter((n) => n.endsWith('.git'))).toEqual([]);
  });

  it('starts a process in each skeleton made ahead, hands it out with it, and stops those never taken', async () => {
    const scratchRoot = join(root, 'f');
    await mkdir(scratchRoot);
    const { started, startIn } = starter();
    const repos = new ScratchRepos(async () => scratchRoot, { spares: 2, startIn });
    // None yet: this one is made on demand, without a process; once it is over, two are made
    // ahead, with one each.
    const first = await repos.create(generation);
    expect(first.started).toBeUndefined();
    await first.remove();
    await repos.settled();
    expect(started).toHaveLength(2);
    expect(started.map((s) => s.dir).sort()).toEqual(
      (await spares(scratchRoot)).map((n) => join(scratchRoot, n)).sort(),
    );
    const second = await repos.create(generation);
    const mine = started.find((s) => s.dir === second.dir);
    expect(second.started).toBe(mine?.ahead);
    await second.started?.take();
    await second.remove();
    expect(mine?.state).toBe('taken');
    // Removed untaken (a push that failed before receive-pack), its process is stopped.
    const third = await repos.create(generation);
    await third.remove();
    expect(started.find((s) => s.dir === third.dir)?.state).toBe('discarded');
    // Closing stops the processes of the skeletons still spare.
    repos.prepare();
    await repos.settled();
    expect(await spares(scratchRoot)).toHaveLength(2);
    await repos.settled({ stop: true });
    const spareDirs = (await spares(scratchRoot)).map((n) => join(scratchRoot, n));
    expect(started.filter((s) => spareDirs.includes(s.dir)).map((s) => s.state)).toEqual([
      'discarded',
      'discarded',
    ]);
  });

  it("stops the processes of skeletons made under a scratch root that is no longer the node's", async () => {
    const first = join(root, 'g1');
    const second = join(root, 'g2');
    await Promise.all([mkdir(first), mkdir(second)]);
    let current = first;
    const { started, startIn } = starter();
    const repos = new ScratchRepos(async () => current, { spares: 2, startIn });
    repos.prepare();
    await repos.settled();
    expect(started).toHaveLength(2);
    current = second;
    const scratch = await repos.create(generation);
    expect(scratch.dir.startsWith(`${second}/`)).toBe(true);
    expect(started.filter((s) => s.dir.startsWith(`${first}/`)).map((s) => s.state)).toEqual([
      'discarded',
      'discarded',
    ]);
  });
});
