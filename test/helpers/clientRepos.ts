/**
 * Repositories and checks shared by the client-matrix tests (test/integration/clients/): the
 * express fixture as a real history, and comparisons by content - refs, objects, fsck - so a
 * client that exits 0 with the wrong result still fails.
 */
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { git, gitOk } from './gitClient.js';

const PROJECT_ROOT = resolve(import.meta.dirname, '../..');

/**
 * The express fixture bundle (323 refs, 6,413 commits), committed in `fixtures/`:
 * NARWAL_FIXTURE_BUNDLE overrides it.
 */
export function expressBundle(): string {
  return process.env.NARWAL_FIXTURE_BUNDLE ?? join(PROJECT_ROOT, 'fixtures', 'express.bundle');
}

export async function tempDir(label: string): Promise<string> {
  return mkdtemp(join(tmpdir(), `narwal-${label}-`));
}

/** A bare clone of the express fixture in a fresh directory: the reference every result is compared with. */
export async function expressRepo(home: string): Promise<string> {
  const dir = join(await tempDir('express'), 'express.git');
  await gitOk(['clone', '--quiet', '--bare', expressBundle(), dir], { home });
  // The bundle names no HEAD; express's default branch is master, as narwal picks for it.
  await gitOk(['symbolic-ref', 'HEAD', 'refs/heads/master'], { cwd: dir, home });
  return dir;
}

/** Parses `<oid>\t<ref>` lines (ls-remote, show-ref after reordering) into a sorted map. */
export function parseRefLines(out: string): Map<string, string> {
  const rows = out
    .split('\n')
    .filter((line) => line !== '')
    .map((line): [string, string] => {
      const [oid = '', ref = ''] = line.split('\t');
      return [ref, oid];
    })
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return new Map(rows);
}

/** The refs of a local repository (no HEAD), as ls-remote would list them with peeled tags. */
export async function localRefs(dir: string, home: string): Promise<Map<string, string>> {
  const out = await gitOk(['ls-remote', dir], { home });
  const refs = parseRefLines(out);
  refs.delete('HEAD');
  return refs;
}

/** The refs a server advertises (no HEAD), through `git ls-remote` with the given options. */
export async function remoteRefs(
  url: string,
  home: string,
  extra: readonly string[] = [],
): Promise<Map<string, string>> {
  const refs = parseRefLines(await gitOk([...extra, 'ls-remote', url], { home }));
  refs.delete('HEAD');
  return refs;
}

/**
 * Throws with fsck's report unless the repository is complete and consistent; `connectivity`
 * checks only that every reachable object is there (for a repository borrowing checked objects).
 */
export async function fsckClean(dir: string, home: string, connectivity = false): Promise<void> {
  const mode = connectivity ? ['--connectivity-only'] : ['--full', '--strict'];
  await gitOk(['fsck', ...mode, '--no-dangling'], { cwd: dir, home });
}

export async function revParse(dir: string, home: string, rev: string): Promise<string> {
  return (await gitOk(['rev-parse', '--verify', '--quiet', rev], { cwd: dir, home })).trim();
}

/** True when the object is in the repository (outside a partial clone, where this would fetch it). */
export async function hasObject(dir: string, home: string, oid: string): Promise<boolean> {
  const out = await git(['cat-file', '-e', oid], { cwd: dir, home });
  return out.code === 0;
}

/** Objects reachable from `rev` that a partial clone lacks; `--missing=print` never fetches them. */
export async function missingObjects(dir: string, home: string, rev: string): Promise<string[]> {
  const out = await gitOk(['rev-list', '--objects', '--missing=print', rev], { cwd: dir, home });
  return out
    .split('\n')
    .filter((line) => line.startsWith('?'))
    .map((line) => line.slice(1));
}
