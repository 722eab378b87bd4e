/**
 * The commit list's walk and the commit page's diff, on a real repository (browseRepo.ts, with
 * merged topics) read through a real `git cat-file --batch-command`: pages chained by their
 * `next` are exactly `git rev-list`, a page deep in the history costs what the first one costs,
 * and a diff stays within its limits per file, in total and in what is read of git's output.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildBrowseRepo, LARGE_DIFF_FILES, LARGE_FILE_LINES } from '../../../bench/browseRepo.js';
import { CatFile, CatFileClosed } from '../../../lib/browse/CatFile.js';
import { commitDiff, LIMITS } from '../../../lib/browse/commitDiff.js';
import { walkCommits } from '../../../lib/browse/commitWalk.js';
import { type Commit, parseCommit } from '../../../lib/browse/gitObjects.js';
import { GitBudget } from '../../../lib/git/GitBudget.js';
import { GitRunner } from '../../../lib/git/GitRunner.js';

const COMMITS = 2_100;
let root: string;
let dir: string;
let catFile: CatFile;
let largeDiff: string;
let reads = 0;

async function git(args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn('git', ['--git-dir', dir, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    const out: Buffer[] = [];
    child.stdout.on('data', (d: Buffer) => out.push(d));
    child.once('close', (code) =>
      code === 0 ? resolve(Buffer.concat(out).toString()) : reject(new Error(`git ${code}`)),
    );
  });
}

/** Reads a commit through the real cat-file, counting reads. */
async function read(oid: string): Promise<Commit> {
  reads++;
  const object = await catFile.contents(oid);
  if (object === null) throw new Error(`missing ${oid}`);
  return parseCommit(object.oid, object.data);
}

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'narwal-walk-'));
  dir = join(root, 'big.git');
  largeDiff = (await buildBrowseRepo(dir, COMMITS)).largeDiff;
  catFile = new CatFile(
    spawn('git', ['--git-dir', dir, 'cat-file', '--batch-command'], { stdio: ['pipe', 'pipe', 'pipe'] }),
  );
}, 120_000);

afterAll(async () => {
  catFile?.close();
  if (root) await rm(root, { recursive: true, force: true });
});

describe('the commit list walk', () => {
  it('gives, page after page, exactly what git rev-list gives, merges included', async () => {
    const expected = (await git(['rev-list', 'main'])).trim().split('\n');
    expect((await git(['rev-list', '--merges', 'main'])).trim().split('\n').length).toBe(2);
    const seen: string[] = [];
    let starts: readonly string[] | null = [expected[0] as string];
    while (starts !== null) {
      const page = await walkCommits(read, starts, 50);
      expect(page.commits.length).toBeLessThanOrEqual(50);
      seen.push(...page.commits.map((c) => c.oid));
      starts = page.next;
    }
    expect(seen).toEqual(expected);
  });

  it('reads about as many commits for a page 2,000 deep as for the first', async () => {
    const expected = (await git(['rev-list', 'main'])).trim().split('\n');
    let starts: readonly string[] | null = [expected[0] as string];
    const costs: number[] = [];
    let depth = 0;
    while (starts !== null) {
      reads = 0;
      const page = await walkCommits(read, starts, 50);
      costs.push(reads);
      depth += page.commits.length;
      starts = page.next;
    }
    expect(depth).toBe(expected.length);
    // A page reads its 50 commits and the parents it queues: never more than a page and its edge.
    expect(Math.max(...costs)).toBeLessThanOrEqual(50 + 4);
    expect(costs.at(-2)).toBeLessThanOrEqual((costs[0] as number) + 3);
  });
});

describe('cat-file --batch-command', () => {
  it('answers null for what is not there and refuses commands once closed', async () => {
    expect(await catFile.info('0'.repeat(40))).toBeNull();
    expect(await catFile.contents('no-such-ref')).toBeNull();
    expect(await catFile.info('main\nmain')).toBeNull();
    const tree = await catFile.info('main^{tree}');
    expect(tree?.type).toBe('tree');
    const other = new CatFile(
      spawn('git', ['--git-dir', dir, 'cat-file', '--batch-command'], { stdio: ['pipe', 'pipe', 'pipe'] }),
    );
    other.close();
    await expect(other.info('main')).rejects.toBeInstanceOf(CatFileClosed);
  });
});

describe('a commit diff', () => {
  const home = tmpdir();
  const runner = () => new GitRunner({ budget: new GitBudget(4, 0), home });
  const commit = async (oid: string) => read(oid);

  it('shows every file of a large commit within the default limits, but a file over them as too large', async () => {
    const diff = await commitDiff(runner(), dir, await commit(largeDiff));
    expect(diff.truncated).toBe(false);
    expect(diff.files.length).toBe(LARGE_DIFF_FILES + 1);
    const table = diff.files.find((f) => f.newPath === 'data/table.json');
    expect(table?.added).toBe(LARGE_FILE_LINES + 2);
    expect(table?.omitted).toBe('file-too-large');
    expect(table?.lines).toEqual([]);
    // 300 files of about 100 patch lines each: the first ones shown, the rest past the total limit.
    const shown = diff.files.filter((f) => f.omitted === null);
    expect(shown.length).toBeGreaterThan(50);
    expect(shown.every((f) => f.lines.some((l) => l.startsWith('+')))).toBe(true);
    expect(shown.reduce((sum, f) => sum + f.lines.length, 0)).toBeLessThanOrEqual(LIMITS.maxTotalLines);
    const rest = diff.files.filter((f) => f.omitted === 'total-too-large');
    expect(shown.length + rest.length).toBe(LARGE_DIFF_FILES);
    expect(rest.every((f) => f.lines.length === 0 && f.added !== null)).toBe(true);
  });

  it('lists files past the total limit without their patches, and stops reading git at the byte limit', async () => {
    const limits = { ...LIMITS, maxTotalLines: 200 };
    const total = await commitDiff(runner(), dir, await commit(largeDiff), { limits });
    expect(total.files.length).toBe(LARGE_DIFF_FILES + 1);
    const shownLines = total.files.reduce((sum, f) => sum + f.lines.length, 0);
    expect(shownLines).toBeLessThanOrEqual(200);
    expect(total.files.filter((f) => f.omitted === 'total-too-large').length).toBeGreaterThan(
      LARGE_DIFF_FILES - 20,
    );
    const cut = await commitDiff(runner(), dir, await commit(largeDiff), {
      limits: { ...LIMITS, maxReadBytes: 512 * 1024 },
    });
    expect(cut.truncated).toBe(true);
    const patched = cut.files.filter((f) => f.lines.length > 0);
    expect(patched.length).toBeGreaterThan(0);
    expect(patched.length).toBeLessThan(50);
    expect(cut.files.filter((f) => f.lines.length === 0).every((f) => f.omitted !== null)).toBe(true);
  });

  it('diffs a root commit against nothing', async () => {
    const first = (await git(['rev-list', '--max-parents=0', 'main'])).trim();
    const diff = await commitDiff(runner(), dir, await commit(first));
    expect(diff.files.length).toBe(1001);
    expect(diff.files.every((f) => f.status === 'A')).toBe(true);
  });
});
