/**
 * The packfile-URI plan against real git: a generation borrowing a store of packs the log names,
 * as the cache lays them out. The usual state is planned without listing its objects (a count and
 * one pack-objects); a state with a pack holding what no ref reaches is planned object by object
 * and never names that pack; packs holding the same objects are counted once; and the inline pack
 * holds exactly the reachable objects the named packs lack.
 */
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CacheTarget, Generation } from '../../../lib/cache/RepoCache.js';
import { GitBudget } from '../../../lib/git/GitBudget.js';
import { GitFailed, GitRunner, type GitSpawnOptions } from '../../../lib/git/GitRunner.js';
import { inlinePackPath, planFor, type UriPlan, type UriRequest } from '../../../lib/transfer/uriPlan.js';
import type { LogItem } from '../../../lib/wal/types.js';
import { gitSync } from '../../helpers/gitClient.js';

let root: string;
let work: string;
const git = (cwd: string, args: string[], input?: string): string => gitSync(cwd, args, input).toString();

/** A GitRunner that records the git commands and scripts it starts. */
class RecordingRunner extends GitRunner {
  spawned: string[] = [];
  override spawn(args: readonly string[], options: GitSpawnOptions) {
    this.spawned.push(args.join(' '));
    return super.spawn(args, options);
  }
  override spawnScript(script: string, args: readonly string[], options: GitSpawnOptions) {
    this.spawned.push('a script');
    return super.spawnScript(script, args, options);
  }
}

/** Two unrelated histories in one work repository: `a` (three commits) and `b` (two). */
const tips: Record<'a1' | 'a3' | 'b2', string> = { a1: '', a3: '', b2: '' };

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'narwal-uriplan-'));
  work = join(root, 'work');
  git(root, ['init', '-q', '-b', 'a', work]);
  for (let i = 1; i <= 3; i++) {
    await writeFile(join(work, `a${i}.txt`), `a ${i}\n`.repeat(50 * i));
    git(work, ['add', '.']);
    git(work, ['commit', '-q', '-m', `a${i}`]);
    if (i === 1) tips.a1 = git(work, ['rev-parse', 'HEAD']).trim();
  }
  tips.a3 = git(work, ['rev-parse', 'HEAD']).trim();
  git(work, ['checkout', '-q', '--orphan', 'b']);
  git(work, ['rm', '-q', '-rf', '.']);
  for (let i = 1; i <= 2; i++) {
    await writeFile(join(work, `b${i}.txt`), `b ${i}\n`.repeat(40 * i));
    git(work, ['add', '.']);
    git(work, ['commit', '-q', '-m', `b${i}`]);
  }
  tips.b2 = git(work, ['rev-parse', 'HEAD']).trim();
});

afterAll(async () => {
  if (root) await rm(root, { recursive: true, force: true });
});

/**
 * A store whose packs hold what each of `packs` names (rev-list arguments, one pack each), and a
 * generation borrowing it whose refs are `refs`; the log names every pack.
 */
async function state(
  label: string,
  packs: readonly string[][],
  refs: Record<string, string>,
): Promise<{ generation: Generation; target: CacheTarget; names: string[] }> {
  const dir = join(root, label);
  const store = join(dir, 'store.git');
  git(root, ['init', '-q', '--bare', store]);
  const names = packs.map(
    (revs) =>
      `pack-${git(work, ['pack-objects', '-q', '--revs', join(store, 'objects', 'pack', 'pack')], `${revs.join('\n')}\n`).trim()}`,
  );
  const gen = join(dir, 'gen.git');
  git(root, ['init', '-q', '--bare', gen]);
  await mkdir(join(gen, 'objects', 'info'), { recursive: true });
  await writeFile(join(gen, 'objects', 'info', 'alternates'), `${join(store, 'objects')}\n`);
  await writeFile(
    join(gen, 'packed-refs'),
    Object.entries(refs)
      .map(([ref, oid]) => `${oid} ${ref}\n`)
      .join(''),
  );
  const item = { seq: 1, packs: names } as unknown as LogItem;
  const target = {
    seq: 1,
    checkpoint: null,
    itemsAfter: async () => [item],
  } as unknown as CacheTarget;
  const generation: Generation = {
    dir: gen,
    name: label,
    objects: join(store, 'objects'),
    release: async () => {},
  } as Generation;
  return { generation, target, names };
}

/** The objects of a pack file, by index-pack and show-index in a scratch repository. */
async function objectsOfPack(path: string): Promise<string[]> {
  const scratch = await mkdtemp(join(root, 'scratch-'));
  git(root, ['init', '-q', '--bare', scratch]);
  const copy = join(scratch, 'objects', 'pack', 'inline.pack');
  await writeFile(copy, await readFile(path));
  git(scratch, ['index-pack', copy]);
  const idx = await readFile(copy.replace(/\.pack$/, '.idx'));
  return gitSync(root, ['show-index'], idx)
    .toString()
    .split('\n')
    .filter(Boolean)
    .map((line) => line.split(' ')[1] as string)
    .sort();
}

function reachable(revs: readonly string[]): string[] {
  return git(work, ['rev-list', '--objects', ...revs])
    .split('\n')
    .filter(Boolean)
    .map((line) => line.slice(0, 40))
    .sort();
}

function request(key: string, wants: readonly string[]): UriRequest {
  return { key, wants, ofsDelta: true };
}

const runner = () => new RecordingRunner({ budget: new GitBudget(4, 0), home: root });

