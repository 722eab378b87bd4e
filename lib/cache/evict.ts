/**
 * Idle eviction: reclaims generations and whole repository caches nobody uses. A generation goes
 * when no live lease names it and it has not been used for the idle interval (a live lease always
 * wins over the idle stamp); a repository's cache goes when none of its generations is leased,
 * nobody holds its writer lock, and its newest generation is idle. Anything may be deleted at any
 * moment without loss: the next request rebuilds from the store.
 *
 * Eviction renames a directory away first and checks the leases again afterwards: a reader that
 * leased in between sees its generation gone (RepoCache.read checks under its lease) or, if it was
 * quicker, gets it back.
 */
import { randomBytes } from 'node:crypto';
import { readdir, rename, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from '../log.js';
import { generationSeq } from './layout.js';
import { type LeaseOptions, leasePrefix, repoPartition, tryWriterLock } from './leases.js';

export interface SweepResult {
  readonly generations: number;
  readonly repositories: number;
}

export const LAST_USED = 'narwal-last-used';

export async function sweepCache(
  root: string,
  leases: LeaseOptions,
  options: { idleMs: number; logger: Logger },
): Promise<SweepResult> {
  let generations = 0;
  let repositories = 0;
  for (const { repo, dir } of await repositoryDirs(join(root, 'repos'))) {
    for (const incarnation of await children(dir)) {
      const result = await sweepIncarnation(repo, join(dir, incarnation), leases, options);
      generations += result.generations;
      repositories += result.repositories;
    }
  }
  if (generations + repositories > 0) options.logger.info('cache swept', { generations, repositories });
  return { generations, repositories };
}

async function sweepIncarnation(
  repo: string,
  incarnation: string,
  leases: LeaseOptions,
  options: { idleMs: number },
): Promise<SweepResult> {
  const gensDir = join(incarnation, 'gens');
  const names = (await children(gensDir)).filter((n) => generationSeq(n) !== undefined).sort();
  const leased = await leasedGenerations(leases, repo);
  const now = leases.now();
  let generations = 0;
  const newest = names[names.length - 1];
  for (const name of names) {
    if (name === newest || leased.has(name)) continue;
    if (now - (await lastUsed(join(gensDir, name))) < options.idleMs) continue;
    if (await evict(join(gensDir, name), async () => (await leasedGenerations(leases, repo)).has(name)))
      generations++;
  }
  for (const name of await children(gensDir)) {
    // Builds abandoned by a crashed builder.
    if (name.startsWith('.build-') && now - (await lastUsed(join(gensDir, name))) > options.idleMs) {
      await rm(join(gensDir, name), { recursive: true, force: true });
    }
  }
  const idle = () => incarnationIdle(gensDir, leases, repo, options.idleMs);
  if (!(await idle())) return { generations, repositories: 0 };
  const lock = await tryWriterLock(leases, repo, 'evict');
  if (lock === null) return { generations, repositories: 0 };
  try {
    // Decided again under the lock, by the clock now: what was seen before may be old news (this
    // process frozen in between, a generation built meanwhile), and the lock is checked last
    // because a lock whose holder was frozen past its expiry may belong to a builder by now.
    if (!(await idle()) || !(await lock.held())) return { generations, repositories: 0 };
    const gone = await evict(incarnation, async () => (await leasedGenerations(leases, repo)).size > 0);
    return { generations, repositories: gone ? 1 : 0 };
  } finally {
    await lock.release();
  }
}

/** No generation of the incarnation is leased, and its newest one has been idle long enough. */
async function incarnationIdle(
  gensDir: string,
  leases: LeaseOptions,
  repo: string,
  idleMs: number,
): Promise<boolean> {
  const newest = (await children(gensDir))
    .filter((n) => generationSeq(n) !== undefined)
    .sort()
    .pop();
  if ((await leasedGenerations(leases, repo)).size > 0) return false;
  return newest === undefined || leases.now() - (await lastUsed(join(gensDir, newest))) >= idleMs;
}

/** Renames `dir` away, re-checks `inUse`, and deletes it or puts it back. */
async function evict(dir: string, inUse: () => Promise<boolean>): Promise<boolean> {
  const trash = `${dir}.evicting-${randomBytes(4).toString('hex')}`;
  try {
    await rename(dir, trash);
  } catch {
    return false;
  }
  if (await inUse()) {
    await rename(trash, dir).catch(() => rm(trash, { recursive: true, force: true }));
    return false;
  }
  await rm(trash, { recursive: true, force: true });
  return true;
}

async function leasedGenerations(leases: LeaseOptions, repo: string): Promise<Set<string>> {
  const records = await leases.presence.list(repoPartition(repo), 'lease#');
  const names = new Set<string>();
  for (const record of records) {
    const generation = record.data?.generation ?? record.id.slice(leasePrefix('').length).split('#')[0];
    if (generation) names.add(generation);
  }
  return names;
}

/** When a generation was last read (its stamp), or built. */
async function lastUsed(dir: string): Promise<number> {
  const stamp = await stat(join(dir, LAST_USED)).catch(() => null);
  if (stamp) return stamp.mtimeMs;
  return (await stat(dir).catch(() => null))?.mtimeMs ?? 0;
}

async function repositoryDirs(reposRoot: string): Promise<{ repo: string; dir: string }[]> {
  const found: { repo: string; dir: string }[] = [];
  for (const name of await children(reposRoot)) {
    if (name.endsWith('.git')) found.push({ repo: name.slice(0, -4), dir: join(reposRoot, name) });
    else {
      for (const inner of await children(join(reposRoot, name))) {
        if (inner.endsWith('.git'))
          found.push({ repo: `${name}/${inner.slice(0, -4)}`, dir: join(reposRoot, name, inner) });
      }
    }
  }
  return found;
}

async function children(dir: string): Promise<string[]> {
  return readdir(dir).catch(() => [] as string[]);
}

/** The repositories that have a cache under `root` (the ones recently pushed to or read). */
export async function cachedRepositories(root: string): Promise<string[]> {
  return (await repositoryDirs(join(root, 'repos'))).map((found) => found.repo);
}
