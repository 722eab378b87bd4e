/**
 * Each narwal process (a `narwal serve` node, a pool instance, a Lambda sandbox) is a node with a
 * scratch directory of its own under `<cache>/nodes/`: pushes are received there and checkpoints
 * repacked there. It lives on the shared cache, not on local disk, because what is received there
 * is hard-linked into the cache's object stores (and checkpoints link the cache's packs in): a
 * link cannot cross file systems, and copying a push or a whole repository instead would cost
 * what the links save.
 *
 * Nodes sharing the cache share no process ids, memory or timers: a Lambda sandbox and a pool
 * container each have a PID namespace of their own (where `kill(pid, 0)` says nothing about
 * another's processes, and node may be PID 1), and Lambda freezes a sandbox between invocations
 * for as long as it likes. So liveness is a record with an expiry, not a pid: `alive` in the
 * directory says until when its node vouches for it, and the node rewrites it every third of
 * `ttlMs` while it runs. Anyone may remove a directory whose record has expired (by more than a
 * margin for clocks that disagree), and every node does so at start-up and in its periodic sweep.
 *
 * An identity that has expired is never brought back: a node that was frozen (or stalled, or cut
 * off) past its expiry can no longer know whether a sweep has judged its directory, so it claims
 * a new directory under a new name for its next use and leaves the old one to the sweepers. It
 * learns this from the clock when it is about to use the directory, never from a renewal timer
 * having run: timers do not run in a frozen sandbox, and after a thaw they fire late, all at once.
 * A directory that disappeared while its identity is still live (the cache deleted by hand) is
 * simply made again. Work that was in flight in a node frozen past its expiry may fail; nothing
 * in the directory is ever the only copy of anything acknowledged (docs/architecture.md invariant 1).
 */
import { randomBytes } from 'node:crypto';
import { mkdir, readdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join } from 'node:path';

/** The record of liveness inside a node's directory. */
export const ALIVE = 'alive';

/**
 * A directory is removed only once its record has been expired this long by the sweeper's clock:
 * room for nodes whose clocks disagree (EFS clients on NTP differ by far less).
 */
export const CLOCK_MARGIN_MS = 5_000;

export interface NodeDirOptions {
  readonly cacheRoot: string;
  /** How long a record vouches for its directory without being rewritten. */
  readonly ttlMs: number;
  /** Milliseconds since the epoch; every expiry is stamped and checked with it. */
  readonly now: () => number;
}

export interface NodeDir {
  /** This process's name: the prefix of each of its directories' names. Never reused. */
  readonly id: string;
  /**
   * The node's scratch directory, ready to use: under an identity that is live by the clock now
   * (claimed afresh when the last one expired), and made again if it has gone.
   */
  scratch(): Promise<string>;
  /** Removes directories of nodes whose records have expired; answers how many. */
  sweep(): Promise<number>;
  /** Stops renewing and removes every directory this process has had. */
  remove(): Promise<void>;
}

interface Identity {
  readonly dir: string;
  /** When its record expires, as last written. */
  expiresAt: number;
  /** Set once the clock passed `expiresAt` before a renewal landed: never used again. */
  lapsed: boolean;
}

export async function claimNodeDir(options: NodeDirOptions): Promise<NodeDir> {
  const nodes = join(options.cacheRoot, 'nodes');
  const node = new NodeDirs(nodes, options);
  await whileVanishing(() => mkdir(nodes, { recursive: true }));
  await node.sweep();
  await node.scratch();
  return node;
}

/**
 * Runs `work` again when a directory it makes or writes into vanished under it (ENOENT): the
 * shared cache may be deleted at any moment, and mkdir's own recursion does not survive a parent
 * deleted between its steps. A few attempts; a cache that keeps vanishing is an error.
 */
async function whileVanishing<T>(work: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await work();
    } catch (error) {
      if (attempt >= VANISH_ATTEMPTS || (error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    }
  }
}

const VANISH_ATTEMPTS = 20;

class NodeDirs implements NodeDir {
  readonly id = `n${randomBytes(6).toString('hex')}`;
  readonly #nodes: string;
  readonly #ttlMs: number;
  readonly #now: () => number;
  readonly #timer: NodeJS.Timeout;
  /** Every directory this process has had, the current one last. */
  readonly #identities: Identity[] = [];
  /** Claims and renewals one at a time: two requests must not claim two directories. */
  #turn: Promise<unknown> = Promise.resolve();

