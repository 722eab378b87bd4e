/**
 * Publishing pushes: the only one that advances `index.json` (its CAS is Wal#swapIndex).
 *
 * Pushes to one repository from this process are group-committed: whoever is waiting when a CAS
 * finishes goes into the next one, each as its own entry with consecutive sequence numbers. So
 * concurrent pushes on one node cost one index write, and only nodes race each other.
 *
 * On a lost race (412 PreconditionFailed) or a colliding write (409 ConditionalConflict) the
 * publisher re-reads the index and re-checks only the refs of the pushes in hand: distinct refs
 * never conflict. An error on the CAS itself is "outcome unknown": the index is re-read to learn
 * whether the entries landed before anything is retried (docs/architecture.md invariant 4).
 *
 * A repository on which this process lost a race moments ago is contended (other nodes push to
 * it too): there every CAS goes out with a read of the index beside it, so that a lost race
 * already holds the index that won and retries after one round trip instead of two. Elsewhere a
 * push costs no extra read.
 */
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  applyProtectionChange,
  type ProtectionChange,
  type ProtectionRule,
  protectionProblem,
  sameRules,
} from '../policy/protectionRules.js';
import { pushRefNameProblem } from '../protocol/refName.js';
import { type RefValue, ZERO_OID } from '../protocol/refValue.js';
import { isStoreError } from '../store/errors.js';
import { Busy } from '../util/Busy.js';
import { boundIndex, DEFAULT_INDEX_POLICY, type IndexPolicy, withCheckpointTable } from './boundIndex.js';
import { OutcomeUnknown, RepoNotFound } from './errors.js';
import { encodeJson, sha256 } from './indexCodec.js';
import { entryKey } from './keys.js';
import { putImmutable } from './putImmutable.js';
import { applyChanges } from './refRows.js';
import type {
  CheckpointPointer,
  EntryKind,
  EntryObject,
  Identity,
  LoadedIndex,
  LogItem,
  RefUpdate,
  RepoIndex,
  RewindInfo,
} from './types.js';
import { MAX_ITEM_UPDATES } from './types.js';
import type { Wal } from './Wal.js';

export interface PushCommand {
  readonly ref: string;
  readonly oldOid: string;
  readonly newOid: string;
  /** When `newOid` is an annotated tag: the object it peels to. */
  readonly peeled?: string;
  /**
   * Whether `newOid` contains `oldOid` (computed by git before publishing). It stays true for the
   * update the CAS records, because the CAS also requires the ref to still hold `oldOid`.
   */
  readonly fastForward?: boolean;
}

export interface PushJob {
  readonly repo: string;
  readonly commands: readonly PushCommand[];
  readonly atomic: boolean;
  readonly who: Identity;
  /** Names of packs already stored under `packs/` for this push. */
  readonly packs: readonly string[];
  /** Their total size, recorded so checkpoints can be made every so many bytes. */
  readonly bytes?: number;
  /**
   * Settles when the packs are stored. The entry is written meanwhile, in parallel; the CAS that
   * names them waits for it (docs/architecture.md invariant 1). A push whose upload failed is rejected alone.
   */
  readonly stored?: Promise<void>;
  /** A rewind is a push made by narwal that restores the refs of an earlier entry. */
  readonly rewind?: RewindInfo;
  /**
   * A checkpoint entry (no commands): published as an entry of its own, and its pointer and
   * complete table enter the index in the same CAS, unless a newer checkpoint is there already.
   */
  readonly checkpoint?: CheckpointPointer;
  /**
   * A protect entry (no commands): this change is applied to the rules of the index the CAS is
   * made against, and the resulting rule set enters the index and the entry.
   */
  readonly protection?: ProtectionChange;
  /** A change of the repository's state beside its refs (no commands): see StateChange. */
  readonly change?: StateChange;
  /**
   * The Git LFS objects this push's packs point at, once they were looked for (none: an empty
   * list): the entry records them, so the orphan sweep keeps those objects (sweepOrphans.ts).
   */
  readonly lfs?: readonly string[];
}

/**
 * A change of what the index holds beside refs and rules (Git LFS locks, settings), decided
 * against the index the CAS is made against, as a protect job is: so of two racing changes the
 * second is decided knowing the first, and the log records each with who made it.
 */
