/**
 * Publishing pushes: the only writer of `index.json`.
 *
 * Pushes to one repository from this process are group-committed: whoever is waiting when a CAS
 * finishes goes into the next one, each as its own entry with consecutive sequence numbers. So
 * concurrent pushes on one node cost one index write, and only nodes race each other.
 *
 * On a lost race (412 PreconditionFailed) or a colliding write (409 ConditionalConflict) the
 * publisher re-reads the index and re-checks only the refs of the pushes in hand: distinct refs
 * never conflict. An error on the CAS itself is "outcome unknown": the index is re-read to learn
 * whether the entries landed before anything is retried (DESIGN.md, invariant 4).
 */
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { pushRefNameProblem } from '../protocol/refName.js';
import { isStoreError } from '../store/errors.js';
import { DEFAULT_FOLD_POLICY, type FoldPolicy, foldTail, needsFold } from './fold.js';
import { encodeJson, sha256 } from './indexCodec.js';
import { entryKey, indexKey } from './keys.js';
import { putImmutable } from './putImmutable.js';
import type { EntryObject, Identity, LoadedIndex, LogItem, RefUpdate, RepoIndex } from './types.js';
import { ZERO_OID } from './types.js';
import type { Wal } from './Wal.js';

export interface PushCommand {
  readonly ref: string;
  readonly oldOid: string;
  readonly newOid: string;
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
   * names them waits for it (DESIGN.md invariant 1). A push whose upload failed is rejected alone.
   */
  readonly stored?: Promise<void>;
  /**
   * A change to the index that is not a ref update (a checkpoint pointer), applied in the same
   * CAS as the pushes it is batched with. Must be a pure function of the index it is given.
   */
  readonly amend?: (index: RepoIndex) => RepoIndex;
}

export type RefOutcome =
  | { readonly ref: string; readonly ok: true; readonly noop: boolean }
  | { readonly ref: string; readonly ok: false; readonly reason: string };

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
  readonly fold: FoldPolicy;
  readonly now: () => Date;
  readonly random: () => number;
}

export const DEFAULT_PUBLISHER_OPTIONS: PublisherOptions = {
  maxAttempts: 16,
  backoffBaseMs: 5,
  backoffCapMs: 400,
  fold: DEFAULT_FOLD_POLICY,
  now: () => new Date(),
  random: Math.random,
};

export class RepoNotFound extends Error {
  readonly code = 'RepoNotFound';
  constructor(readonly repo: string) {
    super(`repository ${repo} does not exist`);
  }
}

/** A CAS answered with an error and the index could not be read back: the push may or may not have landed. */
export class OutcomeUnknown extends Error {
  readonly code = 'OutcomeUnknown';
  constructor(
    readonly repo: string,
    options?: { cause?: unknown },
  ) {
    super(`the outcome of a push to ${repo} is unknown`, options);
  }
}

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
}

export class Publisher {
  readonly #wal: Wal;
  readonly #options: PublisherOptions;
  readonly #queues = new Map<string, Pending[]>();

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

  async #commit(repo: string, arrived: Pending[]): Promise<void> {
    let batch = arrived;
    let loaded = this.#wal.knownIndex(repo);
    let fresh = false;
    // Entry objects already written in this commit, so a retried CAS does not rewrite them.
    const written = new Set<string>();
    for (let attempt = 0; attempt < this.#options.maxAttempts; ) {
      if (loaded === undefined) {
        loaded = (await this.#wal.readIndexFully(repo)) ?? undefined;
        if (loaded === undefined) throw new RepoNotFound(repo);
        fresh = true;
      }
      const { decisions, head } = await this.#decide(loaded.index, batch);
      // Refuse a ref only on a freshly read index: a stale guess may only lead to a failed CAS.
      if (!fresh && decisions.some((d) => d.outcomes.some((o) => !o.ok))) {
        loaded = undefined;
        continue;
      }
      const publishing = decisions.filter((d) => d.updates.length > 0);
      const amends = batch.flatMap((p) => (p.job.amend ? [p.job.amend] : []));
      if (publishing.length === 0 && amends.length === 0) {
        // No CAS will vouch for these answers, so they must come from a freshly read index.
        if (!fresh) {
          loaded = undefined;
          continue;
        }
        for (const d of decisions) d.pending.resolve({ outcomes: d.outcomes, seq: null, loaded });
        return;
      }
      const [items, uploads] = await Promise.all([
        this.#writeEntries(loaded.index, publishing, written),
        Promise.allSettled(publishing.map((d) => d.pending.job.stored)),
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
        batch = batch.filter((p) => !failed.has(p));
        if (batch.length === 0) return;
        continue;
      }
      let next = appendItems(loaded.index, items, head);
      for (const amend of amends) next = amend(next);
      if (needsFold(next, this.#options.fold)) next = await foldTail(this.#wal, this.#wal.store, next);
      attempt++;
      try {
        const { etag } = await this.#wal.store.put(indexKey(repo), encodeJson(next), {
          ifMatch: loaded.etag,
          contentType: 'application/json',
        });
        const landed = { index: next, etag };
        this.#wal.remember(repo, landed);
        this.#settle(decisions, items, landed);
        return;
      } catch (error) {
        if (isStoreError(error, 'PreconditionFailed') || isStoreError(error, 'ConditionalConflict')) {
          await this.#backoff(attempt);
          loaded = undefined;
          continue;
        }
        if (!isStoreError(error, 'StoreUnavailable')) throw error;
        // Outcome unknown: learn from the index whether our entries are in it.
        loaded =
          (await this.#readAfterUnknown(repo).catch((cause: unknown) => {
            throw new OutcomeUnknown(repo, { cause });
          })) ?? undefined;
        if (loaded === undefined) throw new RepoNotFound(repo);
        fresh = true;
        if (await this.#contains(loaded.index, items)) {
          this.#settle(decisions, items, loaded);
          return;
        }
        await this.#backoff(attempt);
      }
    }
    const busy = `narwal: busy: too many concurrent pushes to ${repo}; retry the push in a moment`;
    for (const p of batch) {
      const outcomes = p.job.commands.map((c): RefOutcome => ({ ref: c.ref, ok: false, reason: busy }));
      p.resolve({
        outcomes,
        seq: null,
        loaded: loaded ?? (await this.#wal.readIndexFully(repo)) ?? missing(repo),
      });
    }
  }

