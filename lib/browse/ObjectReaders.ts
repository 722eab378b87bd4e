/**
 * Readers of leased generations for the repository pages: per generation one `git cat-file
 * --batch-command` (CatFile.ts), started on the first page that needs it and kept while pages
 * keep coming, so a page costs object reads on an open pipe, not process starts. Each one holds
 * its generation's lease (eviction leaves the directory alone) and a slot of the node's git
 * budget; it is closed, and both are given back, once idle for `idleMs`, or when more than `max`
 * are open and it is the least recently used idle one.
 */
import type { CacheTarget, Generation, RepoCache } from '../cache/RepoCache.js';
import type { GitRunner } from '../git/GitRunner.js';
import type { Logger } from '../log.js';
import { CatFile } from './CatFile.js';

export interface Reader {
  readonly catFile: CatFile;
  /** The leased generation's directory, for git commands of their own (diff-tree, archive). */
  readonly dir: string;
  /** Done with it (the process stays open for the next page). */
  done(): void;
}

interface Open {
  readonly key: string;
  readonly started: number;
  /** Replaced by a newer reader: closed once its last user is done. */
  retired: boolean;
  readonly generation: Generation;
  readonly catFile: CatFile;
  users: number;
  lastUsed: number;
  timer: NodeJS.Timeout | null;
}

export class ObjectReaders {
  readonly #git: GitRunner;
  readonly #cache: RepoCache;
  readonly #logger: Logger;
  readonly #idleMs: number;
  readonly #max: number;
  readonly #maxAgeMs: number;
  readonly #open = new Map<string, Open>();
  readonly #starting = new Map<string, Promise<Open>>();
  #closed = false;

  constructor(options: {
    git: GitRunner;
    cache: RepoCache;
    logger: Logger;
    idleMs?: number;
    max?: number;
    maxAgeMs?: number;
  }) {
    this.#git = options.git;
    this.#cache = options.cache;
    this.#logger = options.logger;
    this.#idleMs = options.idleMs ?? 30_000;
    this.#max = options.max ?? 4;
    this.#maxAgeMs = options.maxAgeMs ?? 10 * 60_000;
  }

  /** A reader of `target`'s complete generation (built first if needed); call `done()` after. */
  async open(target: CacheTarget): Promise<Reader> {
    const key = `${target.repo}\0${target.created}\0${target.name}`;
    let open = this.#open.get(key);
    if (open !== undefined && !open.catFile.closed && Date.now() - open.started > this.#maxAgeMs) {
      // Its lease is renewed for at most an hour (leases.ts): a busy reader is replaced well before.
      this.#open.delete(key);
      open.retired = true;
      if (open.users === 0) this.#close(open);
      open = undefined;
    }
    if (open === undefined || open.catFile.closed) {
      if (open) this.#close(open);
      let starting = this.#starting.get(key);
      if (starting === undefined) {
        starting = this.#start(key, target).finally(() => this.#starting.delete(key));
        this.#starting.set(key, starting);
      }
      open = await starting;
    }
    const used = open;
    used.users++;
    if (used.timer) clearTimeout(used.timer);
    used.timer = null;
    let released = false;
    return {
      catFile: used.catFile,
      dir: used.generation.dir,
      done: () => {
        if (released) return;
        released = true;
        used.users--;
        used.lastUsed = Date.now();
        if (used.users === 0) {
          if (used.retired) this.#close(used);
          else this.#idle(used);
        }
      },
    };
  }

  /** Closes every reader (a node shutting down). */
  close(): void {
    this.#closed = true;
    for (const open of [...this.#open.values()]) this.#close(open);
  }

  async #start(key: string, target: CacheTarget): Promise<Open> {
    const generation = await this.#cache.leaseComplete(target);
    try {
      const child = await this.#git.spawn(['--git-dir', generation.dir, 'cat-file', '--batch-command']);
      child.stderr?.resume();
      // An open reader must not keep the process alive by itself.
      child.unref();
      const open: Open = {
        key,
        started: Date.now(),
        retired: false,
        generation,
        catFile: new CatFile(child),
        users: 0,
        lastUsed: Date.now(),
        timer: null,
      };
      child.once('close', () => {
        if (this.#open.get(key) === open) this.#close(open);
      });
      this.#open.set(key, open);
      this.#trim();
      if (this.#closed) this.#close(open);
      return open;
    } catch (error) {
      await generation.release();
      throw error;
    }
  }

  #idle(open: Open): void {
    open.timer = setTimeout(() => {
      if (open.users === 0) this.#close(open);
    }, this.#idleMs);
    open.timer.unref();
    this.#trim();
  }

  /** Past `max` open readers, the least recently used idle ones go. */
  #trim(): void {
    if (this.#open.size <= this.#max) return;
    const idle = [...this.#open.values()]
      .filter((o) => o.users === 0)
      .sort((a, b) => a.lastUsed - b.lastUsed);
    for (const open of idle) {
      if (this.#open.size <= this.#max) break;
      this.#close(open);
    }
  }

  #close(open: Open): void {
    if (this.#open.get(open.key) === open) this.#open.delete(open.key);
    if (open.timer) clearTimeout(open.timer);
    open.catFile.close();
    void open.generation
      .release()
      .catch((error: unknown) => this.#logger.warn('browse reader lease release failed', { error }));
  }
}
