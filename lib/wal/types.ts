/**
 * The log's formats. Everything except `index.json` is immutable, so a retried write is
 * idempotent and a crash leaves at worst an orphan that no index names.
 *
 * An entry object is position-free: its sequence number is assigned by the index compare-and-swap
 * that publishes it (the CAS is the commit point), and recorded next to its key in the index tail
 * and later in a page. A writer that loses the race therefore never rewrites its entry.
 *
 * The index every push rewrites stays bounded whatever the length of the log or the number of
 * refs: the ref set lives in a short stack of immutable tables (compacted geometrically, in the
 * spirit of reftable) plus a bounded set of recent rows; the log lives in fixed-size pages (and,
 * until a page is full, quarter-page chunks) whose keys follow from their position, plus a tail
 * of the few newest items.
 */

import type { ProtectionRule } from '../policy/protectionRules.js';

export interface RefUpdate {
  readonly ref: string;
  /** ZERO_OID when the ref is created. */
  readonly old: string;
  /** ZERO_OID when the ref is deleted. */
  readonly new: string;
  /** When `new` is an annotated tag: the object it peels to (never a tag). */
  readonly peeled?: string;
}

/**
 * A ref as tables store it: `[name, oid]` or `[name, oid, peeled]`. In a delta table and in the
 * index's recent rows, an oid of ZERO_OID is a deletion (a tombstone).
 */
export type RefRow = readonly [string, string] | readonly [string, string, string];

/** Who made an entry: the authenticated token, and where the request came from. */
export interface Identity {
  readonly token: string;
  /** The token's public id (absent for the configured admin token). */
  readonly tokenId?: string;
  readonly owner?: string;
  readonly agent?: string;
  readonly ip?: string;
}

/**
 * What an entry is: a push; a rewind (a push made by narwal restoring the refs of an earlier
 * entry); a checkpoint (no ref changes; names a full snapshot and consolidated packs); a protect
 * (no ref changes; sets the repository's protection rules, recorded in full in the entry); a lock
 * (no ref changes; a Git LFS lock taken or released); a settings change (no ref changes; the
 * repository's settings, recorded in full).
 */
export type EntryKind = 'push' | 'rewind' | 'checkpoint' | 'protect' | 'lock' | 'settings';

/** A Git LFS lock taken or released, as its entry records it (lib/lfs/LfsLocks.ts). */
export interface LockEvent {
  readonly action: 'lock' | 'unlock';
  readonly id: string;
  readonly path: string;
  /** Who holds (or held) the lock: a token's name, and its id unless it is the configured admin token. */
  readonly owner: { readonly name: string; readonly tokenId?: string };
  /** Released by an admin while someone else held it. */
  readonly forced?: true;
}

/** A repository's settings; an absent one has its default. */
export interface RepoSettings {
  /** Refuse a push whose new commits point at Git LFS objects the store lacks (default: true). */
  readonly lfsPushCheck?: boolean;
}

/** The repository's table of Git LFS locks (`lfs/locks/<sha256>.json`, lib/lfs/lockTable.ts). */
export interface LocksPointer {
  readonly key: string;
  readonly count: number;
}

export interface RewindInfo {
  /** The entry whose ref state was restored. */
  readonly to: number;
  /** The ref pattern it was limited to, if any. */
  readonly refs?: string;
}

/** `entries/<sha256>.json`, written create-only before the CAS that names it. */
export interface EntryObject {
  readonly v: 1;
  readonly id: string;
  readonly kind: EntryKind;
  readonly time: string;
  readonly who: Identity;
  readonly updates: readonly RefUpdate[];
  /** Pack names (`pack-<sha>`), each stored as `packs/<name>.pack` and `.idx`. */
  readonly packs: readonly string[];
  /** Total size of the packs. */
  readonly bytes?: number;
  readonly atomic: boolean;
  readonly rewind?: RewindInfo;
  readonly checkpoint?: CheckpointPointer;
  /** A protect entry: the complete rule set in force from this entry on. */
  readonly protection?: readonly ProtectionRule[];
  /** A lock entry: the lock taken or released. */
  readonly lock?: LockEvent;
  /** A settings entry: the complete settings in force from this entry on. */
  readonly settings?: RepoSettings;
  /**
   * A push whose packs were looked at for Git LFS pointers: the oids they point at, sorted (an
   * empty list when none). Absent on pushes from before narwal looked (lib/lfs/pushCheck.ts).
   */
  readonly lfs?: readonly string[];
}

/** At most this many ref updates are copied into a log item; the entry object has them all. */
export const MAX_ITEM_UPDATES = 4;