  /** Applies each push's commands in order against the index, as git applies them to its refs. */
  async #decide(index: RepoIndex, batch: Pending[]): Promise<{ decisions: Decision[]; head: string }> {
    const names = new Set(batch.flatMap((p) => p.job.commands.map((c) => c.ref)));
    names.add(index.head);
    const refs = await this.#wal.resolveRefs(index, names);
    const decisions = batch.map((pending): Decision => {
      const outcomes: RefOutcome[] = [];
      const updates: RefUpdate[] = [];
      for (const c of pending.job.commands) {
        const problem = pushRefNameProblem(c.ref);
        const current = refs.get(c.ref) ?? ZERO_OID;
        if (problem !== undefined)
          outcomes.push({ ref: c.ref, ok: false, reason: `funny refname: ${problem}` });
        else if (current === c.newOid) outcomes.push({ ref: c.ref, ok: true, noop: true });
        else if (current !== c.oldOid) outcomes.push({ ref: c.ref, ok: false, reason: 'fetch first' });
        else {
          outcomes.push({ ref: c.ref, ok: true, noop: false });
          updates.push({ ref: c.ref, old: current, new: c.newOid });
        }
      }
      if (pending.job.atomic && outcomes.some((o) => !o.ok)) {
        const failed = outcomes.map(
          (o): RefOutcome => (o.ok ? { ref: o.ref, ok: false, reason: 'atomic push failure' } : o),
        );
        return { pending, outcomes: failed, updates: [] };
      }
      for (const u of updates) refs.set(u.ref, u.new);
      return { pending, outcomes, updates };
    });
    return { decisions, head: chooseHead(index.head, refs, decisions) };
  }

  async #writeEntries(index: RepoIndex, publishing: Decision[], written: Set<string>): Promise<LogItem[]> {
    return Promise.all(
      publishing.map(async (d, i): Promise<LogItem> => {
        const entry: EntryObject = {
          v: 1,
          id: d.pending.id,
          kind: 'push',
          time: d.pending.time,
          who: d.pending.job.who,
          updates: d.updates,
          packs: d.pending.job.packs,
          ...(d.pending.job.bytes ? { bytes: d.pending.job.bytes } : {}),
          atomic: d.pending.job.atomic,
        };
        const body = encodeJson(entry);
        const key = entryKey(index.repo, sha256(body));
        if (!written.has(key)) {
          await putImmutable(this.#wal.store, key, body);
          written.add(key);
        }
        return {
          seq: index.seq + i + 1,
          key,
          time: entry.time,
          who: entry.who,
          updates: entry.updates,
          packs: entry.packs,
          ...(entry.bytes ? { bytes: entry.bytes } : {}),
          ...(entry.atomic ? { atomic: true as const } : {}),
        };
      }),
    );
  }

  #settle(decisions: Decision[], items: LogItem[], landed: LoadedIndex): void {
    const seqOf = new Map(items.map((item) => [item.key, item.seq]));
    let i = 0;
    for (const d of decisions) {
      const item = d.updates.length > 0 ? items[i++] : undefined;
      d.pending.resolve({
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

  /** Whether all of `items` were published, found in the tail or, after a fold, in a segment. */
  async #contains(index: RepoIndex, items: LogItem[]): Promise<boolean> {
    const first = items[0];
    if (first === undefined || index.seq < first.seq) return false;
    const published = await this.#wal.itemsAfter(index, first.seq - 1);
    const keys = new Set(published.filter((p) => p.seq <= first.seq + items.length - 1).map((p) => p.key));
    return items.every((item) => keys.has(item.key));
  }

  async #backoff(attempt: number): Promise<void> {
    const ceiling = Math.min(this.#options.backoffCapMs, this.#options.backoffBaseMs * 2 ** attempt);
    await sleep(Math.round(this.#options.random() * ceiling));
  }
}

function appendItems(index: RepoIndex, items: LogItem[], head: string): RepoIndex {
  const last = items[items.length - 1];
  return { ...index, seq: last ? last.seq : index.seq, head, tail: [...index.tail, ...items] };
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
