/**
 * Every push is received into a private repository of its own whose object store borrows the
 * cache's (objects/info/alternates) and whose refs are a snapshot of the cache's. receive-pack
 * moves the pushed objects out of git's quarantine into this private repository, never into the
 * cache, so the cache only ever holds objects that the log names: a refused or failed push leaves
 * nothing behind that a later connectivity check or push negotiation could mistake for published.
 */
import { createHash, randomUUID } from 'node:crypto';
import { link, mkdir, readdir, rename, rm, rmdir, stat, symlink, unlink, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { isCode } from '../util/isCode.js';
import type { StartedAhead } from './GitRunner.js';

export interface ReceivedPack {
  readonly name: string;
  readonly packPath: string;
  readonly idxPath: string;
  readonly packSize: number;
  readonly idxSize: number;
}

export interface ScratchRepo {
  readonly dir: string;
  /** The process started in it ahead (ScratchRepos' `startIn`), when it came with one. */
  readonly started?: StartedAhead;
  packs(): Promise<ReceivedPack[]>;
  /** Whether its directory was removed under it (the cache deleted while a push ran in it). */
  gone(): Promise<boolean>;
  /** Removes it, and stops its process started ahead if that was never taken. */
  remove(): Promise<void>;
}

/**
 * The base a push to a repository that does not exist yet is received against: no refs, no
 * objects. It lives under `root` and is removed on release, so such a push (which may be refused
 * and create nothing) leaves nothing in the shared cache either.
 */
export async function createEmptyBase(
  root: string,
): Promise<{ dir: string; name: string; objects: string; release(): Promise<void> }> {
  const dir = join(root, `${randomUUID()}.base`);
  const objects = join(dir, 'objects');
  await mkdir(objects, { recursive: true });
  await writeFile(join(dir, 'packed-refs'), '');
  return { dir, name: 'unborn', objects, release: () => rm(dir, { recursive: true, force: true }) };
}

/**
 * Makes scratch repositories, keeping a few bare skeletons (directories, HEAD, config) made ahead
 * of the pushes that will use them: creating a directory or a file costs a few hundred
 * microseconds on a journaling file system, and a push would otherwise wait for nine of them
 * one after another before receive-pack could start. What depends on the push - the objects it
 * borrows, the refs snapshot - is added when it takes one. A skeleton is made under the node's
 * scratch root of the moment and used only while that is still the root: a node that had to claim
 * a new directory leaves the old skeletons to the sweep of expired node directories.
 *
 * With `startIn`, each skeleton made ahead also gets the git process a push will run in it,
 * started as soon as the skeleton exists: git reads the push's request before it looks at the
 * repository's refs or borrowed objects (builtin/receive-pack.c), so they are added when a push
 * takes the skeleton, and the push does not wait for git to start.
 *
 * Spares are made when a push is announced (`prepare`: its client asked for the receive-pack
 * advertisement, and computes its pack before it sends it) and after a push that found none (a
 * node whose pushes were announced to another), never while a push runs beside them. Starting a
 * process costs this node's main thread a fork of its whole address space (some 10-15 ms at 80 MB
 * on a 2-CPU virtual machine): made at the end of every push, as they were, that work fell on
 * the client's next push while it started, and made a push's latency vary more than the stock
 * server's; when announced, it runs while the index is read for the advertisement, which a store
 * with latency makes it wait for anyway.
 */
export class ScratchRepos {
  readonly #root: () => Promise<string>;
  readonly #startIn: ((dir: string) => StartedAhead | null) | undefined;
  readonly #spares: { readonly root: string; readonly dir: string; readonly started: StartedAhead | null }[] =
    [];
  readonly #keep: number;
  #making = 0;
  /** Skeletons being made in the background. */
  readonly #pending = new Set<Promise<void>>();
  #stopped = false;
  /** An alternates file per object store, under the root it was made in, hard-linked into each repository. */
  readonly #alternates = new Map<string, string>();

  constructor(
    root: () => Promise<string>,
    options: { spares?: number; startIn?: (dir: string) => StartedAhead | null } = {},
  ) {
    this.#root = root;
    this.#keep = options.spares ?? 2;
    this.#startIn = options.startIn;
  }

  /** A repository for one push that borrows `generation`'s objects and starts from its refs. */
  async create(generation: { dir: string; objects: string }): Promise<ScratchRepo> {
    const root = await this.#root();
    const spare = this.#take(root);
    // A push that found no spare makes them once it is over: this node's pushes may be announced
    // to another node (prepare).
    const afterwards = (scratch: ScratchRepo): ScratchRepo =>
      spare !== undefined
        ? scratch
        : { ...scratch, remove: () => scratch.remove().finally(() => this.#refill()) };
    const alternates = await this.#alternatesFile(root, generation.objects);
    if (spare !== undefined) {
      try {
        return afterwards(await fill(spare.dir, generation, alternates, spare.started));
      } catch (error) {
        // Gone from under us (the cache deleted by hand, say), or the generation's refs were:
        // a new skeleton tells which.
        if (!isCode(error, 'ENOENT')) throw error;
      }
    }
    try {
      return afterwards(await fill(await makeSkeleton(root), generation, alternates));
    } catch (error) {
      // The shared alternates file may have gone with the directory: make it again, once.
      if (!isCode(error, 'ENOENT')) throw error;
      this.#alternates.delete(generation.objects);
      return afterwards(
        await fill(
          await makeSkeleton(root),
          generation,
          await this.#alternatesFile(root, generation.objects),
        ),
      );
    }
  }

  /** A push is announced: makes the spares missing now, in the background (see the class). */
  prepare(): void {
    this.#refill();
  }

  /**
   * Resolves once no skeleton is being made; with `stop`, none is made after and the processes
   * started in the spares are stopped (the node is closing).
   */
  async settled(options: { stop?: boolean } = {}): Promise<void> {
    if (options.stop) this.#stopped = true;
    while (this.#pending.size > 0) await Promise.allSettled([...this.#pending]);
    if (options.stop) for (const spare of this.#spares.splice(0)) spare.started?.discard();
  }

  /**
   * A file that says "borrow `objects`": a link to it costs a fraction of a new file, and every
   * push to a repository borrows the same objects.
   */
  async #alternatesFile(root: string, objects: string): Promise<string> {
    const known = this.#alternates.get(objects);
    if (known !== undefined && dirname(known) === root) return known;
    const path = join(root, `alternates-${createHash('sha256').update(objects).digest('hex').slice(0, 16)}`);
    const temp = `${path}.${randomUUID()}`;
    await writeFile(temp, `${objects}\n`);
    await rename(temp, path);
    this.#alternates.set(objects, path);
    return path;
  }

  #take(root: string): { readonly dir: string; readonly started: StartedAhead | null } | undefined {
    for (let spare = this.#spares.pop(); spare !== undefined; spare = this.#spares.pop()) {
      if (spare.root === root) return spare;
      spare.started?.discard();
    }
    return undefined;
  }

  /** Makes skeletons in the background, up to the number kept; a failure only leaves fewer. */
  #refill(): void {
    while (!this.#stopped && this.#spares.length + this.#making < this.#keep) {
      this.#making++;
      const making: Promise<void> = this.#root()
        .then(async (root) => {
          const dir = await makeSkeleton(root);
          const started = this.#stopped ? null : (this.#startIn?.(dir) ?? null);
          this.#spares.push({ root, dir, started });
        })
        .catch(() => {})
        .finally(() => {
          this.#making--;
          this.#pending.delete(making);
        });
      this.#pending.add(making);
    }
  }
}

/**
 * Where a scratch repository's objects really are: `objects` is a link to it. git's connectivity
 * check after a push (`rev-list --alternate-refs`, connected.c) lists the refs of every borrowed
 * object store whose real path ends in `/objects` beside a `refs` directory, and while receive-pack
 * quarantines a push the repository's own store is borrowed: by the real path it is not such a
 * store, so no command runs for it (transport.c refs_from_alternate_cb). Its refs are `--all`
 * already; listing them again cost a shell per push on the path of `ok`.
 */
const OBJECTS_DIR = 'odb';

/** A repository with no objects, no refs and no alternates, under `root`. */
async function makeSkeleton(root: string): Promise<string> {
  const dir = join(root, `${randomUUID()}.git`);
  await mkdir(join(dir, OBJECTS_DIR), { recursive: true });
  await Promise.all([
    symlink(OBJECTS_DIR, join(dir, 'objects')),
    mkdir(join(dir, OBJECTS_DIR, 'info')),
    mkdir(join(dir, OBJECTS_DIR, 'pack')),
    mkdir(join(dir, 'refs')),
    writeFile(join(dir, 'HEAD'), 'ref: refs/heads/main\n'),
    writeFile(join(dir, 'config'), '[core]\n\trepositoryformatversion = 0\n\tbare = true\n'),
  ]);
  return dir;
}

/** Makes a skeleton at `dir` a scratch repository of `generation`. */
async function fill(
  dir: string,
  generation: { dir: string; objects: string },
  alternates: string,
  started: StartedAhead | null = null,
): Promise<ScratchRepo> {
  await Promise.all([
    link(alternates, join(dir, 'objects', 'info', 'alternates')),
    // A generation never changes, so a hard link of its refs is a stable snapshot.
    link(join(generation.dir, 'packed-refs'), join(dir, 'packed-refs')),
  ]).catch(async (error: unknown) => {
    started?.discard();
    await rm(dir, { recursive: true, force: true });
    throw error;
  });
  return scratchOf(dir, started);
}

function scratchOf(dir: string, started: StartedAhead | null): ScratchRepo {
  return {
    dir,
    ...(started ? { started } : {}),
    async packs() {
      const names = await readdir(join(dir, 'objects', 'pack'));
      return Promise.all(
        names
          .filter((n) => n.endsWith('.pack'))
          .map(async (n) => {
            const name = n.slice(0, -'.pack'.length);
            const base = join(dir, 'objects', 'pack', name);
            const [pack, idx] = await Promise.all([stat(`${base}.pack`), stat(`${base}.idx`)]);
            return {
              name,
              packPath: `${base}.pack`,
              idxPath: `${base}.idx`,
              packSize: pack.size,
              idxSize: idx.size,
            };
          }),
      );
    },
    gone: () =>
      stat(dir).then(
        () => false,
        (error: unknown) => isCode(error, 'ENOENT'),
      ),
    remove: async () => {
      started?.discard();
      await removeScratch(dir);
    },
  };
}

/** What a skeleton is made of, and a filled one has besides its packs (makeSkeleton, fill). */
const SCRATCH_FILES = ['HEAD', 'config', 'packed-refs', 'objects', join(OBJECTS_DIR, 'info', 'alternates')];
const SCRATCH_DIRS = [join(OBJECTS_DIR, 'pack'), join(OBJECTS_DIR, 'info'), 'refs'];

/**
 * Removes a scratch repository by its known layout: its files and the packs git received, then
 * its directories, innermost first. A recursive removal lists and inspects every directory and
 * file before it unlinks it, about four times the calls per push. Anything else found there
 * (git left a file this layout does not know, a fill that failed halfway) makes it fall back to
 * the recursive removal, which takes whatever is left. Says which of the two it took.
 */
export async function removeScratch(dir: string): Promise<'layout' | 'recursive'> {
  try {
    const pack = join(dir, OBJECTS_DIR, 'pack');
    const packs = await readdir(pack);
    await Promise.all([
      ...SCRATCH_FILES.map((f) => unlink(join(dir, f))),
      ...packs.map((name) => unlink(join(pack, name))),
    ]);
    await Promise.all(SCRATCH_DIRS.map((d) => rmdir(join(dir, d))));
    await rmdir(join(dir, OBJECTS_DIR));
    await rmdir(dir);
    return 'layout';
  } catch {
    await rm(dir, { recursive: true, force: true });
    return 'recursive';
  }
}