export interface StateChange {
  readonly kind: Extract<EntryKind, 'lock' | 'settings'>;
  /**
   * What the change makes of `index` (as the jobs before it in the batch left it); null when it
   * changes nothing. Throws to refuse the change: the publish rejects with that error. May read
   * the store; writes nothing (the publisher writes `objects` before the CAS that names them).
   */
  decide(index: RepoIndex): Promise<StateDecision | null>;
}

export interface StateDecision {
  /** The index fields the change sets (a field set to undefined is removed). */
  readonly index: Partial<Pick<RepoIndex, 'lfsLocks' | 'settings'>>;
  /** What the entry, and its log item, record about the change. */
  readonly entry: Pick<EntryObject, 'lock' | 'settings'>;
  /** Immutable objects the new index names, written create-only before the CAS. */
  readonly objects: readonly { readonly key: string; readonly body: Buffer }[];
}

export type RefOutcome =
  | { readonly ref: string; readonly ok: true; readonly noop: boolean }
  | { readonly ref: string; readonly ok: false; readonly reason: string };

/** One command against the ref's current value, as git's receive-pack would decide it. */
export function decideCommand(c: PushCommand, current: string): RefOutcome {
  const problem = pushRefNameProblem(c.ref);
  if (problem !== undefined) return { ref: c.ref, ok: false, reason: `funny refname: ${problem}` };
  if (current === c.newOid) return { ref: c.ref, ok: true, noop: true };
  if (current !== c.oldOid) return { ref: c.ref, ok: false, reason: 'fetch first' };
  return { ref: c.ref, ok: true, noop: false };
}

/**
 * A push that names one ref twice is refused whole, whether atomic or not: its commands are
 * decided together against one index and reported by ref name, so a second command for a ref
 * could be reported against the first and an entry would record two updates of one ref. The
 * receive-pack request parser refuses such a push first; this keeps every other caller honest.
 */
export function refusedForDuplicates(commands: readonly PushCommand[]): RefOutcome[] | null {
  const seen = new Set<string>();
  const twice = commands.find((c) => seen.size === seen.add(c.ref).size);
  if (twice === undefined) return null;
  const reason = `the push names ${twice.ref} more than once; nothing was changed`;
  return commands.map((c): RefOutcome => ({ ref: c.ref, ok: false, reason }));
}

/** An atomic push with any refused command refuses all of them. */
function failAtomically(outcomes: readonly RefOutcome[]): RefOutcome[] {
  return outcomes.map(
    (o): RefOutcome => (o.ok ? { ref: o.ref, ok: false, reason: 'atomic push failure' } : o),
  );
}

/**
 * The outcomes of a push to a repository that does not exist yet, when it would change no ref
 * (so creating the repository for it would leave something visible for a refused push); null
 * when some ref would be created, and the repository must be.
 */
export function refusedOnEmptyRepo(commands: readonly PushCommand[], atomic: boolean): RefOutcome[] | null {
  const duplicates = refusedForDuplicates(commands);
  if (duplicates) return duplicates;
  const outcomes = commands.map((c) => decideCommand(c, ZERO_OID));
  const refused = atomic && outcomes.some((o) => !o.ok);
  if (!refused && outcomes.some((o) => o.ok && !o.noop)) return null;
  return refused ? failAtomically(outcomes) : outcomes;
}

export interface PublishResult {
  readonly outcomes: readonly RefOutcome[];
  /** The sequence number of this push's entry; null when it wrote none (no-op or refused). */
  readonly seq: number | null;
  /** The index right after this push's CAS (or the one it was checked against). */
  readonly loaded: LoadedIndex;
}

export interface PublisherOptions {
  readonly maxAttempts: number;
  readonly backoffBaseMs: number;
  readonly backoffCapMs: number;
  readonly policy: IndexPolicy;
  readonly now: () => Date;
  readonly random: () => number;
  /** Told after every CAS that published entries (never for one that failed). */
  readonly onPublished?: (repo: string, landed: LoadedIndex) => void;
}

/** How long after a lost race this process treats the repository as contended. */
const CONTENDED_MS = 10_000;

