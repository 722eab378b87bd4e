/**
 * A stand-in for the shared cache behind the transfers' narrow port (FetchCache): one real bare
 * repository, made by the real git, serves as every generation, and the fake counts the leases it
 * hands out and gets back. Preparing a cold generation is what the test says it is.
 */
import { cp, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { CacheTarget, Generation, Progress } from '../../../lib/cache/RepoCache.js';
import { GitBudget } from '../../../lib/git/GitBudget.js';
import { GitRunner } from '../../../lib/git/GitRunner.js';
import type { Logger } from '../../../lib/log.js';
import type { RefValue } from '../../../lib/protocol/refValue.js';
import type { FetchCache } from '../../../lib/transfer/answerFetch.js';
import type { LoadedIndex } from '../../../lib/wal/types.js';
import { gitOk, makeHome, workRepo } from '../../helpers/gitClient.js';

export interface Fixture {
  /** A bare repository with two commits on main, its refs packed (as a generation's are). */
  readonly bare: string;
  readonly main: string;
  readonly home: string;
}

export async function fixture(): Promise<Fixture> {
  const home = await makeHome();
  const work = await workRepo(home, 2);
  const bare = join(await mkdtemp(join(tmpdir(), 'narwal-transfer-')), 'generation.git');
  await gitOk(['clone', '-q', '--bare', work, bare], { home });
  await gitOk(['pack-refs', '--all'], { cwd: bare, home });
  const main = (await gitOk(['rev-parse', 'refs/heads/main'], { cwd: bare, home })).trim();
  await rm(work, { recursive: true, force: true });
  return { bare, main, home };
}

/** A copy of the fixture's repository, for a test that changes it. */
export async function copyOf(f: Fixture): Promise<string> {
  const dir = join(await mkdtemp(join(tmpdir(), 'narwal-transfer-')), 'generation.git');
  await cp(f.bare, dir, { recursive: true });
  return dir;
}

/** git with `slots` process slots; with none, any git process the code tries to start is refused. */
export function gitWith(home: string, slots = 8): GitRunner {
  return new GitRunner({ budget: new GitBudget(slots, 0), home });
}

export class FakeCache implements FetchCache {
  readonly #dir: string;
  readonly #refs: ReadonlyMap<string, RefValue>;
  #complete: boolean;
  /** What completing a cold generation does: by default, nothing. */
  prepare: (progress: Progress) => Promise<void> = async () => {};
  leased = 0;
  released = 0;
  completed = 0;

  constructor(dir: string, options: { complete: boolean; refs?: ReadonlyMap<string, RefValue> }) {
    this.#dir = dir;
    this.#complete = options.complete;
    this.#refs = options.refs ?? new Map();
  }

  /** Leases handed out and not given back. */
  get held(): number {
    return this.leased - this.released;
  }

  target(loaded: LoadedIndex): CacheTarget {
    const refs = this.#refs;
    return {
      repo: loaded.index.repo,
      created: loaded.index.created,
      seq: loaded.index.seq,
      head: loaded.index.head,
      name: `g${loaded.index.seq}`,
      checkpoint: null,
      refs: async () => refs,
      itemsAfter: async () => [],
    };
  }

  async targetAt(loaded: LoadedIndex, seq: number): Promise<CacheTarget> {
    return { ...this.target(loaded), seq, name: `p${seq}` };
  }

  async isComplete(): Promise<boolean> {
    return this.#complete;
  }

  async leaseRefs(): Promise<Generation> {
    return this.#lease();
  }

  async leaseComplete(_target: CacheTarget, progress?: Progress): Promise<Generation> {
    if (!this.#complete) {
      await this.prepare(progress ?? (() => {}));
      this.#complete = true;
      this.completed++;
    }
    return this.#lease();
  }

  #lease(): Generation {
    this.leased++;
    let given = false;
    return {
      dir: this.#dir,
      name: 'g',
      objects: join(this.#dir, 'objects'),
      release: async () => {
        if (!given) this.released++;
        given = true;
      },
    };
  }
}

/** An index as the HTTP layer hands it to a transfer. */
export function loadedIndex(seq = 2): LoadedIndex {
  return {
    etag: `"e${seq}"`,
    index: {
      v: 2,
      repo: 'team/app',
      created: '2026-12-04T00:00:00.000Z',
      seq,
      head: 'refs/heads/main',
      public: false,
      tables: [],
      recent: [],
      paged: 0,
      pagedCheckpoint: null,
      tail: [],
      checkpoint: null,
    },
  };
}

export interface Logged {
  readonly level: string;
  readonly message: string;
  readonly fields: Record<string, unknown> | undefined;
}

export function recordingLogger(): Logger & { readonly lines: Logged[] } {
  const lines: Logged[] = [];
  return {
    lines,
    info: (message, fields) => lines.push({ level: 'info', message, fields }),
    warn: (message, fields) => lines.push({ level: 'warn', message, fields }),
    error: (message, fields) => lines.push({ level: 'error', message, fields }),
  };
}
