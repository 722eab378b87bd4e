/**
 * The shared cache of bare repositories: only a cache, shared by every node and invocation.
 *
 * A repository's cache is a sequence of immutable generations, each a bare repository for exactly
 * one index etag over one add-only object store (docs/architecture.md invariant 5). A generation comes into
 * being in two steps:
 *
 * - *Refs*: its packed-refs, written from the index alone (O(refs), no pack downloaded). Its
 *   packed-refs is `fully-peeled`, so git advertises refs (info/refs, ls-refs, receive-pack's
 *   advertisement) without reading a single object: a cold `ls-remote` costs no download.
 * - *Complete*: every pack its refs need is in the object store (the newest checkpoint's, then
 *   each entry's after it), marked by a file. upload-pack and receive-pack need this; while it is
 *   built, the request that waits for it can report progress on git's sideband.
 *
 * A reader leases the generation of the etag it just read and runs git there without any lock,
 * so readers of one repository never wait for each other. Completing a generation takes the
 * writer lock, so two invocations do not download the same packs; everyone else waits for the
 * generation to complete (or for the lock to lapse, if its holder died). Packs are only ever
 * added, and a generation costs O(refs): its packed-refs, HEAD and an alternates file.
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
import { dirname, join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { type Logger, serializeError } from '../log.js';
import type { RefValue } from '../protocol/refValue.js';
import type { ObjectStore } from '../store/ObjectStore.js';
import { retryReads } from '../store/retryReads.js';
import { Busy } from '../util/Busy.js';
import { isCode } from '../util/isCode.js';
import { KeyedMutex } from '../util/KeyedMutex.js';
import { mapLimit } from '../util/mapLimit.js';
import { packKey } from '../wal/keys.js';
import { checkpointAt, checkSeq, refsAt } from '../wal/stateAt.js';
import type { CheckpointPointer, LoadedIndex, LogItem } from '../wal/types.js';
import type { Wal } from '../wal/Wal.js';
import { dropOtherBitmaps } from './dropOtherBitmaps.js';
import { LAST_USED } from './evict.js';
import {
  generationName,
  generationSeq,
  gensDir,
  incarnationDir,
  objectsDir,
  pastGenerationName,
} from './layout.js';
import { type Held, type LeaseOptions, type Lock, tryWriterLock, waitForWriter } from './leases.js';
import type { PackIndexer } from './multiPackIndex.js';
import { writePackedRefs } from './packedRefs.js';
import { SharedLeases } from './sharedLeases.js';

/** A generation a reader may use until it releases it. */
export interface Generation extends Held {
  readonly dir: string;
  readonly name: string;
  /** The add-only object store the generation borrows from. */
  readonly objects: string;
}

/** Receives one-line progress reports while a generation is completed (for git's sideband). */
export type Progress = (message: string, final?: boolean) => void;

/**
 * A repository state a generation is built for: the current index, or (for clones of a past
 * entry) the state after an earlier entry.
 */
export interface CacheTarget {
  readonly repo: string;
  readonly created: string;
  readonly seq: number;
  readonly head: string;
  /** Generation name: sortable by seq, unique per state. */
  readonly name: string;
  /** The newest checkpoint taken at or before `seq`. */
  readonly checkpoint: CheckpointPointer | null;
  refs(): Promise<ReadonlyMap<string, RefValue>>;
  /** Log items with seq in (afterSeq, seq]. */
  itemsAfter(afterSeq: number): Promise<LogItem[]>;
}

export interface RepoCacheOptions {
  readonly root: string;
  readonly wal: Wal;
  readonly leases: LeaseOptions;
  readonly logger: Logger;
  readonly downloadConcurrency?: number;
  /** How long to wait for another invocation's build before giving up. */
  readonly buildWaitMs?: number;
  /** Told when packs were added to an object store (keeps its multi-pack-index current). */
  readonly indexPacks?: PackIndexer;
}

