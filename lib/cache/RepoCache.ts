/**
 * The node's cache of bare repositories: only a cache. Each repository directory is brought to
 * exactly the log position of the index etag a request just read (DESIGN.md invariant 5) by
 * downloading the packs of the entries it has not seen and rewriting its refs in one rename.
 * Packs only ever get added, so a reader running upload-pack is never disturbed by a catch-up.
 * Catch-up of one repository runs one at a time in this process; readers never wait for a
 * catch-up when the cache is already at the etag they read.
 */
import { randomBytes } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { access, link, mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import type { ObjectStore } from '../store/ObjectStore.js';
import { retryReads } from '../store/retryReads.js';
import { mapLimit } from '../util/mapLimit.js';
import { packKey } from '../wal/keys.js';
import type { LoadedIndex, LogItem } from '../wal/types.js';
import { applyUpdates, type Wal } from '../wal/Wal.js';
import { KeyedMutex } from './KeyedMutex.js';
import { parsePackedRefs, writePackedRefs } from './packedRefs.js';

interface CacheState {
  readonly created: string;
  readonly etag: string;
  readonly seq: number;
}

interface Loaded {
  state: CacheState | null;
  refs: Map<string, string>;
}

const STATE_FILE = 'narwal-state.json';

export class RepoCache {
  readonly #root: string;
  readonly #wal: Wal;
  readonly #store: ObjectStore;
  readonly #downloads: number;
  readonly #mutex = new KeyedMutex();
  readonly #loaded = new Map<string, Loaded>();

  constructor(options: { root: string; wal: Wal; downloadConcurrency?: number }) {
    this.#root = options.root;
    this.#wal = options.wal;
    this.#store = options.wal.store;
    this.#downloads = options.downloadConcurrency ?? 8;
  }

  repoDir(repo: string): string {
    return join(this.#root, 'repos', `${repo}.git`);
  }

  /** Reads the current index and brings the cache to it; null when the repository does not exist. */
  async freshen(repo: string): Promise<LoadedIndex | null> {
    const loaded = await this.#wal.readIndex(repo);
    if (loaded === null) return null;
    await this.catchUp(repo, loaded);
    return loaded;
  }

  /** Brings the cache of `repo` to exactly `target` (or leaves it where it is if it is already there or newer). */
  async catchUp(repo: string, target: LoadedIndex): Promise<void> {
    const current = this.#loaded.get(repo)?.state;
    if (current && current.created === target.index.created && current.seq >= target.index.seq) return;
    await this.#mutex.run(repo, async () => {
      const cached = await this.#load(repo);
      const state = cached.state;
      if (state && state.created === target.index.created && state.seq >= target.index.seq) return;
      if (state && state.created !== target.index.created) {
        // The repository was deleted and created again: nothing cached belongs to it.
        await rm(this.repoDir(repo), { recursive: true, force: true });
        cached.state = null;
        cached.refs = new Map();
      }
      const dir = await this.ensureRepo(repo);
      const items = await this.#wal.itemsAfter(target.index, cached.state?.seq ?? 0);
      await this.#downloadPacks(repo, dir, items);
      const refs = new Map(cached.refs);
      for (const item of items) applyUpdates(refs, item);
      await replaceFile(join(dir, 'packed-refs'), writePackedRefs(refs));
      await replaceFile(join(dir, 'HEAD'), `ref: ${target.index.head}\n`);
      const next: CacheState = { created: target.index.created, etag: target.etag, seq: target.index.seq };
      await replaceFile(join(dir, STATE_FILE), JSON.stringify(next));
      cached.state = next;
      cached.refs = refs;
    });
  }

  /** Adds packs this node already holds (a push it received) without downloading them again. */
  async adoptPacks(
    repo: string,
    packs: readonly { name: string; packPath: string; idxPath: string }[],
  ): Promise<void> {
    const dir = await this.ensureRepo(repo);
    for (const pack of packs) {
      const base = join(dir, 'objects', 'pack', pack.name);
      // The .pack first: git notices a pack by its .idx, which must never point at a missing pack.
      await linkIfMissing(pack.packPath, `${base}.pack`);
      await linkIfMissing(pack.idxPath, `${base}.idx`);
    }
  }

  /** A snapshot of the refs the cache holds, for a push's private repository. */
  packedRefsPath(repo: string): string {
    return join(this.repoDir(repo), 'packed-refs');
  }

  /** Creates the bare repository skeleton if needed; git init is not needed for a cache. */
  async ensureRepo(repo: string): Promise<string> {
    const dir = this.repoDir(repo);
    await createBareSkeleton(dir);
    return dir;
  }

  /** An empty repository for advertising refs of a repository that does not exist yet. */
  async emptyRepo(): Promise<string> {
    const dir = join(this.#root, 'empty.git');
    await createBareSkeleton(dir);
    return dir;
  }

  async #load(repo: string): Promise<Loaded> {
    const hit = this.#loaded.get(repo);
    if (hit) return hit;
    const dir = this.repoDir(repo);
    const state = await readFile(join(dir, STATE_FILE), 'utf8').then(
      (text) => JSON.parse(text) as CacheState,
      () => null,
    );
    const refs = state
      ? await readFile(join(dir, 'packed-refs'), 'utf8').then(
          parsePackedRefs,
          () => new Map<string, string>(),
        )
      : new Map<string, string>();
    const loaded = { state, refs };
    this.#loaded.set(repo, loaded);
    return loaded;
  }

  async #downloadPacks(repo: string, dir: string, items: readonly LogItem[]): Promise<void> {
    const names = [...new Set(items.flatMap((item) => item.packs))];
    await mapLimit(names, this.#downloads, async (name) => {
      const base = join(dir, 'objects', 'pack', name);
      if (await exists(`${base}.idx`)) return;
      await this.#download(packKey(repo, name, 'pack'), `${base}.pack`);
      await this.#download(packKey(repo, name, 'idx'), `${base}.idx`);
    });
  }

  async #download(key: string, path: string): Promise<void> {
    const temp = `${path}.${randomBytes(6).toString('hex')}.tmp`;
    try {
      await retryReads(async () => {
        const { body } = await this.#store.getStream(key);
        await pipeline(body, createWriteStream(temp));
      });
      await rename(temp, path);
    } finally {
      await rm(temp, { force: true });
    }
  }
}

export async function createBareSkeleton(dir: string): Promise<void> {
  if (await exists(join(dir, 'config'))) return;
  await mkdir(join(dir, 'objects', 'pack'), { recursive: true });
  await mkdir(join(dir, 'objects', 'info'), { recursive: true });
  await mkdir(join(dir, 'refs', 'heads'), { recursive: true });
  await mkdir(join(dir, 'refs', 'tags'), { recursive: true });
  if (!(await exists(join(dir, 'HEAD')))) await replaceFile(join(dir, 'HEAD'), 'ref: refs/heads/main\n');
  await replaceFile(
    join(dir, 'config'),
    '[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = true\n',
  );
}

async function replaceFile(path: string, content: string): Promise<void> {
  const temp = join(dirname(path), `.${randomBytes(6).toString('hex')}.tmp`);
  await writeFile(temp, content);
  await rename(temp, path);
}

async function linkIfMissing(from: string, to: string): Promise<void> {
  try {
    await link(from, to);
  } catch (error) {
    if (error instanceof Error && 'code' in error && error.code === 'EEXIST') return;
    throw error;
  }
}

async function exists(path: string): Promise<boolean> {
  return access(path).then(
    () => true,
    () => false,
  );
}
