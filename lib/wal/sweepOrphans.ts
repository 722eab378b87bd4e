/**
 * The orphan sweep: deletes store objects under `repos/` that no index names and that are older
 * than a retention window (docs/architecture.md invariant 2).
 *
 * Orphans are what a push leaves when it stores its packs and entry (create-only, before the CAS)
 * and then never publishes them: a lost race it gave up on, a refusal after the upload, a node
 * killed between upload and CAS. Also tables that compaction or a checkpoint replaced, chunks of the
 * log that a full page replaced, and the objects of a checkpoint a newer one overtook.
 *
 * What an index names: itself; its ref tables; every page and chunk of its log and every item in
 * them and in its tail (entry objects and their packs, checkpoint pointers with their tables, packs and
 * bitmaps); its checkpoint pointers. An item is never removed from the log, so an object named once
 * stays named, with two exceptions: tables, which compaction replaces, and chunks, which a page
 * replaces (a reader still holding an older index is covered by the window, as for tables).
 *
 * Why the window makes this safe while pushes run:
 * - a push writes its objects before its CAS, so anything younger than the window is kept;
 * - a writer that finds an object already stored and older than REFRESH_AFTER_MS rewrites it before
 *   naming it (putImmutable), so an old orphan about to be named again is young again;
 * - pages and chunks are named by position: one whose items are all published is kept even before
 *   an index names it, since every writer writes the same object;
 * - a replaced table may be old while a reader that loaded the index before the replacement still
 *   reads it, so unnamed tables go only when every table the index names is older than the window
 *   (each change of the table stack installs a table written just before its CAS).
 * The window must therefore be longer than REFRESH_AFTER_MS plus the longest push or read; the
 * default is 24 hours.
 *
 * Git LFS objects (`lfs/objects/<sha256>`, immutable and create-only) are named by no index: a push
 * entry records the LFS oids its packs point at (`lfs`), and an object stays while any entry of the
 * log reaches it, which, since items are never removed, is for ever once a push named it. If the
 * log has a push whose packs were never looked at for pointers (from before narwal looked), every
 * LFS object of the repository is kept. An unreached one (uploaded, never pushed) goes once older
 * than the window; narwal renews an old object whenever it tells a client the object is there (an
 * upload it may skip, a push check), so one about to be named is young (lib/lfs/LfsObjects.ts).
 * Unfinished uploads (`lfs/incoming/`) go by age alone. Lock tables (`lfs/locks/`) are named by the
 * index and replaced by each lock entry, so an unnamed one goes only once the lock state has not
 * changed for a whole window: the named table, or with none the index itself, is older than it.
 */
import { isStoreError } from '../store/errors.js';
import type { ObjectStore } from '../store/ObjectStore.js';
import { mapLimit } from '../util/mapLimit.js';
import {
  chunkKey,
  incarnationId,
  indexKey,
  lfsLocksPrefix,
  lfsObjectKey,
  lfsObjectsPrefix,
  packKey,
  pageKey,
  REPOS_PREFIX,
  repoPrefix,
} from './keys.js';
import type { CheckpointPointer, LogItem, RepoIndex } from './types.js';
import { CHUNK_SIZE, chunkedUpTo, PAGE_SIZE } from './types.js';
import type { Wal } from './Wal.js';

export const DEFAULT_RETENTION_MS = 24 * 60 * 60_000;

export interface SweepOptions {
  /** Unnamed objects younger than this are kept. */
  readonly retentionMs: number;
  /** Report what would be deleted, delete nothing. */
  readonly dryRun: boolean;
  readonly now?: () => number;
  /** Called for each orphan found (deleted, or to be deleted on a dry run). */
  readonly onOrphan?: (key: string, ageMs: number) => void;
  /** Asked before each repository: true stops the sweep there (a bounded run resumes later). */
  readonly stop?: () => boolean;
  /** Sweep only the repositories whose names sort after this one (where a bounded run stopped). */
  readonly startAfter?: string;
}

export interface RepoSweep {
  readonly repo: string;
  /** Objects the index names (including pages named by position). */
  readonly named: number;
  /** Unnamed objects older than the window: deleted, or listed on a dry run. */
  readonly orphans: number;
  /** Unnamed objects kept because they are younger than the window (or tables kept by the rule above). */
  readonly young: number;
  /** Objects the index names that are missing from the store: a damaged log, never expected. */
  readonly missing: readonly string[];
  /** Git LFS objects kept because the log reaches them (or has pushes never looked at). */
  readonly lfsKept: number;
}

export interface SweepReport {
  readonly repos: readonly RepoSweep[];
  readonly orphans: number;
  readonly deleted: number;
  readonly young: number;
  /** Keys under `repos/` that fit no known layout: never deleted. */
  readonly unknown: readonly string[];
  /** Set when `stop` ended the sweep early: the last repository swept, to pass as `startAfter`. */
  readonly resumeAfter?: string;
}

