/**
 * The repository every server serves, prepared once per run: the express fixture
 * (fixtures/express.bundle: 323 refs, 6,413 commits) cloned bare for the peer, exactly as
 * `git clone --bare` leaves it (one pack, no bitmap), and pushed - heads and tags, one push - into
 * narwal, which stores it as one pack and builds its cache from the log as it always does.
 */
import { readdir, readFile, stat } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { gitOk } from './gitClient.js';

export const PROJECT_ROOT = resolve(import.meta.dirname, '..');
/** The express fixture committed in `fixtures/`, or NARWAL_BENCH_BUNDLE. */
export const BUNDLE = process.env.NARWAL_BENCH_BUNDLE ?? join(PROJECT_ROOT, 'fixtures', 'express.bundle');
/** The same path on both servers. */
export const REPO = 'bench/express.git';

export interface Fixture {
  /** GIT_PROJECT_ROOT of the peer. */
  readonly peerRoot: string;
  readonly peerRepo: string;
  readonly refs: number;
  readonly cloneBundleMs: number;
  readonly pushMs: number;
}

export async function prepareFixture(options: {
  workDir: string;
  home: string;
  narwalRepoUrl: string;
}): Promise<Fixture> {
  const peerRoot = join(options.workDir, 'peer');
  const peerRepo = join(peerRoot, REPO);
  const cloned = await gitOk(['clone', '--quiet', '--bare', BUNDLE, peerRepo], { home: options.home });
  const refs = (
    await gitOk(['for-each-ref', '--format=%(refname)'], { home: options.home, cwd: peerRepo })
  ).stdout
    .split('\n')
    .filter((line) => line !== '').length;
  const pushed = await gitOk(
    ['push', '--quiet', options.narwalRepoUrl, 'refs/heads/*:refs/heads/*', 'refs/tags/*:refs/tags/*'],
    { home: options.home, cwd: peerRepo },
  );
  return { peerRoot, peerRepo, refs, cloneBundleMs: cloned.ms, pushMs: pushed.ms };
}

/** Both servers must advertise the same refs, or the comparison means nothing. */
export async function sameRefs(home: string, urls: readonly string[]): Promise<void> {
  const listings = await Promise.all(
    urls.map(async (url) => {
      const out = await gitOk(['ls-remote', url], { home });
      return out.stdout
        .split('\n')
        .filter((line) => line !== '' && !line.endsWith('\tHEAD'))
        .sort()
        .join('\n');
    }),
  );
  if (new Set(listings).size !== 1) throw new Error('the servers advertise different refs');
}

export interface PackLayout {
  /** The bare repository upload-pack runs in (its packed-refs, config, HEAD). */
  readonly dir: string;
  /** Where its objects are: `<dir>/objects`, or the store its alternates point at. */
  readonly objects: string;
  readonly packs: { readonly name: string; readonly bytes: number }[];
  readonly bitmaps: number;
  readonly reverseIndexes: number;
  readonly multiPackIndex: boolean;
  readonly commitGraph: boolean;
  readonly looseObjects: number;
  readonly packedRefsHeader: string;
  readonly config: string;
  /** narwal's shared cache: how many generations (one bare repository per index etag) exist. */
  readonly generations?: number;
}

/** What upload-pack has to work with in a bare repository. */
export async function packLayout(dir: string, objects = join(dir, 'objects')): Promise<PackLayout> {
  const packDir = join(objects, 'pack');
  const files = await readdir(packDir);
  const packs = await Promise.all(
    files
      .filter((f) => f.endsWith('.pack'))
      .map(async (name) => ({ name, bytes: (await stat(join(packDir, name))).size })),
  );
  let looseObjects = 0;
  for (const fanout of await readdir(objects)) {
    if (/^[0-9a-f]{2}$/.test(fanout)) looseObjects += (await readdir(join(objects, fanout))).length;
  }
  const packedRefs = await readFile(join(dir, 'packed-refs'), 'utf8').catch(() => '');
  return {
    dir,
    objects,
    packs,
    bitmaps: files.filter((f) => f.endsWith('.bitmap')).length,
    reverseIndexes: files.filter((f) => f.endsWith('.rev')).length,
    multiPackIndex: files.includes('multi-pack-index'),
    commitGraph:
      (await exists(join(objects, 'info', 'commit-graph'))) ||
      (await exists(join(objects, 'info', 'commit-graphs'))),
    looseObjects,
    packedRefsHeader: packedRefs.split('\n')[0] ?? '',
    config: (await readFile(join(dir, 'config'), 'utf8').catch(() => '')).trim(),
  };
}

/**
 * narwal's cache of REPO as the server running on `dataDir` built it. Two layouts exist: the
 * shared cache (`cache/repos/<repo>/i-<incarnation>/objects` plus immutable generations under
 * `gens/`, which borrow those objects) and, before it, one bare repository per node
 * (`cache/nodes/<node>/repos/<repo>`).
 */
export async function narwalCacheLayout(dataDir: string): Promise<PackLayout> {
  const shared = join(dataDir, 'cache', 'repos', REPO);
  for (const incarnation of (await readdir(shared).catch(() => [] as string[])).sort()) {
    const gens = (await readdir(join(shared, incarnation, 'gens')).catch(() => [] as string[]))
      .filter((name) => !name.startsWith('.'))
      .sort();
    const newest = gens.at(-1);
    if (newest === undefined) continue;
    const layout = await packLayout(
      join(shared, incarnation, 'gens', newest),
      join(shared, incarnation, 'objects'),
    );
    return { ...layout, generations: gens.length };
  }
  const nodes = join(dataDir, 'cache', 'nodes');
  for (const node of await readdir(nodes).catch(() => [] as string[])) {
    const dir = join(nodes, node, 'repos', REPO);
    if (await exists(join(dir, 'objects'))) return packLayout(dir);
  }
  throw new Error(`no cache of ${REPO} under ${join(dataDir, 'cache')}`);
}

function exists(path: string): Promise<boolean> {
  return stat(path).then(
    () => true,
    () => false,
  );
}