export const DEFAULT_PUBLISHER_OPTIONS: PublisherOptions = {
  maxAttempts: 16,
  backoffBaseMs: 5,
  backoffCapMs: 400,
  policy: DEFAULT_INDEX_POLICY,
  now: () => new Date(),
  random: Math.random,
};

interface Pending {
  readonly job: PushJob;
  /** Fixed when the push arrives, so its entry is the same object on every CAS attempt. */
  readonly id: string;
  readonly time: string;
  readonly resolve: (result: PublishResult) => void;
  readonly reject: (error: unknown) => void;
}

interface Decision {
  readonly pending: Pending;
  readonly outcomes: RefOutcome[];
  readonly updates: RefUpdate[];
  /** Whether this job writes an entry: it updates refs, or it is a checkpoint still news. */
  readonly publish: boolean;
  /** A protect job's resulting rule set, when it changes the rules. */
  readonly rules?: readonly ProtectionRule[];
  /** A protect job that cannot apply (its result breaks the bounds): rejected with this. */
  readonly failure?: Error;
  /** A state change's decision, when it changes something. */
  readonly state?: StateDecision;
}

/** The state of one commit across its attempts. */
interface Round {
  readonly repo: string;
  /** Every push this commit answers: the drain rejects them all if it throws. */
  readonly arrived: Pending[];
  /** The pushes still to decide (without those whose packs failed, with those that joined). */
  batch: Pending[];
  /** The index to decide against: known to this process, read now, or read beside a lost CAS. */
  loaded: LoadedIndex | undefined;
  /** Whether `loaded` was read during this commit: only such an index may refuse a ref. */
  fresh: boolean;
  /** Entry objects already written in this commit, so a retried CAS does not rewrite them. */
  readonly written: Set<string>;
}

/** What a CAS is ready to swap in: the index it is made against and the one it writes. */
interface Prepared {
  readonly base: LoadedIndex;
  readonly decisions: Decision[];
  readonly items: LogItem[];
  readonly next: RepoIndex;
}

export class Publisher {
  readonly #wal: Wal;
  readonly #options: PublisherOptions;
  readonly #queues = new Map<string, Pending[]>();
  /** When this process last lost a race per repository (see CONTENDED_MS). */
  readonly #lostAt = new Map<string, number>();

  constructor(wal: Wal, options: Partial<PublisherOptions> = {}) {
    this.#wal = wal;
    this.#options = { ...DEFAULT_PUBLISHER_OPTIONS, ...options };
  }

  publish(job: PushJob): Promise<PublishResult> {
    return new Promise((resolve, reject) => {
      const pending = { job, id: randomUUID(), time: this.#options.now().toISOString(), resolve, reject };
      const queue = this.#queues.get(job.repo);
      if (queue) {
        queue.push(pending);
        return;
      }
      this.#queues.set(job.repo, [pending]);
      void this.#drain(job.repo);
    });
  }

  async #drain(repo: string): Promise<void> {
    for (;;) {
      const queue = this.#queues.get(repo);
      if (!queue || queue.length === 0) {
        this.#queues.delete(repo);
        return;
      }
      const batch = queue.splice(0);
      try {
        await this.#commit(repo, batch);
      } catch (error) {
        for (const p of batch) p.reject(error);
      }
    }
  }

  /**
   * Publishes `arrived` in one CAS, in named steps: load the index to decide against, prepare
   * what the CAS will name (decide every push, write the entries and what keeps the index
   * bounded), swap the index; after a lost race or an unknown outcome the next attempt loads
   * again, and once the attempts are spent the pushes are given up as busy.
   */
  async #commit(repo: string, arrived: Pending[]): Promise<void> {
    const round: Round = {
      repo,
      arrived,
      batch: arrived,
      loaded: this.#wal.knownIndex(repo),
      fresh: false,
      written: new Set(),
    };
    for (let attempt = 0; attempt < this.#options.maxAttempts; ) {
      const loaded = await this.#load(round);
      const prepared = await this.#prepare(round, loaded);
      if (prepared === 'done') return;
      if (prepared === 'again') continue;
      attempt++;
      if (await this.#swap(round, prepared, attempt)) return;
    }
    await this.#giveUp(round);
  }