/** The plan of a state (see state()) for clones of all its refs, and what git it started. */
async function planned(
  label: string,
  packs: readonly string[][],
  refs: Record<string, string>,
): Promise<{ plan: UriPlan; spawned: string[]; names: string[] }> {
  const { generation, target, names } = await state(label, packs, refs);
  const recording = runner();
  const wants = [...new Set(Object.values(refs))];
  const plan = await planFor({ git: recording }, generation, target, request(label, wants), 'test');
  return { plan, spawned: recording.spawned, names };
}
const listed = (spawned: readonly string[]) =>
  spawned.filter((c) => c.startsWith('rev-list') && !c.includes('--count'));

describe('planFor', () => {
  it('names every stored pack the wants wholly reach, without listing the objects, and packs the rest inline', async () => {
    // The first two commits of a, then the third; the objects of b are in no stored pack.
    const { generation, target, names } = await state('usual', [[tips.a1], [tips.a3, `^${tips.a1}`]], {
      'refs/heads/a': tips.a3,
      'refs/heads/b': tips.b2,
    });
    // b's objects are in a pack the log does not name (a push that was never published left it).
    const unnamed = reachable([tips.b2]);
    git(work, ['pack-objects', '-q', join(generation.objects, 'pack', 'pack')], `${unnamed.join('\n')}\n`);
    const git2 = runner();
    const plan = await planFor(
      { git: git2 },
      generation,
      target,
      request('usual', [tips.a3, tips.b2]),
      'test',
    );
    expect(new Set(plan.packs.map((p) => p.name))).toEqual(new Set(names));
    expect(plan.inline).toBe(unnamed.length);
    expect(await objectsOfPack(inlinePackPath(generation.dir, 'usual'))).toEqual(unnamed);
    expect(git2.spawned).toEqual(['a script']);
    // Kept: the next request reads the plan and starts no git.
    const again = runner();
    expect(
      await planFor({ git: again }, generation, target, request('usual', [tips.a3, tips.b2]), 'test'),
    ).toEqual(plan);
    expect(again.spawned).toEqual([]);
  });

  it('never names a pack holding what the wants do not reach, and packs its reachable objects inline', async () => {
    // A force-push left the first pack (all of a, and b's first commit) holding objects no ref reaches.
    const b1 = git(work, ['rev-parse', `${tips.b2}^`]).trim();
    const { generation, target, names } = await state(
      'forced',
      [
        [tips.a3, b1],
        [tips.b2, `^${b1}`],
      ],
      {
        'refs/heads/b': tips.b2,
      },
    );
    const git2 = runner();
    const plan = await planFor({ git: git2 }, generation, target, request('forced', [tips.b2]), 'test');
    expect(plan.packs.map((p) => p.name)).toEqual([names[1]]);
    const inline = await objectsOfPack(inlinePackPath(generation.dir, 'forced'));
    expect(inline).toEqual(reachable([b1]));
    expect(plan.inline).toBe(inline.length);
    expect(git2.spawned[0]).toBe('a script');
    expect(listed(git2.spawned)).toHaveLength(1);
    expect(inline).not.toContain(tips.a3);
  });

  it('counts objects two named packs share once', async () => {
    // a's first commit is in both packs; neither holds all of the other's objects.
    const both = { 'refs/heads/a': tips.a3, 'refs/heads/b': tips.b2 };
    const { plan, spawned, names } = await planned('overlap', [[tips.a3], [tips.b2, tips.a1]], both);
    expect(new Set(plan.packs.map((p) => p.name))).toEqual(new Set(names));
    expect(plan.inline).toBe(0);
    expect(spawned).toEqual(['a script']);
  });

  it('leaves out a pack whose objects a larger named one holds', async () => {
    // a pushed again after a force-push had moved it away: its second pack repeats the first.
    const both = { 'refs/heads/a': tips.a3, 'refs/heads/b': tips.b2 };
    const inside = await planned('inside', [[tips.a3], [tips.a3, tips.b2]], both);
    expect(inside.plan).toEqual({
      v: 2,
      packs: [{ name: inside.names[1], hash: expect.any(String) }],
      inline: 0,
    });
    expect(inside.spawned).toEqual(['a script']);
    // The same when the objects are looked at one by one: the largest pack holds what no ref
    // reaches, the next is all of b, the smallest b's first commit.
    const b1 = git(work, ['rev-parse', `${tips.b2}^`]).trim();
    const forced = await planned('inside-forced', [[tips.a3, tips.b2], [tips.b2], [b1]], {
      'refs/heads/b': tips.b2,
    });
    expect(forced.plan).toEqual({
      v: 2,
      packs: [{ name: forced.names[1], hash: expect.any(String) }],
      inline: 0,
    });
    expect(listed(forced.spawned)).toHaveLength(1);
  });

  it('fails as git failed when a want is not in the store, and leaves no file behind', async () => {
    const { generation, target } = await state('missing', [[tips.a3]], { 'refs/heads/a': tips.a3 });
    const before = await readdir(join(generation.dir, 'narwal-packs')).catch(() => []);
    await expect(
      planFor({ git: runner() }, generation, target, request('missing', ['1'.repeat(40)]), 'test'),
    ).rejects.toBeInstanceOf(GitFailed);
    expect(await readdir(join(generation.dir, 'narwal-packs'))).toEqual(before);
  });

  it('names no pack when every stored pack holds something the wants do not reach', async () => {
    const { generation, target } = await state('none', [[tips.a3, tips.b2]], { 'refs/heads/b': tips.b2 });
    const plan = await planFor({ git: runner() }, generation, target, request('none', [tips.b2]), 'test');
    expect(plan).toEqual({ v: 2, packs: [], inline: reachable([tips.b2]).length });
  });
});
