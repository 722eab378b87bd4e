/**
 * The questions a log is for, answered the same way for the CLI, the JSON API and the monitor
 * pages: what happened (log, entry, who moved a ref), what the refs were after any entry, what
 * changed between two entries, and going back (rewind, published as a new entry through the
 * same CAS as a push).
 */
import type { RepoCache } from '../cache/RepoCache.js';
import type { GitRunner } from '../git/GitRunner.js';
import type { RefValue } from '../protocol/refValue.js';
import { RepoNotFound } from '../wal/errors.js';
import type { Publisher, RefOutcome } from '../wal/Publisher.js';
import { checkSeq, fullUpdates, itemAt, refsAt } from '../wal/stateAt.js';
import type { Identity, LoadedIndex, LogItem, RepoIndex } from '../wal/types.js';
import type { Wal } from '../wal/Wal.js';
import { commitsBetween, type MoveDetail } from './commitsBetween.js';
import { diffStates, type StateDiff } from './diffStates.js';
import { type LogSlice, logPage } from './logPage.js';
import { planRewind, type RewindPlan } from './planRewind.js';
import { type RefMove, refMoves } from './refMoves.js';

export interface HistoryDeps {
  readonly wal: Wal;
  readonly publisher: Publisher;
  /** For diffs with commits; without them a diff lists refs only. */
  readonly cache?: RepoCache;
  readonly git?: GitRunner;
  readonly afterPublish?: (repo: string, loaded: LoadedIndex) => void;
}

export interface Diff extends StateDiff {
  readonly from: number;
  readonly to: number;
  /** Commits between old and new for moved refs (the first MAX_DETAILED_MOVES), when git is at hand. */
  readonly details: readonly MoveDetail[];
}

export interface RewindResult {
  readonly plan: RewindPlan;
  /** Null for a dry run, or when there was nothing to change. */
  readonly seq: number | null;
  readonly outcomes: readonly RefOutcome[];
}

/** A rewind preview no longer matches the log: it moved since. */
export class StalePreview extends Error {
  readonly code = 'StalePreview';
  constructor(
    readonly expected: number,
    readonly actual: number,
  ) {
    super(
      `the log moved since the preview (entry ${expected} then, ${actual} now): preview the rewind again`,
    );
  }
}

export class History {
  readonly #deps: HistoryDeps;

  constructor(deps: HistoryDeps) {
    this.#deps = deps;
  }

  /** The current index; throws RepoNotFound. */
  async load(repo: string): Promise<LoadedIndex> {
    const loaded = await this.#deps.wal.readIndex(repo);
    if (loaded === null) throw new RepoNotFound(repo);
    return loaded;
  }

  log(index: RepoIndex, options: { before?: number; limit?: number } = {}): Promise<LogSlice> {
    return logPage(this.#deps.wal, index, options);
  }

  /** One entry with every one of its updates. */
  async entry(index: RepoIndex, seq: number): Promise<LogItem> {
    const item = await itemAt(this.#deps.wal, index, seq);
    const updates = await fullUpdates(this.#deps.wal, item);
    return updates === item.updates ? item : { ...item, updates };
  }

  state(index: RepoIndex, seq: number): Promise<Map<string, RefValue>> {
    return refsAt(this.#deps.wal, index, seq);
  }

  who(index: RepoIndex, ref: string): Promise<RefMove[]> {
    return refMoves(this.#deps.wal, index, ref);
  }

  async diff(loaded: LoadedIndex, from: number, to: number): Promise<Diff> {
    const { index } = loaded;
    checkSeq(index, from);
    checkSeq(index, to);
    const [a, b] = await Promise.all([this.state(index, from), this.state(index, to)]);
    const changes = diffStates(a, b);
    const { cache, git } = this.#deps;
    if (changes.moved.length === 0 || cache === undefined || git === undefined)
      return { from, to, ...changes, details: [] };
    // Every object the log ever published is in the object store of a complete generation.
    const generation = await cache.leaseComplete(cache.target(loaded));
    try {
      return { from, to, ...changes, details: await commitsBetween(git, generation.dir, changes.moved) };
    } finally {
      await generation.release();
    }
  }

  /**
   * Restores the refs of entry `to` (all, or those `refs` matches) as a new entry. With `expect`,
   * refuses when the log is no longer at that entry (a preview is confirmed only as shown).
   */
  async rewind(
    repo: string,
    to: number,
    options: { refs?: string; dryRun?: boolean; expect?: number; who: Identity },
  ): Promise<RewindResult> {
    const loaded = await this.load(repo);
    if (options.expect !== undefined && options.expect !== loaded.index.seq)
      throw new StalePreview(options.expect, loaded.index.seq);
    const plan = await planRewind(this.#deps.wal, loaded.index, to, options.refs);
    if (options.dryRun || plan.commands.length === 0) return { plan, seq: null, outcomes: [] };
    const result = await this.#deps.publisher.publish({
      repo,
      commands: plan.commands,
      atomic: true,
      who: options.who,
      packs: [],
      rewind: { to, ...(options.refs !== undefined ? { refs: options.refs } : {}) },
    });
    if (result.seq !== null) this.#deps.afterPublish?.(repo, result.loaded);
    return { plan, seq: result.seq, outcomes: result.outcomes };
  }
}