  /** The index to decide against: the one in hand, else read now (fresh). */
  async #load(round: Round): Promise<LoadedIndex> {
    if (round.loaded === undefined) {
      round.loaded = (await this.#wal.readIndexFully(round.repo)) ?? undefined;
      if (round.loaded === undefined) throw new RepoNotFound(round.repo);
      round.fresh = true;
    }
    return round.loaded;
  }

  /**
   * Decides the batch against `loaded` and writes everything the CAS will name. 'done' when the
   * batch is answered without a CAS (nothing to publish, or every push's packs failed), 'again'
   * when it must be decided again (on a fresh index, or without pushes whose packs failed).
   */
  async #prepare(round: Round, loaded: LoadedIndex): Promise<Prepared | 'done' | 'again'> {
    const { decisions, head } = await this.#decide(loaded.index, round.batch);
    // Refuse a ref only on a freshly read index: a stale guess may only lead to a failed CAS.
    if (!round.fresh && decisions.some((d) => d.failure !== undefined || d.outcomes.some((o) => !o.ok))) {
      round.loaded = undefined;
      return 'again';
    }
    const publishing = decisions.filter((d) => d.publish);
    if (publishing.length === 0) {
      // No CAS will vouch for these answers, so they must come from a freshly read index.
      if (!round.fresh) {
        round.loaded = undefined;
        return 'again';
      }
      for (const d of decisions) finish(d, { outcomes: d.outcomes, seq: null, loaded });
      return 'done';
    }
    const entries = entriesOf(loaded.index, publishing);
    const items = entries.map((e) => e.item);
    // The entries, the packs and whatever keeps the next index bounded (pages and chunks of
    // items published before, tables of ref rows) are all written at once, before the CAS:
    // none of them names another, so one round trip covers them all.
    const [, , uploads, next] = await Promise.all([
      this.#writeEntries(entries, round.written),
      this.#writeStateObjects(publishing, round.written),
      Promise.allSettled(publishing.map((d) => d.pending.job.stored)),
      boundIndex(
        this.#wal,
        this.#wal.store,
        loaded.index,
        appendItems(loaded.index, publishing, items, head),
        this.#options.policy,
      ),
    ]);
    const failed = new Set<Pending>();
    uploads.forEach((upload, i) => {
      const pending = publishing[i]?.pending;
      if (upload.status === 'rejected' && pending) {
        pending.reject(upload.reason);
        failed.add(pending);
      }
    });
    if (failed.size > 0) {
      // Decide again without them: the others' sequence numbers and refs may change.
      round.batch = round.batch.filter((p) => !failed.has(p));
      return round.batch.length === 0 ? 'done' : 'again';
    }
    return { base: loaded, decisions, items, next };
  }

  /**
   * The CAS of the index (docs/architecture.md invariant 1). True when the batch is settled: the
   * swap won, or its outcome was unknown and the index read back holds the entries. After a lost
   * race the round holds the index read beside the CAS, if any, and the pushes that arrived
   * meanwhile; after an unknown outcome, the index read back.
   */
  async #swap(round: Round, prepared: Prepared, attempt: number): Promise<boolean> {
    const { repo } = round;
    const { base, decisions, items, next } = prepared;
    const beside = this.#contended(repo) ? this.#wal.readIndex(repo).catch(() => null) : null;
    try {
      const landed = await this.#wal.swapIndex(repo, next, base.etag);
      this.#settle(decisions, items, landed);
      this.#options.onPublished?.(repo, landed);
      return true;
    } catch (error) {
      if (isStoreError(error, 'PreconditionFailed') || isStoreError(error, 'ConditionalConflict')) {
        this.#lostAt.set(repo, this.#now());
        const [seen] = await Promise.all([beside, this.#backoff(attempt)]);
        // The index read beside the CAS is fresh when it is not the one the CAS started from.
        round.loaded = seen && seen.etag !== base.etag ? seen : undefined;
        round.fresh = round.loaded !== undefined;
        // Pushes that arrived meanwhile join the retry: it decides them all against the index
        // that won, in one CAS, rather than leaving them to queue for another round of racing.
        const joined = this.#queues.get(repo)?.splice(0) ?? [];
        round.arrived.push(...joined);
        round.batch = [...round.batch, ...joined];
        return false;
      }
      if (!isStoreError(error, 'StoreUnavailable')) throw error;
      // Outcome unknown: learn from the index whether our entries are in it.
      round.loaded =
        (await this.#readAfterUnknown(repo).catch((cause: unknown) => {
          throw new OutcomeUnknown(repo, { cause });
        })) ?? undefined;
      if (round.loaded === undefined) throw new RepoNotFound(repo);
      round.fresh = true;
      if (await this.#contains(round.loaded.index, items)) {
        this.#settle(decisions, items, round.loaded);
        this.#options.onPublished?.(repo, round.loaded);
        return true;
      }
      await this.#backoff(attempt);
      return false;
    }
  }

  /** The attempts are spent: every push of the batch hears a retryable "busy". */
  async #giveUp(round: Round): Promise<void> {
    const { repo } = round;
    const busy = `narwal: busy: too many concurrent pushes to ${repo}; retry the push in a moment`;
    for (const p of round.batch) {
      if (p.job.protection || p.job.change) {
        // No ref to refuse: the caller of a rule change hears a retryable error instead.
        p.reject(new Busy(busy));
        continue;
      }
      const outcomes = p.job.commands.map((c): RefOutcome => ({ ref: c.ref, ok: false, reason: busy }));
      p.resolve({
        outcomes,
        seq: null,
        loaded: round.loaded ?? (await this.#wal.readIndexFully(repo)) ?? missing(repo),
      });
    }
  }

  /**
   * Applies each push's commands in order against the index, as git applies them to its refs,
   * under the protection rules in force at that point: the index's, as changed by the protect
   * jobs before it in the batch (their entries precede it in the log).
   */
  async #decide(index: RepoIndex, batch: Pending[]): Promise<{ decisions: Decision[]; head: string }> {
    const names = new Set(batch.flatMap((p) => p.job.commands.map((c) => c.ref)));
    names.add(index.head);
    const refs = await this.#wal.resolveRefs(index, names);
    let rules = index.protection;
    // The index as the state changes before each job in the batch left it.
    let current = index;
    const decideChange = async (pending: Pending, change: StateChange): Promise<Decision> => {
      try {
        const state = await change.decide(current);
        if (state === null) return { pending, outcomes: [], updates: [], publish: false };
        current = { ...current, ...state.index };
        return { pending, outcomes: [], updates: [], publish: true, state };
      } catch (error) {
        return { pending, outcomes: [], updates: [], publish: false, failure: error as Error };
      }
    };
    const decideJob = (pending: Pending): Decision => {
      const change = pending.job.protection;
      if (change !== undefined) {
        try {
          const next = applyProtectionChange(rules, change);
          if (sameRules(rules, next)) return { pending, outcomes: [], updates: [], publish: false };
          rules = next;
          return { pending, outcomes: [], updates: [], publish: true, rules: next };
        } catch (error) {
          return { pending, outcomes: [], updates: [], publish: false, failure: error as Error };
        }
      }
      const duplicates = refusedForDuplicates(pending.job.commands);
      if (duplicates) return { pending, outcomes: duplicates, updates: [], publish: false };
      const outcomes: RefOutcome[] = [];
      const updates: RefUpdate[] = [];
      for (const c of pending.job.commands) {
        const current = refs.get(c.ref) ?? ZERO_OID;
        const decided = decideCommand(c, current);
        const refused =
          decided.ok && !decided.noop
            ? protectionProblem(
                rules,
                { ref: c.ref, old: current, new: c.newOid, ...fastForwardOf(c) },
                pending.job.who,
              )
            : undefined;
        const outcome: RefOutcome =
          refused === undefined ? decided : { ref: c.ref, ok: false, reason: refused };
        outcomes.push(outcome);
        if (outcome.ok && !outcome.noop) {
          updates.push({
            ref: c.ref,
            old: current,
            new: c.newOid,
            ...(c.peeled && c.newOid !== ZERO_OID ? { peeled: c.peeled } : {}),
          });
        }
      }
      if (pending.job.atomic && outcomes.some((o) => !o.ok)) {
        return { pending, outcomes: failAtomically(outcomes), updates: [], publish: false };
      }
      for (const u of updates) refs.set(u.ref, u.new);
      const checkpoint = pending.job.checkpoint;
      const newsworthy = checkpoint !== undefined && (index.checkpoint?.seq ?? -1) < checkpoint.seq;
      return { pending, outcomes, updates, publish: updates.length > 0 || newsworthy };
    };
    const decisions: Decision[] = [];
    for (const pending of batch) {
      const change = pending.job.change;
      decisions.push(change ? await decideChange(pending, change) : decideJob(pending));
    }
    return { decisions, head: chooseHead(index.head, refs, decisions) };
  }

  /** Writes the objects state changes name (a retried CAS reuses those already written). */
  async #writeStateObjects(publishing: readonly Decision[], written: Set<string>): Promise<void> {
    await Promise.all(
      publishing.flatMap((d) =>
        (d.state?.objects ?? []).map(async ({ key, body }) => {
          if (written.has(key)) return;
          await putImmutable(this.#wal.store, key, body);
          written.add(key);
        }),
      ),
    );
  }

  /** Writes the entry objects not yet written in this commit (a retried CAS reuses them). */
  async #writeEntries(entries: readonly PreparedEntry[], written: Set<string>): Promise<void> {
    await Promise.all(
      entries.map(async ({ key, body, entry }) => {
        if (written.has(key)) return;
        await putImmutable(this.#wal.store, key, body);
        written.add(key);
        this.#wal.seed(key, entry);
      }),
    );
  }

  #settle(decisions: Decision[], items: LogItem[], landed: LoadedIndex): void {
    const seqOf = new Map(items.map((item) => [item.key, item.seq]));
    let i = 0;
    for (const d of decisions) {
      const item = d.publish ? items[i++] : undefined;
      finish(d, {
        outcomes: d.outcomes,
        seq: item ? (seqOf.get(item.key) ?? null) : null,
        loaded: landed,
      });
    }
  }

  async #readAfterUnknown(repo: string): Promise<LoadedIndex | null> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.#wal.readIndexFully(repo);
      } catch (error) {
        if (!isStoreError(error, 'StoreUnavailable') || attempt >= this.#options.maxAttempts) throw error;
        await this.#backoff(attempt);
      }
    }
  }

  /** Whether all of `items` were published, found in the tail or, once paged, in a page. */
  async #contains(index: RepoIndex, items: LogItem[]): Promise<boolean> {
    const first = items[0];
    if (first === undefined || index.seq < first.seq) return false;
    const published = await this.#wal.itemsAfter(index, first.seq - 1, first.seq + items.length - 1);
    const keys = new Set(published.map((p) => p.key));
    return items.every((item) => keys.has(item.key));
  }

  #contended(repo: string): boolean {
    const lost = this.#lostAt.get(repo);
    if (lost === undefined) return false;
    if (this.#now() - lost <= CONTENDED_MS) return true;
    this.#lostAt.delete(repo);
    return false;
  }

  /** The injected clock, in milliseconds. */
  #now(): number {
    return this.#options.now().getTime();
  }

  async #backoff(attempt: number): Promise<void> {
    const ceiling = Math.min(this.#options.backoffCapMs, this.#options.backoffBaseMs * 2 ** attempt);
    await sleep(Math.round(this.#options.random() * ceiling));
  }
}

/** The index after `items`: their summaries in the tail, their ref changes in the recent rows. */
function appendItems(index: RepoIndex, publishing: Decision[], items: LogItem[], head: string): RepoIndex {
  const last = items[items.length - 1];
  const changes = new Map<string, RefValue>();
  for (const d of publishing) {
    for (const u of d.updates)
      changes.set(u.ref, u.peeled ? { oid: u.new, peeled: u.peeled } : { oid: u.new });
  }
  let next: RepoIndex = {
    ...index,
    seq: last ? last.seq : index.seq,
    head,
    recent: changes.size > 0 ? applyChanges(index.recent, changes) : index.recent,
    tail: [...index.tail, ...items],
  };
  for (const d of publishing) {
    if (d.rules) next = { ...next, protection: d.rules };
    if (d.state) next = { ...next, ...d.state.index };
    const checkpoint = d.pending.job.checkpoint;
    if (checkpoint && (next.checkpoint?.seq ?? -1) < checkpoint.seq) {
      next = { ...withCheckpointTable(next, checkpoint), checkpoint };
    }
  }
  return next;
}

/** A protect job that could not apply is rejected; every other decision resolves. */
function finish(d: Decision, result: PublishResult): void {
  if (d.failure) d.pending.reject(d.failure);
  else d.pending.resolve(result);
}

interface PreparedEntry {
  readonly key: string;
  readonly body: Buffer;
  readonly entry: EntryObject;
  readonly item: LogItem;
}

/** The entry objects of the publishing decisions and their log items, as this CAS would number them. */
function entriesOf(index: RepoIndex, publishing: readonly Decision[]): PreparedEntry[] {
  return publishing.map((d, i): PreparedEntry => {
    const { job } = d.pending;
    const entry: EntryObject = {
      v: 1,
      id: d.pending.id,
      kind: job.change
        ? job.change.kind
        : job.checkpoint
          ? 'checkpoint'
          : job.protection
            ? 'protect'
            : job.rewind
              ? 'rewind'
              : 'push',
      time: d.pending.time,
      who: job.who,
      updates: d.updates,
      packs: job.packs,
      ...(job.bytes ? { bytes: job.bytes } : {}),
      atomic: job.atomic,
      ...(job.rewind ? { rewind: job.rewind } : {}),
      ...(job.checkpoint ? { checkpoint: job.checkpoint } : {}),
      ...(d.rules ? { protection: d.rules } : {}),
      ...(d.state?.entry ?? {}),
      ...(job.lfs !== undefined ? { lfs: job.lfs } : {}),
    };
    const body = encodeJson(entry);
    const key = entryKey(index.repo, sha256(body));
    return { key, body, entry, item: summarize(index.seq + i + 1, key, entry) };
  });
}

function fastForwardOf(c: PushCommand): { fastForward?: boolean } {
  return c.fastForward === undefined ? {} : { fastForward: c.fastForward };
}

/** A log item: the entry with at most MAX_ITEM_UPDATES of its updates. */
export function summarize(seq: number, key: string, entry: EntryObject): LogItem {
  const shown = entry.updates.slice(0, MAX_ITEM_UPDATES);
  return {
    seq,
    key,
    ...(entry.kind !== 'push' ? { kind: entry.kind } : {}),
    time: entry.time,
    who: entry.who,
    updates: shown,
    ...(shown.length < entry.updates.length ? { count: entry.updates.length } : {}),
    packs: entry.packs,
    ...(entry.bytes ? { bytes: entry.bytes } : {}),
    ...(entry.atomic ? { atomic: true as const } : {}),
    ...(entry.rewind ? { rewind: entry.rewind } : {}),
    ...(entry.checkpoint ? { checkpoint: entry.checkpoint } : {}),
    ...(entry.lock ? { lock: entry.lock } : {}),
    ...(entry.settings ? { settings: entry.settings } : {}),
    ...(entry.lfs !== undefined ? { lfs: entry.lfs.length } : {}),
  };
}

/**
 * HEAD keeps pointing where it points while that branch exists. When it names no existing branch,
 * the first branch this batch creates becomes HEAD (main or master preferred), as on other hosts.
 */
function chooseHead(
  current: string,
  refs: ReadonlyMap<string, string>,
  decisions: readonly Decision[],
): string {
  if ((refs.get(current) ?? ZERO_OID) !== ZERO_OID) return current;
  const created = decisions
    .flatMap((d) => d.updates)
    .filter((u) => u.ref.startsWith('refs/heads/') && u.new !== ZERO_OID && refs.get(u.ref) === u.new)
    .map((u) => u.ref);
  for (const preferred of [current, 'refs/heads/main', 'refs/heads/master']) {
    if (created.includes(preferred)) return preferred;
  }
  return created[0] ?? current;
}

function missing(repo: string): never {
  throw new RepoNotFound(repo);
}
