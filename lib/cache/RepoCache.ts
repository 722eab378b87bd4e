/**
 * The shared cache of bare repositories: only a cache, shared by every node and invocation.
 *
 * A repository's cache is a sequence of immutable generations, each a bare repository built for
 * exactly one index etag over one add-only object store (DESIGN.md invariant 5). A reader leases
 * the generation of the etag it just read and runs upload-pack there without any lock, so readers
 * of one repository never wait for each other. Building a missing generation takes the writer
 * lock, so two invocations do not download the same packs; everyone else waits for the
 * generation to appear (or for the lock to lapse, if its holder died). Packs are only ever added,
 * and a generation costs O(refs): its packed-refs, HEAD and an alternates file.
 */
import { randomBytes } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import {
  access,
  link,
  mkdir,
  readdir,
  readFile,
  rename,
  rm,
  stat,
  utimes,
  writeFile,
} from 'node:fs/promises';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { Busy } from '../git/GitBudget.js';
import type { Logger } from '../log.js';
import type { ObjectStore } from '../store/ObjectStore.js';
import { retryReads } from '../store/retryReads.js';
import { mapLimit } from '../util/mapLimit.js';
import { packKey } from '../wal/keys.js';
import type { LoadedIndex } from '../wal/types.js';
import { applyUpdates, type Wal } from '../wal/Wal.js';
import { LAST_USED } from './evict.js';
import { KeyedMutex } from './KeyedMutex.js';
import { generationName, generationSeq, gensDir, incarnationDir, objectsDir } from './layout.js';
import { type Held, type LeaseOptions, takeLease, tryWriterLock, waitForWriter } from './leases.js';
import { parsePackedRefs, writePackedRefs } from './packedRefs.js';

/** A generation a reader may use until it releases it. */
export interface Generation extends Held {
  readonly dir: string;
  readonly name: string;
  /** The add-only object store the generation borrows from. */
  readonly objects: string;
}

export interface RepoCacheOptions {
  readonly root: string;
  readonly wal: Wal;
  readonly leases: LeaseOptions;
  readonly logger: Logger;
  readonly downloadConcurrency?: number;
  /** How long to wait for another invocation's build before giving up. */
  readonly buildWaitMs?: number;
}

/** Replaying up to this many entries on top of an existing generation beats downloading a checkpoint. */
const REPLAY_RATHER_THAN_CHECKPOINT = 200;

export class RepoCache {
  readonly #root: string;
  readonly #wal: Wal;
  readonly #store: ObjectStore;
  readonly #leases: LeaseOptions;
  readonly #logger: Logger;
  readonly #downloads: number;
  readonly #buildWaitMs: number;
  readonly #mutex = new KeyedMutex();

  constructor(options: RepoCacheOptions) {
    this.#root = options.root;
    this.#wal = options.wal;
    this.#store = options.wal.store;
    this.#leases = options.leases;
    this.#logger = options.logger;
    this.#downloads = options.downloadConcurrency ?? 16;
    this.#buildWaitMs = options.buildWaitMs ?? 120_000;
  }