/** Replaying up to this many entries on top of a complete generation beats downloading a checkpoint. */
const REPLAY_RATHER_THAN_CHECKPOINT = 200;
/** How far behind its target a complete generation may be to receive a push (nearlyComplete). */
const PUSH_LAG = 8;
/** Marks a generation whose object store holds everything its refs reach. */
export const COMPLETE = 'narwal-complete';
/**
 * Names one object store for as long as it exists: a store deleted and made again under the same
 * path gets another name, so a build can tell that the packs it downloaded went with the old one.
 */
const STORE_ID = 'narwal-store-id';

/** How often a generation's refs are written before a cache deleted under the writes gives up. */
const REFS_ATTEMPTS = 3;
/** What a cache directory deleted under a write makes node:fs throw. */
const FS_RACES = ['ENOENT', 'ENOTEMPTY', 'EEXIST'];

/** A build found the cache changed under it (evicted, deleted, or its lock taken over): build again. */
export class BuildSuperseded extends Error {
  readonly code = 'BuildSuperseded';
}

export class RepoCache {
  readonly #root: string;
  readonly #wal: Wal;
  readonly #store: ObjectStore;
  readonly #leases: LeaseOptions;
  readonly #logger: Logger;
  readonly #downloads: number;
  readonly #buildWaitMs: number;
  readonly #indexPacks: PackIndexer;
  readonly #mutex = new KeyedMutex();
  readonly #shared: SharedLeases;
  /** When this process last stamped each generation's use (stampUse): no need to look again sooner. */
  readonly #stamped = new Map<string, number>();

  constructor(options: RepoCacheOptions) {
    this.#root = options.root;
    this.#wal = options.wal;
    this.#store = options.wal.store;
    this.#leases = options.leases;
    this.#shared = new SharedLeases(options.leases);
    this.#logger = options.logger;
    this.#downloads = options.downloadConcurrency ?? 16;
    this.#buildWaitMs = options.buildWaitMs ?? 120_000;
    this.#indexPacks = options.indexPacks ?? (() => {});
  }

  /** The state of the current index `loaded`. */
  target(loaded: LoadedIndex): CacheTarget {
    const { index } = loaded;
    return {
      repo: index.repo,
      created: index.created,
      seq: index.seq,
      head: index.head,
      name: generationName(loaded),
      checkpoint: index.checkpoint,
      refs: () => this.#wal.allRefs(index),
      itemsAfter: (afterSeq) => this.#wal.itemsAfter(index, afterSeq),
    };
  }

  /**
   * The state right after entry `seq` of the index `loaded` (a clone of the past): a generation
   * of its own, named by its seq, built like any other from the newest checkpoint at or before
   * it; the object store it shares holds the objects of every entry.
   */
  async targetAt(loaded: LoadedIndex, seq: number): Promise<CacheTarget> {
    const { index } = loaded;
    checkSeq(index, seq);
    if (seq === index.seq) return this.target(loaded);
    const checkpoint = await checkpointAt(this.#wal, index, seq);
    return {
      repo: index.repo,
      created: index.created,
      seq,
      head: index.head,
      name: pastGenerationName(seq),
      checkpoint,
      refs: () => refsAt(this.#wal, index, seq),
      itemsAfter: (afterSeq) => this.#wal.itemsAfter(index, afterSeq, seq),
    };
  }

  /**
   * A leased generation whose refs are those of `target`, for advertising refs; its objects may
   * still be missing. The caller releases it when its git process is done.
   */
  async leaseRefs(target: CacheTarget): Promise<Generation> {
    return this.#lease(target, () => this.#ensureRefs(target));
  }

  /** A leased, complete generation for `target` (completed first if needed, reporting progress). */
  async leaseComplete(target: CacheTarget, progress?: Progress): Promise<Generation> {
    return this.#lease(target, () => this.#complete(target, progress));
  }

  /**
   * The generation of `target` leased, when it is complete already; else null. One look at it
   * where isComplete and leaseComplete make two (a lease lost to eviction completes it again).
   */
  async leaseIfComplete(target: CacheTarget): Promise<Generation | null> {
    if (!(await this.isComplete(target))) return null;
    let first = true;
    return this.#lease(target, async () => {
      if (first) first = false;
      else await this.#complete(target);
    });
  }