  constructor(nodes: string, options: NodeDirOptions) {
    this.#nodes = nodes;
    this.#ttlMs = options.ttlMs;
    this.#now = options.now;
    this.#timer = setInterval(
      () => void this.#serial(() => this.#renew()).catch(() => {}),
      Math.max(100, Math.floor(options.ttlMs / 3)),
    );
    this.#timer.unref();
  }

  async scratch(): Promise<string> {
    // The timer keeps two thirds of the period ahead; less means it has not run (a frozen or
    // stalled process): renew now, before anything is put in the directory.
    const fresh = (identity: Identity | null): identity is Identity =>
      identity !== null && identity.expiresAt - this.#now() >= this.#ttlMs / 3;
    const known = this.#current();
    const current = fresh(known)
      ? known
      : await this.#serial(async () => {
          if (!fresh(this.#current())) await this.#renew();
          return this.#current() ?? (await this.#claim());
        });
    const push = join(current.dir, 'push');
    // Made again if it has gone (the cache deleted under a running node), with its record.
    await whileVanishing(async () => {
      if ((await mkdir(push, { recursive: true })) !== undefined) await this.#writeRecord(current);
    });
    return push;
  }

  sweep(): Promise<number> {
    return sweepNodeDirs(this.#nodes, {
      ttlMs: this.#ttlMs,
      now: this.#now,
      keep: new Set(this.#identities.map((i) => i.dir)),
    });
  }

  async remove(): Promise<void> {
    clearInterval(this.#timer);
    await this.#turn.catch(() => {});
    await Promise.all(this.#identities.map((i) => rm(i.dir, { recursive: true, force: true })));
  }

  #current(): Identity | null {
    const last = this.#identities[this.#identities.length - 1];
    return last === undefined || last.lapsed ? null : last;
  }

  async #claim(): Promise<Identity> {
    const identity: Identity = {
      dir: join(this.#nodes, `${this.id}-${this.#identities.length}`),
      expiresAt: this.#now() + this.#ttlMs,
      lapsed: false,
    };
    // The record is written before anything else is put in the directory.
    await this.#writeRecord(identity);
    this.#identities.push(identity);
    return identity;
  }

  /**
   * Moves the expiry of the current identity forward, unless it has passed: then the identity is
   * lapsed for good. The clock is read again after the write, because a process frozen between
   * the check and the write would otherwise revive a record a sweeper has already judged.
   */
  async #renew(): Promise<void> {
    const current = this.#current();
    if (current === null) return;
    const before = this.#now();
    if (before >= current.expiresAt) {
      current.lapsed = true;
      return;
    }
    const next = before + this.#ttlMs;
    const written = await this.#writeRecord({ ...current, expiresAt: next }).then(
      () => true,
      () => false,
    );
    if (this.#now() >= current.expiresAt) current.lapsed = true;
    else if (written) current.expiresAt = next;
  }

  /** Rewrites `alive` whole (rename), so a sweeper never reads half a record. */
  async #writeRecord(identity: Identity): Promise<void> {
    const record = { expiresAt: identity.expiresAt, host: hostname(), pid: process.pid };
    await whileVanishing(async () => {
      await mkdir(identity.dir, { recursive: true });
      const temp = join(identity.dir, `.${ALIVE}.${randomBytes(4).toString('hex')}`);
      try {
        await writeFile(temp, JSON.stringify(record));
        await rename(temp, join(identity.dir, ALIVE));
      } finally {
        await rm(temp, { force: true });
      }
    });
  }

  #serial<T>(work: () => Promise<T>): Promise<T> {
    const result = this.#turn.then(work, work);
    this.#turn = result.catch(() => {});
    return result;
  }
}

/**
 * Removes every directory under `nodes` whose record expired more than CLOCK_MARGIN_MS ago,
 * except those in `keep`. A directory without a readable record (one being made, one from an
 * older version) counts from its own modification time. Each is renamed away before it is
 * deleted, so two sweepers never delete into each other and its node, should it thaw, finds it
 * gone rather than half deleted.
 */
export async function sweepNodeDirs(
  nodes: string,
  options: { ttlMs: number; now: () => number; keep?: ReadonlySet<string> },
): Promise<number> {
  let removed = 0;
  const names = await readdir(nodes).catch(() => [] as string[]);
  for (const name of names) {
    const dir = join(nodes, name);
    if (options.keep?.has(dir)) continue;
    if (name.startsWith('.trash-')) {
      // Left by a sweeper that died while deleting.
      if (options.now() - (await modified(dir)) > options.ttlMs + CLOCK_MARGIN_MS)
        await rm(dir, { recursive: true, force: true });
      continue;
    }
    if (options.now() <= (await expiryOf(dir, options.ttlMs)) + CLOCK_MARGIN_MS) continue;
    const trash = join(nodes, `.trash-${randomBytes(6).toString('hex')}`);
    try {
      await rename(dir, trash);
    } catch {
      continue; // another sweeper took it
    }
    await rm(trash, { recursive: true, force: true });
    removed++;
  }
  return removed;
}

async function expiryOf(dir: string, ttlMs: number): Promise<number> {
  try {
    const record = JSON.parse(await readFile(join(dir, ALIVE), 'utf8')) as { expiresAt?: unknown };
    if (typeof record.expiresAt === 'number') return record.expiresAt;
  } catch {
    // No record yet, or not ours to read: the directory's age decides.
  }
  return (await modified(dir)) + ttlMs;
}

async function modified(path: string): Promise<number> {
  return (await stat(path).catch(() => null))?.mtimeMs ?? 0;
}
