/**
 * Checkpoints bound the cost of a cold cache: every ref as of one entry plus one consolidated pack
 * (with a reachability bitmap, so git serves clones of it cheaply) holding every object those refs
 * reach. A cold cache downloads the checkpoint and replays only the entries after it.
 *
 * A checkpoint is made off the push's critical path: after a publish, when enough entries or
 * bytes have accumulated since the last one, in the background (or by `narwal checkpoint REPO`).
 * It is built from a leased generation by `git repack -a -d -b` in a private repository, stored
 * create-only, and its pointer enters the index through the publisher's queue, batched with
 * pushes like any other change to the index.
 */
import { randomUUID } from 'node:crypto';
import { link, mkdir, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { GitRunner } from '../git/GitRunner.js';
import { type Logger, serializeError } from '../log.js';
import { writeTable } from '../wal/boundIndex.js';
import { RepoNotFound } from '../wal/errors.js';
import { encodeJson, sha256 } from '../wal/indexCodec.js';
import { checkpointKey, packKey } from '../wal/keys.js';
import type { Publisher } from '../wal/Publisher.js';
import { putImmutable } from '../wal/putImmutable.js';
import { mapToRows } from '../wal/refRows.js';
import type { CheckpointObject, CheckpointPointer, LoadedIndex } from '../wal/types.js';
import type { Wal } from '../wal/Wal.js';
import { type LeaseOptions, repoPartition } from './leases.js';
import type { RepoCache } from './RepoCache.js';

export interface CheckpointPolicy {
  /** Make a checkpoint once this many entries follow the last one... */
  readonly everyEntries: number;
  /** ...or once their packs add up to this many bytes. */
  readonly everyBytes: number;
}

export interface CheckpointerDeps {
  readonly wal: Wal;
  readonly publisher: Publisher;
  readonly cache: RepoCache;
  readonly git: GitRunner;
  readonly leases: LeaseOptions;
  /** The node's scratch directory, made sure to exist and to be its own (nodeDir.ts). */
  readonly scratchRoot: () => Promise<string>;
  readonly logger: Logger;
  readonly policy: CheckpointPolicy;
}

const CHECKPOINT_LOCK = 'checkpoint';
const FIRST_CHECKPOINT_BYTES = 1024 * 1024;
/** A checkpoint of a large repository takes a while; its lock lives this long without renewal. */
const LOCK_TTL_MS = 10 * 60_000;

/** Links every pack whose .idx exists (a pack still downloading has none yet). */
async function linkCompletePacks(from: string, to: string): Promise<void> {
  const names = await readdir(from);
  for (const name of names.filter((n) => n.endsWith('.idx'))) {
    const base = name.slice(0, -'.idx'.length);
    await link(join(from, `${base}.pack`), join(to, `${base}.pack`));
    await link(join(from, name), join(to, name));
  }
}

export class Checkpointer {
  readonly #deps: CheckpointerDeps;
  readonly #running = new Set<string>();

  constructor(deps: CheckpointerDeps) {
    this.#deps = deps;
  }

  /** After a publish: starts a checkpoint in the background when the policy says one is due. */
  maybe(repo: string, loaded: LoadedIndex): Promise<void> {
    if (this.#running.has(repo)) return Promise.resolve();
    return this.#due(loaded)
      .then((due) => (due ? this.make(repo) : null))
      .then(
        () => {},
        (error: unknown) =>
          this.#deps.logger.warn('checkpoint failed', { repo, error: serializeError(error) }),
      );
  }

  /**
   * Makes a checkpoint at the current head of the log. Returns it, or null when there is nothing
   * new to checkpoint or another node is making one right now.
   */
  async make(repo: string): Promise<CheckpointPointer | null> {
    if (this.#running.has(repo)) return null;
    this.#running.add(repo);
    try {
      return await this.#make(repo);
    } finally {
      this.#running.delete(repo);
    }
  }

  /** Whether any entry other than a checkpoint follows the newest checkpoint. */
  async #changedSince(loaded: LoadedIndex): Promise<boolean> {
    const { index } = loaded;
    const since = index.checkpoint?.seq ?? 0;
    if (index.seq === since) return false;
    const items = await this.#deps.wal.itemsAfter(index, since);
    return items.some((item) => item.kind !== 'checkpoint');
  }

  async #due(loaded: LoadedIndex): Promise<boolean> {
    const { index } = loaded;
    const since = index.checkpoint?.seq ?? 0;
    const policy = this.#deps.policy;
    if (index.seq - since >= policy.everyEntries) return true;
    if (index.seq === since) return false;
    const items = await this.#deps.wal.itemsAfter(index, since);
    const bytes = items.reduce((sum, item) => sum + (item.bytes ?? 0), 0);
    // A repository's first sizeable import gets its bitmap at once: clones of it are the
    // expensive ones, and without a checkpoint a warm cache never has a bitmap to serve from.
    return bytes >= policy.everyBytes || (index.checkpoint === null && bytes >= FIRST_CHECKPOINT_BYTES);
  }

  async #make(repo: string): Promise<CheckpointPointer | null> {
    const { wal, leases, logger } = this.#deps;
    const loaded = await wal.readIndexFully(repo);
    if (loaded === null) throw new RepoNotFound(repo);
    if (!(await this.#changedSince(loaded))) return null;
    const key = repoPartition(repo);
    const owner = `${leases.owner}-${randomUUID().slice(0, 8)}`;
    if (
      !(await leases.presence.tryCreate({
        key,
        id: CHECKPOINT_LOCK,
        owner,
        expiresAt: leases.now() + LOCK_TTL_MS,
      }))
    ) {
      return null;
    }
    const started = performance.now();
    try {
      const pointer = await this.#build(repo, loaded);
      logger.info('checkpoint made', {
        repo,
        seq: pointer.seq,
        bytes: pointer.bytes,
        ms: Math.round(performance.now() - started),
      });
      return pointer;
    } finally {
      await leases.presence.release(key, CHECKPOINT_LOCK, owner).catch(() => {});
    }
  }

  async #build(repo: string, loaded: LoadedIndex): Promise<CheckpointPointer> {
    const { wal, cache, git, publisher } = this.#deps;
    const { index } = loaded;
    const dir = join(await this.#deps.scratchRoot(), `checkpoint-${randomUUID()}.git`);
    const generation = await cache.leaseComplete(cache.target(loaded));
    const packDir = join(dir, 'objects', 'pack');
    try {
      await mkdir(packDir, { recursive: true });
      await mkdir(join(dir, 'refs'));
      await writeFile(join(dir, 'config'), '[core]\n\trepositoryformatversion = 0\n\tbare = true\n');
      await writeFile(join(dir, 'HEAD'), `ref: ${index.head}\n`);
      await link(join(generation.dir, 'packed-refs'), join(dir, 'packed-refs'));
      // The cache's packs become this repository's own (hard links), so that --keep-unreachable
      // keeps every object ever published, not only what today's refs reach: a cold cache built
      // from this checkpoint must still hold the parents a racing push relied on, and a clone of
      // any past entry needs objects that later entries made unreachable.
      await linkCompletePacks(join(generation.objects, 'pack'), packDir);
      await git.check(
        [
          ...['-c', 'gc.auto=0', '-c', 'pack.writeBitmapHashCache=true'],
          ...['repack', '-a', '-d', '-b', '-q', '--keep-unreachable'],
        ],
        { cwd: dir, background: true },
      );
      const names = (await readdir(packDir)).filter((n) => n.endsWith('.pack')).map((n) => n.slice(0, -5));
      let bytes = 0;
      await Promise.all(
        names.flatMap((name) =>
          (['pack', 'idx', 'bitmap'] as const).map(async (ext) => {
            const path = join(packDir, `${name}.${ext}`);
            const size = await stat(path).then(
              (s) => s.size,
              () => -1,
            );
            if (size < 0) return;
            if (ext === 'pack') bytes += size;
            await putImmutable(wal.store, packKey(repo, name, ext), { path, size, immutable: true });
          }),
        ),
      );
      const bottom = index.tables[0];
      const table =
        index.tables.length === 1 && index.recent.length === 0 && bottom?.seq === index.seq
          ? bottom
          : await writeTable(wal, wal.store, repo, index.seq, mapToRows(await wal.allRefs(index)));
      const object: CheckpointObject = {
        v: 1,
        seq: index.seq,
        table: table.key,
        count: table.count,
        packs: names,
        bytes,
        time: new Date().toISOString(),
        head: index.head,
      };
      const body = encodeJson(object);
      const key = checkpointKey(repo, sha256(body));
      await putImmutable(wal.store, key, body);
      const pointer: CheckpointPointer = {
        seq: index.seq,
        key,
        table: table.key,
        count: table.count,
        packs: names,
        bytes,
      };
      await cache.adoptPacks(
        repo,
        index.created,
        names.map((name) => ({
          name,
          packPath: join(packDir, `${name}.pack`),
          idxPath: join(packDir, `${name}.idx`),
          bitmapPath: join(packDir, `${name}.bitmap`),
        })),
      );
      const published = await publisher.publish({
        repo,
        commands: [],
        atomic: false,
        who: { token: 'narwal' },
        packs: [],
        // A checkpoint entry; a newer checkpoint that landed meanwhile wins and this one is dropped.
        checkpoint: pointer,
      });
      // The entry is a new index, so a new generation: the next fetch should find it ready too.
      if (published.seq !== null) await cache.prewarm(cache.target(published.loaded));
      return pointer;
    } finally {
      await generation.release();
      await rm(dir, { recursive: true, force: true });
    }
  }
}