  /** Whether the generation of `target` is complete already (a reader will not wait for it). */
  async isComplete(target: CacheTarget): Promise<boolean> {
    return exists(join(this.#dir(target), COMPLETE));
  }

  /**
   * For a push while `target`'s generation is still being completed (the prewarm after the push
   * before it, say): the newest complete generation at most PUSH_LAG entries older, leased, when
   * the object store already holds the packs of every entry since - as it does after this node's
   * own pushes, whose packs it adopts while git reports them. A push needs `target`'s objects, which
   * are there, and refs only to bound git's connectivity walk, which older ones do as well. Null
   * when there is no such generation: the push then waits for `target`'s.
   */
  async nearlyComplete(target: CacheTarget): Promise<Generation | null> {
    const incarnation = incarnationDir(this.#root, target.repo, target.created);
    const base = await newestComplete(gensDir(incarnation), target.seq - 1);
    if (base === null || target.seq - base.seq > PUSH_LAG) return null;
    const pack = join(objectsDir(incarnation), 'pack');
    const holds = async () => {
      for (const item of await target.itemsAfter(base.seq)) {
        for (const name of item.packs) if (!(await exists(join(pack, `${name}.idx`)))) return false;
      }
      return true;
    };
    if (!(await holds())) return null;
    const generation = await this.#lease({ ...target, seq: base.seq, name: base.name }, async () => {});
    // Leased: eviction leaves it alone from here on, but may have taken it (or the store) before.
    if ((await exists(join(generation.dir, COMPLETE))) && (await holds())) return generation;
    await generation.release();
    return null;
  }

  /** Releases the leases this node keeps for requests to come (sharedLeases.ts). */
  releaseUnheldLeases(): Promise<void> {
    return this.#shared.releaseUnheld();
  }

  /** Completes the generation of `target` now, in the background; a hint that saves the next reader the work. */
  prewarm(target: CacheTarget): Promise<void> {
    // Leased and let go at once: the lease stays a moment for the request that comes next to join.
    return this.leaseComplete(target)
      .then((generation) => generation.release())
      .catch((error: unknown) =>
        this.#logger.warn('prewarm failed', { repo: target.repo, error: serializeError(error) }),
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
    const bitmapped = packs.filter((p) => p.bitmapPath).map((p) => p.name);
    if (bitmapped.length > 0) await dropOtherBitmaps(pack, bitmapped);
    this.#indexPacks(dirname(pack));
  }

  /** An empty repository, for advertising refs of a repository that does not exist yet. */
  async emptyRepo(): Promise<string> {
    const dir = join(this.#root, 'empty.git');
    if (!(await exists(join(dir, 'packed-refs')))) {
      const objects = join(this.#root, 'empty-objects');
      await mkdir(join(objects, 'pack'), { recursive: true });
      const temp = `${dir}.${randomBytes(6).toString('hex')}`;
      await writeGeneration(temp, objects, new Map(), 'refs/heads/main');
      await rename(temp, dir).catch(() => rm(temp, { recursive: true, force: true }));
    }
    return dir;
  }

  #dir(target: CacheTarget): string {
    return join(gensDir(incarnationDir(this.#root, target.repo, target.created)), target.name);
  }

  /**
   * Leases the generation of `target` once `ready` made it so: a lease of its own, or one another
   * request of this node holds (sharedLeases.ts). Either way the generation is looked for under
   * the lease, since eviction leaves a leased generation alone but may have taken it before (and
   * the cache may be deleted by hand at any time).
   */
  async #lease(target: CacheTarget, ready: () => Promise<void>): Promise<Generation> {
    const incarnation = incarnationDir(this.#root, target.repo, target.created);
    const dir = this.#dir(target);
    for (let attempt = 0; attempt < 3; attempt++) {
      await ready();
      const hold = await this.#shared.take(target.repo, target.name);
      if (await exists(join(dir, 'packed-refs'))) {
        await this.#stampUse(dir);
        return { dir, name: target.name, objects: objectsDir(incarnation), release: hold.release };
      }
      await hold.discard();
      // What is there without packed-refs is no generation (one half deleted, or what a deletion
      // interrupted left, maybe with its COMPLETE mark): it goes, so that `ready` builds anew. A
      // removal that trips over a writer or another removal (ENOTEMPTY) leaves that to `ready` too.
      await rm(dir, { recursive: true, force: true }).catch((error: unknown) => {
        if (!isFsRace(error)) throw error;
      });
    }
    throw new Busy(`narwal: the cache of ${target.repo} is being rebuilt; retry in a moment`);
  }

  /**
   * Marks the generation used now, for the eviction of idle ones (evict.ts), at most once a
   * STAMP_EVERY_MS: a stamp this process made that recently is known without looking at the file
   * (any stamp since, by another process, is newer still).
   */
  async #stampUse(dir: string): Promise<void> {
    const now = this.#leases.now();
    const last = this.#stamped.get(dir);
    if (last !== undefined && now - last >= 0 && now - last < STAMP_EVERY_MS) return;
    await stampUse(dir, now);
    this.#stampedAt(dir, now);
  }

  /**
   * A generation this process has just written is as good as stamped: with no stamp, eviction
   * goes by the directory's own time, which the write set (evict.ts lastUsed).
   */
  #builtNow(dir: string): void {
    this.#stampedAt(dir, this.#leases.now());
  }

  #stampedAt(dir: string, at: number): void {
    if (this.#stamped.size >= MAX_STAMPS_KEPT) this.#stamped.clear();
    this.#stamped.set(dir, at);
  }

  /**
   * Writes the generation's refs if nobody has: no lock, since every writer writes the same. The
   * cache may be deleted under it at any moment (eviction, an operator, EFS trouble): a write that
   * meets a directory vanishing, or one half deleted in its place, is tried again a few times,
   * then given up as BuildSuperseded (retryable).
   */
  async #ensureRefs(target: CacheTarget): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.#writeRefs(target);
      } catch (error) {
        if (!isFsRace(error)) throw error;
        if (attempt >= REFS_ATTEMPTS)
          throw new BuildSuperseded(
            `the cache of ${target.repo} changed while the refs of ${target.name} were written`,
          );
        await sleep(10 * attempt);
      }
    }
  }

  async #writeRefs(target: CacheTarget): Promise<void> {
    const dir = this.#dir(target);
    if (await exists(join(dir, 'packed-refs'))) return;
    const incarnation = incarnationDir(this.#root, target.repo, target.created);
    const objects = objectsDir(incarnation);
    await mkdir(join(objects, 'pack'), { recursive: true });
    await mkdir(gensDir(incarnation), { recursive: true });
    const temp = join(gensDir(incarnation), `.build-${randomBytes(6).toString('hex')}`);
    try {
      await writeGeneration(temp, objects, await target.refs(), target.head);
      await writeFile(
        join(temp, 'narwal-generation.json'),
        JSON.stringify({ seq: target.seq, created: target.created, name: target.name }),
      );
      const placed = await rename(temp, dir).then(
        () => true,
        async (error: unknown) => {
          // A generation directory without packed-refs is no generation: one half deleted, or
          // what a deletion interrupted left. Nothing can be renamed over it, so it goes first.
          if (!isCode(error, 'ENOTEMPTY') && !isCode(error, 'EEXIST')) throw error;
          if (await exists(join(dir, 'packed-refs'))) return false;
          await rm(dir, { recursive: true, force: true });
          await rename(temp, dir);
          return true;
        },
      );
      if (placed) this.#builtNow(dir);
    } catch (error) {
      if (!(await exists(join(dir, 'packed-refs')))) throw error;
    } finally {
      await rm(temp, { recursive: true, force: true });
    }
  }

  /**
   * Builders of one repository in this process queue on a mutex (no polling); across processes
   * the writer lock decides, and the others poll for the generation or for the lock to lapse.
   */
  async #complete(target: CacheTarget, progress?: Progress): Promise<void> {
    const done = () => exists(join(this.#dir(target), COMPLETE));
    if (await done()) return;
    const deadline = Date.now() + this.#buildWaitMs;
    let failures = 0;
    let waiting = false;
    await this.#mutex.run(target.repo, async () => {
      while (!(await done())) {
        const lock = await tryWriterLock(this.#leases, target.repo, `build ${target.name}`);
        if (lock === null) {
          // Someone else is building (maybe this very generation): wait for it or for its lock to lapse.
          if (Date.now() > deadline)
            throw new Busy(`narwal: the cache of ${target.repo} is busy; retry in a moment`);
          if (!waiting) progress?.('narwal: waiting for another request to prepare the repository', true);
          waiting = true;
          await waitForWriter(this.#leases, target.repo, done, Math.max(0, deadline - Date.now()));
          continue;
        }
        try {
          if (!(await done())) await this.#completeLocked(target, lock, progress);
        } catch (error) {
          // The cache directory may be deleted at any moment (eviction, an operator): start over.
          // Deleted under every try, the build gives up as retryable, not as a fault.
          if (++failures >= 3)
            throw isFsRace(error)
              ? new BuildSuperseded(
                  `the cache of ${target.repo} changed under every build of ${target.name}`,
                  {
                    cause: error,
                  },
                )
              : error;
          this.#logger.warn('generation build failed, retrying', {
            repo: target.repo,
            generation: target.name,
            error: serializeError(error),
          });
        } finally {
          await lock.release();
        }
      }
    });
  }

  async #completeLocked(target: CacheTarget, lock: Lock, progress?: Progress): Promise<void> {
    const started = performance.now();
    const incarnation = incarnationDir(this.#root, target.repo, target.created);
    const objects = objectsDir(incarnation);
    const gens = gensDir(incarnation);
    await mkdir(join(objects, 'pack'), { recursive: true });
    await mkdir(gens, { recursive: true });
    const store = await objectStoreId(objects);
    // A complete generation means the packs of every entry up to its seq are in the object store
    // (a newer one, which a clone of the past finds, leaves nothing to download).
    const base = await newestComplete(gens, Number.MAX_SAFE_INTEGER);
    let from = Math.min(base?.seq ?? 0, target.seq);
    let source = base?.name ?? 'empty';
    const checkpoint = target.checkpoint;
    if (checkpoint && (base === null || base.seq + REPLAY_RATHER_THAN_CHECKPOINT < checkpoint.seq)) {
      // Cold, or far behind: one consolidated pack instead of every entry's.
      progress?.(
        `narwal: downloading the checkpoint of entry ${checkpoint.seq} (${formatBytes(checkpoint.bytes)})`,
        true,
      );
      await mapLimit(checkpoint.packs, this.#downloads, (name) =>
        this.#downloadPack(target.repo, objects, name, true),
      );
      from = checkpoint.seq;
      source = `checkpoint at ${checkpoint.seq}`;
    }
    const [items] = await Promise.all([target.itemsAfter(from), this.#ensureRefs(target)]);
    await this.#replay(target.repo, objects, items, progress);
    // The newest checkpoint's bitmap, downloaded now or adopted before, is the one git should see
    // (a cache may hold an older one from before a checkpoint made elsewhere).
    if (checkpoint) await dropOtherBitmaps(join(objects, 'pack'), checkpoint.packs);
    // The mark says "every object of these refs is here": true of the object store this build
    // started from, which is gone if the repository's cache was evicted (or deleted) meanwhile,
    // and only while no other builder took over (this process may have been frozen past its lock).
    if ((await readObjectStoreId(objects)) !== store || !(await lock.held()))
      throw new BuildSuperseded(`the cache of ${target.repo} changed while ${target.name} was built`);
    this.#indexPacks(objects);
    await writeFile(join(this.#dir(target), COMPLETE), '');
    this.#builtNow(this.#dir(target));
    const ms = Math.round(performance.now() - started);
    if (items.length > 0 || checkpoint?.seq === from)
      progress?.(`narwal: repository ready in ${ms} ms`, true);
    this.#logger.info('generation built', {
      repo: target.repo,
      generation: target.name,
      from: source,
      entries: items.length,
      ms,
    });
  }

  /** Downloads the packs of `items`, bounded, reporting entries as their packs arrive. */
  async #replay(
    repo: string,
    objects: string,
    items: readonly LogItem[],
    progress?: Progress,
  ): Promise<void> {
    const downloads = new Map<string, Promise<void>>();
    const fetchPack = (name: string) => {
      let pending = downloads.get(name);
      if (!pending) {
        pending = this.#downloadPack(repo, objects, name, false);
        downloads.set(name, pending);
      }
      return pending;
    };
    let done = 0;
    let reported = 0;
    const report = (final: boolean) => {
      const now = Date.now();
      if (!final && now - reported < 250) return;
      reported = now;
      progress?.(`narwal: replaying ${done}/${items.length} entries${final ? ', done.' : ''}`, final);
    };
    const withPacks = items.filter((item) => item.packs.length > 0);
    if (withPacks.length > 0) report(false);
    await mapLimit(items, this.#downloads, async (item) => {
      for (const name of item.packs) await fetchPack(name);
      done++;
      report(false);
    });
    if (withPacks.length > 0) report(true);
  }

  async #downloadPack(repo: string, objects: string, name: string, bitmap: boolean): Promise<void> {
    const base = join(objects, 'pack', name);
    if (await exists(`${base}.idx`)) return;
    await this.#download(packKey(repo, name, 'pack'), `${base}.pack`);
    if (bitmap) await this.#download(packKey(repo, name, 'bitmap'), `${base}.bitmap`).catch(() => {});
    // The .idx last: git notices a pack by its .idx.
    await this.#download(packKey(repo, name, 'idx'), `${base}.idx`);
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
  refs: ReadonlyMap<string, RefValue>,
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

async function newestComplete(gens: string, atMost: number): Promise<{ name: string; seq: number } | null> {
  const names = (await readdir(gens).catch(() => [] as string[]))
    .map((name) => ({ name, seq: generationSeq(name) }))
    .filter((g): g is { name: string; seq: number } => g.seq !== undefined && g.seq <= atMost)
    .sort((a, b) => b.seq - a.seq);
  for (const g of names) if (await exists(join(gens, g.name, COMPLETE))) return g;
  return null;
}

function formatBytes(bytes: number): string {
  if (bytes < 1024 * 1024) return `${Math.ceil(bytes / 1024)} KiB`;
  return `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
}

/** Marks a generation as used, at most about once a minute (a write per request would be waste). */
/** How often a generation's use is stamped, at most. */
const STAMP_EVERY_MS = 60_000;
/** Generations whose stamps one process remembers (each a path and a number). */
const MAX_STAMPS_KEPT = 4096;

async function stampUse(dir: string, now: number): Promise<void> {
  const path = join(dir, LAST_USED);
  const current = await stat(path).catch(() => null);
  if (current && now - current.mtimeMs < STAMP_EVERY_MS) return;
  const at = new Date(now);
  await utimes(path, at, at).catch(() => writeFile(path, '').catch(() => {}));
}

async function linkIfMissing(from: string, to: string): Promise<void> {
  try {
    await link(from, to);
  } catch (error) {
    if (isCode(error, 'EEXIST')) return;
    throw error;
  }
}

/** The name of the object store at `objects`, given to it by whoever asks first. */
async function objectStoreId(objects: string): Promise<string> {
  // Made once per object store: every build after the first finds it.
  const known = await readObjectStoreId(objects);
  if (known !== null) return known;
  const path = join(objects, STORE_ID);
  const temp = `${path}.${randomBytes(6).toString('hex')}`;
  try {
    // Written whole, then linked create-only: a reader never sees half a name, the first one wins.
    await writeFile(temp, randomBytes(12).toString('hex'));
    await linkIfMissing(temp, path);
  } finally {
    await rm(temp, { force: true });
  }
  return readFile(path, 'utf8');
}

async function readObjectStoreId(objects: string): Promise<string | null> {
  return readFile(join(objects, STORE_ID), 'utf8').catch(() => null);
}

export async function exists(path: string): Promise<boolean> {
  return access(path).then(
    () => true,
    () => false,
  );
}

/** An error of node:fs that a cache directory deleted (or written) under the operation makes. */
function isFsRace(error: unknown): boolean {
  return FS_RACES.some((code) => isCode(error, code));
}