const KINDS = new Set(['index.json', 'entries', 'tables', 'log', 'checkpoints', 'packs', 'lfs']);
/** What lives under `lfs/`; any other key there fits no known layout and is left alone. */
const LFS_KINDS = new Set(['objects', 'incoming', 'locks']);

/** The Git LFS objects the log of an index reaches (see the module comment). */
export interface LfsReach {
  /** Keys of the objects some entry points at. */
  readonly keys: ReadonlySet<string>;
  /** Some push was never looked at for pointers: every LFS object is kept. */
  readonly all: boolean;
}

/** Entries read at once to learn which LFS objects the log reaches. */
const ENTRY_READS = 16;

/** Every key `loaded` names in its repository (see the module comment). */
export async function namedKeys(wal: Wal, index: RepoIndex): Promise<Set<string>> {
  const repo = index.repo;
  const named = new Set<string>([indexKey(repo)]);
  const pointer = (p: CheckpointPointer | null | undefined) => {
    if (!p) return;
    named.add(p.key);
    named.add(p.table);
    for (const pack of p.packs)
      for (const ext of ['pack', 'idx', 'bitmap'] as const) named.add(packKey(repo, pack, ext));
  };
  const item = (i: LogItem) => {
    named.add(i.key);
    for (const pack of i.packs)
      for (const ext of ['pack', 'idx', 'bitmap'] as const) named.add(packKey(repo, pack, ext));
    pointer(i.checkpoint);
  };
  for (const t of index.tables) named.add(t.key);
  pointer(index.checkpoint);
  pointer(index.pagedCheckpoint);
  // The pages and chunks the index says are written (the sweep also keeps those that a writer may
  // have written ahead of it: see isCurrentLog).
  for (let page = 0; page < index.paged / PAGE_SIZE; page++) named.add(pageKey(repo, index.created, page));
  for (let chunk = index.paged / CHUNK_SIZE; chunk < chunkedUpTo(index) / CHUNK_SIZE; chunk++)
    named.add(chunkKey(repo, index.created, chunk));
  if (index.lfsLocks) named.add(index.lfsLocks.key);
  for (const i of await wal.itemsAfter(index, 0)) item(i);
  return named;
}

/**
 * The LFS objects the log reaches: the `lfs` of every push entry that recorded some (its log item
 * counts them, so only those entries are read). A push item without a count was never looked at.
 */
export async function lfsReached(wal: Wal, index: RepoIndex): Promise<LfsReach> {
  const items = await wal.itemsAfter(index, 0);
  if (items.some((i) => i.kind === undefined && i.packs.length > 0 && i.lfs === undefined))
    return { keys: new Set(), all: true };
  const keys = new Set<string>();
  const entries = await mapLimit(
    items.filter((i) => (i.lfs ?? 0) > 0),
    ENTRY_READS,
    async (i) => wal.entry(i.key),
  );
  for (const entry of entries) for (const oid of entry.lfs ?? []) keys.add(lfsObjectKey(index.repo, oid));
  return { keys, all: false };
}

/** The repository a key under `repos/` belongs to, or null when it fits no known layout. */
export function repoOfKey(key: string): string | null {
  if (!key.startsWith(REPOS_PREFIX)) return null;
  const parts = key.slice(REPOS_PREFIX.length).split('/');
  for (const segments of [1, 2]) {
    const name = parts.slice(0, segments).join('/');
    const kind = parts[segments];
    if (kind === 'lfs' && !LFS_KINDS.has(parts[segments + 1] ?? '')) continue;
    if (name.endsWith('.git') && kind !== undefined && KINDS.has(kind)) return name.slice(0, -'.git'.length);
  }
  return null;
}

export async function sweepOrphans(wal: Wal, options: SweepOptions): Promise<SweepReport> {
  const now = options.now ?? Date.now;
  const byRepo = new Map<string, string[]>();
  const unknown: string[] = [];
  for await (const key of listAll(wal.store, REPOS_PREFIX)) {
    const repo = repoOfKey(key);
    if (repo === null) unknown.push(key);
    else byRepo.set(repo, [...(byRepo.get(repo) ?? []), key]);
  }
  const repos: RepoSweep[] = [];
  let deleted = 0;
  let resumeAfter: string | undefined;
  const order = [...byRepo.keys()]
    .sort()
    .filter((repo) => options.startAfter === undefined || repo > options.startAfter);
  for (const repo of order) {
    if (options.stop?.()) {
      resumeAfter = repos.at(-1)?.repo ?? options.startAfter;
      break;
    }
    const result = await sweepRepo(wal, repo, byRepo.get(repo) ?? [], options, now);
    repos.push(result.sweep);
    deleted += result.deleted;
  }
  return {
    repos,
    orphans: repos.reduce((n, r) => n + r.orphans, 0),
    deleted,
    young: repos.reduce((n, r) => n + r.young, 0),
    unknown,
    ...(resumeAfter !== undefined ? { resumeAfter } : {}),
  };
}