/** One published entry as the index (and later a page) records it: a summary of the entry. */
export interface LogItem {
  readonly seq: number;
  readonly key: string;
  readonly kind?: Exclude<EntryKind, 'push'>;
  readonly time: string;
  readonly who: Identity;
  /** The first MAX_ITEM_UPDATES updates of the entry. */
  readonly updates: readonly RefUpdate[];
  /** How many updates the entry has, when more than `updates` shows. */
  readonly count?: number;
  readonly packs: readonly string[];
  readonly bytes?: number;
  readonly atomic?: true;
  readonly rewind?: RewindInfo;
  readonly checkpoint?: CheckpointPointer;
  readonly lock?: LockEvent;
  readonly settings?: RepoSettings;
  /** How many Git LFS objects the entry's `lfs` names (absent: its packs were never looked at). */
  readonly lfs?: number;
}

/**
 * `tables/<sha256>.json`: refs as of `seq`, sorted by name in byte order. The bottom table of a
 * stack is complete and has no tombstones; the others hold what changed after the one below.
 */
export interface RefTable {
  readonly v: 1;
  readonly seq: number;
  readonly rows: readonly RefRow[];
}

export interface TablePointer {
  readonly key: string;
  readonly seq: number;
  readonly count: number;
}

/** Items per page. */
export const PAGE_SIZE = 32;

/**
 * Items per chunk: a quarter page. Published items leave the index in chunks, so its tail (which
 * every push rewrites) holds at most a chunk and a bit, however far the log is from a full page.
 */
export const CHUNK_SIZE = 8;

/**
 * `log/<incarnation>/<n>.json`: the items with seq in [n*PAGE_SIZE+1, (n+1)*PAGE_SIZE]. Written
 * create-only once all of them are published, so every writer writes the same content.
 */
export interface LogPage {
  readonly v: 1;
  readonly page: number;
  /** The newest checkpoint published before this page's first item (for states at any entry). */
  readonly before: CheckpointPointer | null;
  readonly items: readonly LogItem[];
}

/**
 * `log/<incarnation>/chunk-<n>.json`: the items with seq in [n*CHUNK_SIZE+1, (n+1)*CHUNK_SIZE], for
 * items not yet in a full page. Written like a page; superseded (and left to the orphan sweep) once
 * the page holding its items is.
 */
export interface LogChunk {
  readonly v: 1;
  readonly chunk: number;
  readonly items: readonly LogItem[];
}

/**
 * `checkpoints/<sha256>.json` and its pointer: the ref set as of `seq` (a complete ref table) and
 * consolidated packs holding every object those refs reach, with a reachability bitmap. A cold
 * cache downloads these and replays only the entries after `seq`.
 */
export interface CheckpointPointer {
  readonly seq: number;
  readonly key: string;
  /** Complete ref table as of `seq`, and its number of refs. */
  readonly table: string;
  readonly count: number;
  readonly packs: readonly string[];
  /** Total bytes of the packs, for progress and routing decisions. */
  readonly bytes: number;
}

export interface CheckpointObject extends Omit<CheckpointPointer, 'key'> {
  readonly v: 1;
  readonly time: string;
  readonly head: string;
}

/**
 * `index.json`, the one mutable object per repository, advanced only by conditional PUT.
 * Refs at `seq` are the tables (bottom first) overlaid with `recent`; items with seq <= `paged`
 * are in pages, then up to `chunked` in chunks, the rest in `tail`.
 */
export interface RepoIndex {
  readonly v: 2;
  readonly repo: string;
  readonly created: string;
  readonly seq: number;
  /** Where HEAD points, e.g. `refs/heads/main`. */
  readonly head: string;
  readonly public: boolean;
  readonly tables: readonly TablePointer[];
  /** Refs changed after the top table, sorted by name; bounded by the maintenance policy. */
  readonly recent: readonly RefRow[];
  /** A multiple of PAGE_SIZE. */
  readonly paged: number;
  /** The newest checkpoint among paged items, carried into the next page's `before`. */
  readonly pagedCheckpoint: CheckpointPointer | null;
  /**
   * A multiple of CHUNK_SIZE, at least `paged`: items with seq in (paged, chunked] are in chunks.
   * Absent in an index written before chunks existed, which means `paged`.
   */
  readonly chunked?: number;
  /** Items with seq in (chunked, seq], oldest first. */
  readonly tail: readonly LogItem[];
  /** The newest checkpoint: replay of a cold cache starts there. */
  readonly checkpoint: CheckpointPointer | null;
  /**
   * Protected-ref rules in force (absent: none), at most MAX_RULES of them. Changed only by a
   * protect entry, so every push is checked against the rules of the index it CASes against.
   */
  readonly protection?: readonly ProtectionRule[];
  /** The Git LFS locks held (absent: none). Changed only by a lock entry. */
  readonly lfsLocks?: LocksPointer;
  /** Settings other than the defaults. Changed only by a settings entry. */
  readonly settings?: RepoSettings;
}

/** Where the items kept in chunks end (an index from before chunks keeps none). */
export function chunkedUpTo(index: Pick<RepoIndex, 'paged' | 'chunked'>): number {
  return Math.max(index.paged, index.chunked ?? 0);
}

/** An index together with the etag it was read or written with. */
export interface LoadedIndex {
  readonly index: RepoIndex;
  readonly etag: string;
}