  /**
   * A leased generation for exactly `loaded` (built first if needed). The caller releases it when
   * its git process is done.
   */
  async read(repo: string, loaded: LoadedIndex): Promise<Generation> {
    const incarnation = incarnationDir(this.#root, repo, loaded.index.created);
    const name = generationName(loaded);
    const dir = join(gensDir(incarnation), name);
    for (let attempt = 0; attempt < 3; attempt++) {
      if (!(await exists(join(dir, 'packed-refs')))) await this.#build(repo, loaded, incarnation, name);
      const lease = await takeLease(this.#leases, repo, name);
      // Eviction renames a generation away only when it sees no lease: check again under ours.
      if (await exists(join(dir, 'packed-refs'))) {
        await stampUse(dir, this.#leases.now());
        return { dir, name, objects: objectsDir(incarnation), ...lease };
      }
      await lease.release();
    }
    throw new Busy(`narwal: the cache of ${repo} is being rebuilt; retry in a moment`);
  }

  /** Builds the generation for `loaded` now, in the background; a hint that saves the next reader the work. */
  prewarm(repo: string, loaded: LoadedIndex): Promise<void> {
    const incarnation = incarnationDir(this.#root, repo, loaded.index.created);
    return this.#build(repo, loaded, incarnation, generationName(loaded)).catch((error: unknown) =>
      this.#logger.warn('prewarm failed', { repo, error: String(error) }),
    );
  }

  /** Adds packs this node received (a push it published) without downloading them again. */
  async adoptPacks(
    repo: string,
    created: string,
    packs: readonly { name: string; packPath: string; idxPath: string; bitmapPath?: string }[],
  ): Promise<void> {
    const pack = join(objectsDir(incarnationDir(this.#root, repo, created)), 'pack');
    await mkdir(pack, { recursive: true });
    for (const p of packs) {
      // The .idx last: git notices a pack by its .idx, which must never point at a missing pack.
      await linkIfMissing(p.packPath, join(pack, `${p.name}.pack`));
      if (p.bitmapPath) await linkIfMissing(p.bitmapPath, join(pack, `${p.name}.bitmap`)).catch(() => {});
      await linkIfMissing(p.idxPath, join(pack, `${p.name}.idx`));
    }
  }

  /** An empty repository, for advertising refs of a repository that does not exist yet. */
  async emptyRepo(): Promise<string> {
    const dir = join(this.#root, 'empty.git');
    if (!(await exists(join(dir, 'packed-refs')))) {
      const objects = join(this.#root, 'empty-objects');
      await mkdir(join(objects, 'pack'), { recursive: true });
      await writeGeneration(dir, objects, new Map(), 'refs/heads/main');
    }
    return dir;
  }

  /**
   * Builders of one repository in this process queue on a mutex (no polling); across processes
   * the writer lock decides, and the others poll for the generation or for the lock to lapse.
   */
  async #build(repo: string, loaded: LoadedIndex, incarnation: string, name: string): Promise<void> {
    const dir = join(gensDir(incarnation), name);
    const built = () => exists(join(dir, 'packed-refs'));
    const deadline = Date.now() + this.#buildWaitMs;
    let failures = 0;
    await this.#mutex.run(repo, async () => {
      while (!(await built())) {
        const lock = await tryWriterLock(this.#leases, repo, `build ${name}`);
        if (lock === null) {
          // Someone else is building (maybe this very generation): wait for it or for its lock to lapse.
          if (Date.now() > deadline)
            throw new Busy(`narwal: the cache of ${repo} is busy; retry in a moment`);
          await waitForWriter(this.#leases, repo, built, Math.max(0, deadline - Date.now()));
          continue;
        }
        try {
          if (!(await built())) await this.#buildLocked(loaded, incarnation, name);
        } catch (error) {
          // The cache directory may be deleted at any moment (eviction, an operator): start over.
          if (++failures >= 3) throw error;
          this.#logger.warn('generation build failed, retrying', {
            repo,
            generation: name,
            error: String(error),
          });
        } finally {
          await lock.release();
        }
      }
    });
  }

  async #buildLocked(loaded: LoadedIndex, incarnation: string, name: string): Promise<void> {
    const started = performance.now();
    const objects = objectsDir(incarnation);
    const gens = gensDir(incarnation);
    await mkdir(join(objects, 'pack'), { recursive: true });
    await mkdir(gens, { recursive: true });
    let base = await newestGeneration(gens, loaded.index.seq);
    // A base evicted under us is no error: replay from the checkpoint or the start instead.
    let refs = base ? await readPackedRefs(join(gens, base.name)).catch(() => null) : null;
    if (refs === null) base = null;
    let from = base?.seq ?? 0;
    let source = base?.name ?? 'empty';
    const checkpoint = loaded.index.checkpoint;
    if (checkpoint && (base === null || base.seq + REPLAY_RATHER_THAN_CHECKPOINT < checkpoint.seq)) {
      // Cold, or far behind: one consolidated pack instead of every entry's.
      await this.#downloadPacks(loaded.index.repo, objects, checkpoint.packs, true);
      refs = new Map(await this.#wal.refTableMap(checkpoint.table));
      from = checkpoint.seq;
      source = `checkpoint at ${checkpoint.seq}`;
    }
    const startRefs = refs ?? new Map<string, string>();
    const items = await this.#wal.itemsAfter(loaded.index, from);
    await this.#downloadPacks(
      loaded.index.repo,
      objects,
      [...new Set(items.flatMap((item) => item.packs))],
      false,
    );
    for (const item of items) applyUpdates(startRefs, item);
    const temp = join(gens, `.build-${randomBytes(6).toString('hex')}`);
    await writeGeneration(temp, objects, startRefs, loaded.index.head);
    await writeFile(
      join(temp, 'narwal-generation.json'),
      JSON.stringify({ etag: loaded.etag, seq: loaded.index.seq, created: loaded.index.created }),
    );
    try {
      await rename(temp, join(gens, name));
    } catch (error) {
      await rm(temp, { recursive: true, force: true });
      if (!(await exists(join(gens, name, 'packed-refs')))) throw error;
    }
    this.#logger.info('generation built', {
      repo: loaded.index.repo,
      generation: name,
      from: source,
      entries: items.length,
      ms: Math.round(performance.now() - started),
    });
  }

  async #downloadPacks(
    repo: string,
    objects: string,
    names: readonly string[],
    bitmaps: boolean,
  ): Promise<void> {
    await mapLimit(names, this.#downloads, async (name) => {
      const base = join(objects, 'pack', name);
      if (await exists(`${base}.idx`)) return;
      await this.#download(packKey(repo, name, 'pack'), `${base}.pack`);
      if (bitmaps) await this.#download(packKey(repo, name, 'bitmap'), `${base}.bitmap`).catch(() => {});
      // The .idx last: git notices a pack by its .idx.
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

/** A bare repository whose refs are one packed-refs file and whose objects are borrowed. */
async function writeGeneration(
  dir: string,
  objects: string,
  refs: ReadonlyMap<string, string>,
  head: string,
): Promise<void> {
  await mkdir(join(dir, 'objects', 'info'), { recursive: true });
  await mkdir(join(dir, 'objects', 'pack'), { recursive: true });
  await mkdir(join(dir, 'refs'), { recursive: true });
  await writeFile(join(dir, 'objects', 'info', 'alternates'), `${objects}\n`);
  await writeFile(
    join(dir, 'config'),
    '[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = true\n',
  );
  await writeFile(join(dir, 'HEAD'), `ref: ${head}\n`);
  // Written last: a generation counts as built once its packed-refs exists.
  await writeFile(join(dir, 'packed-refs'), writePackedRefs(refs));
}

async function newestGeneration(gens: string, atMost: number): Promise<{ name: string; seq: number } | null> {
  let best: { name: string; seq: number } | null = null;
  for (const name of await readdir(gens).catch(() => [] as string[])) {
    const seq = generationSeq(name);
    if (seq === undefined || seq > atMost || (best && best.seq >= seq)) continue;
    if (await exists(join(gens, name, 'packed-refs'))) best = { name, seq };
  }
  return best;
}

async function readPackedRefs(dir: string): Promise<Map<string, string>> {
  return parsePackedRefs(await readFile(join(dir, 'packed-refs'), 'utf8'));
}

/** Marks a generation as used, at most about once a minute (a write per request would be waste). */
async function stampUse(dir: string, now: number): Promise<void> {
  const path = join(dir, LAST_USED);
  const current = await stat(path).catch(() => null);
  if (current && now - current.mtimeMs < 60_000) return;
  const at = new Date(now);
  await utimes(path, at, at).catch(() => writeFile(path, '').catch(() => {}));
}

async function linkIfMissing(from: string, to: string): Promise<void> {
  try {
    await link(from, to);
  } catch (error) {
    if (error instanceof Error && 'code' in error && error.code === 'EEXIST') return;
    throw error;
  }
}

export async function exists(path: string): Promise<boolean> {
  return access(path).then(
    () => true,
    () => false,
  );
}