async function sweepRepo(
  wal: Wal,
  repo: string,
  keys: readonly string[],
  options: SweepOptions,
  now: () => number,
): Promise<{ sweep: RepoSweep; deleted: number }> {
  // A fresh read: an index this process cached may be older than what another node published.
  const loaded = await wal.readIndexFully(repo);
  const named = loaded ? await namedKeys(wal, loaded.index) : new Set<string>();
  const present = new Set(keys);
  const missing = [...named].filter((k) => !present.has(k) && !k.endsWith('.bitmap'));
  // No index (a repository deleted, or never created): nothing reaches its LFS objects.
  const reach: LfsReach = loaded ? await lfsReached(wal, loaded.index) : { keys: new Set(), all: false };
  const lfsObjects = lfsObjectsPrefix(repo);
  const reached = (k: string) => k.startsWith(lfsObjects) && (reach.all || reach.keys.has(k));
  const lfsKept = keys.filter(reached).length;
  // Pages of another incarnation, entries, packs, checkpoints, LFS objects and uploads: gone for
  // good once unnamed and unreached.
  const candidates = keys.filter(
    (k) => !named.has(k) && !reached(k) && !(loaded && isCurrentLog(loaded.index, k)),
  );
  const ages = await mapLimit(candidates, 16, async (key) => ({
    key,
    age: await ageOf(wal.store, key, now),
  }));
  const tablesSettled =
    loaded === null ||
    (await mapLimit(loaded.index.tables, 16, async (t) => ageOf(wal.store, t.key, now))).every(
      (age) => age === null || age > options.retentionMs,
    );
  // Lock tables: see the module comment (the index is the latest change when no table is named).
  const locksSince = loaded?.index.lfsLocks?.key ?? indexKey(repo);
  const locksAge = loaded ? await ageOf(wal.store, locksSince, now) : null;
  const locksSettled = locksAge === null || locksAge > options.retentionMs;
  let orphans = 0;
  let young = 0;
  let deleted = 0;
  // A chunk goes once the page that replaced it is older than the window (a reader may still hold
  // an index from before that page).
  const pages = new Map<string, number | null>();
  for (const { key } of ages) {
    const page = loaded ? replacingPage(loaded.index, key) : null;
    if (page !== null && !pages.has(page)) pages.set(page, await ageOf(wal.store, page, now));
  }
  const chunkSettled = (key: string) => {
    const page = loaded ? replacingPage(loaded.index, key) : null;
    const age = page === null ? null : pages.get(page);
    return page === null || (age !== null && age !== undefined && age > options.retentionMs);
  };
  for (const { key, age } of ages) {
    if (age === null) continue; // deleted meanwhile
    const isTable = key.startsWith(`${repoPrefix(repo)}tables/`);
    const isLockTable = key.startsWith(lfsLocksPrefix(repo));
    if (
      age <= options.retentionMs ||
      (isTable && !tablesSettled) ||
      (isLockTable && !locksSettled) ||
      !chunkSettled(key)
    ) {
      young++;
      continue;
    }
    orphans++;
    options.onOrphan?.(key, age);
    if (!options.dryRun) {
      await wal.store.delete(key);
      deleted++;
    }
  }
  return { sweep: { repo, named: named.size, orphans, young, missing, lfsKept }, deleted };
}

/**
 * A page of the current incarnation, or a chunk of it past the last full page: kept, since a writer
 * writes them by position (the module comment says why). A chunk below the last full page is
 * superseded by that page and goes like any orphan.
 */
function isCurrentLog(index: RepoIndex, key: string): boolean {
  const log = `${repoPrefix(index.repo)}log/${incarnationId(index.created)}/`;
  if (!key.startsWith(log)) return false;
  const chunk = chunkNumber(key.slice(log.length));
  return chunk === null || chunk >= index.paged / CHUNK_SIZE;
}

/** The key of the page that holds a chunk's items, when `key` is a chunk of the current incarnation. */
function replacingPage(index: RepoIndex, key: string): string | null {
  const log = `${repoPrefix(index.repo)}log/${incarnationId(index.created)}/`;
  const chunk = key.startsWith(log) ? chunkNumber(key.slice(log.length)) : null;
  return chunk === null
    ? null
    : pageKey(index.repo, index.created, Math.floor((chunk * CHUNK_SIZE) / PAGE_SIZE));
}

function chunkNumber(name: string): number | null {
  const match = /^chunk-(\d+)\.json$/.exec(name);
  return match ? Number(match[1]) : null;
}

/** By `stat`, which reads no bytes: a HEAD on the embedded store hashes the file for its etag. */
async function ageOf(store: ObjectStore, key: string, now: () => number): Promise<number | null> {
  try {
    return now() - (await store.stat(key)).modified;
  } catch (error) {
    if (isStoreError(error, 'NotFound')) return null;
    throw error;
  }
}

async function* listAll(store: ObjectStore, prefix: string): AsyncGenerator<string> {
  let startAfter: string | undefined;
  for (;;) {
    const page = await store.list(prefix, startAfter === undefined ? {} : { startAfter });
    yield* page.keys;
    if (page.next === undefined) return;
    startAfter = page.next;
  }
}
