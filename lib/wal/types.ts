/**
 * The log's formats. Everything except `index.json` is immutable and content-addressed, so a
 * retried write is idempotent and a crash leaves at worst an orphan that no index names.
 *
 * An entry object is position-free: its sequence number is assigned by the index compare-and-swap
 * that publishes it (the CAS is the commit point), and recorded next to its key in the index tail
 * and later in a segment. A writer that loses the race therefore never rewrites its entry.
 */

export const ZERO_OID = '0000000000000000000000000000000000000000';

export interface RefUpdate {
  readonly ref: string;
  /** ZERO_OID when the ref is created. */
  readonly old: string;
  /** ZERO_OID when the ref is deleted. */
  readonly new: string;
}

/** Who made an entry: the authenticated token, and where the request came from. */
export interface Identity {
  readonly token: string;
  readonly owner?: string;
  readonly agent?: string;
  readonly ip?: string;
}

/** `entries/<sha256>.json`, written create-only before the CAS that names it. */
export interface EntryObject {
  readonly v: 1;
  readonly id: string;
  readonly kind: 'push';
  readonly time: string;
  readonly who: Identity;
  readonly updates: readonly RefUpdate[];
  /** Pack names (`pack-<sha>`), each stored as `packs/<name>.pack` and `.idx`. */
  readonly packs: readonly string[];
  /** Total size of the packs. */
  readonly bytes?: number;
  readonly atomic: boolean;
}

/** One published entry as the index (and later a segment) records it. */
export interface LogItem {
  readonly seq: number;
  readonly key: string;
  readonly time: string;
  readonly who: Identity;
  readonly updates: readonly RefUpdate[];
  readonly packs: readonly string[];
  readonly bytes?: number;
  readonly atomic?: true;
}

/** `tables/<sha256>.json`: every ref as of `seq`, sorted by name. */
export interface RefTable {
  readonly v: 1;
  readonly seq: number;
  readonly refs: readonly (readonly [string, string])[];
}

/** `segments/<sha256>.json`: log items folded out of the index tail, oldest first. */
export interface Segment {
  readonly v: 1;
  readonly from: number;
  readonly to: number;
  readonly items: readonly LogItem[];
}

export interface TablePointer {
  readonly key: string;
  readonly seq: number;
  readonly count: number;
}

export interface SegmentPointer {
  readonly key: string;
  readonly from: number;
  readonly to: number;
}

/**
 * `checkpoints/<sha256>.json` and its pointer in the index: the ref set as of `seq` (a ref table)
 * and consolidated packs holding every object those refs reach, with a reachability bitmap. A
 * cold cache downloads these and replays only the entries after `seq`.
 */
export interface CheckpointPointer {
  readonly seq: number;
  readonly key: string;
  /** Ref table key with every ref as of `seq`. */
  readonly table: string;
  readonly packs: readonly string[];
  /** Total bytes of the packs, for progress and routing decisions. */
  readonly bytes: number;
}

export interface CheckpointObject extends CheckpointPointer {
  readonly v: 1;
  readonly time: string;
  readonly head: string;
}

/**
 * `index.json`, the one mutable object per repository, advanced only by conditional PUT.
 * It stays small: the ref set lives in `table`, older items in segments; the tail holds only the
 * items after the table, bounded by the fold policy.
 */
export interface RepoIndex {
  readonly v: 1;
  readonly repo: string;
  readonly created: string;
  readonly seq: number;
  /** Where HEAD points, e.g. `refs/heads/main`. */
  readonly head: string;
  readonly public: boolean;
  /** Refs as of `table.seq`; null before the first fold. */
  readonly table: TablePointer | null;
  readonly segments: readonly SegmentPointer[];
  /** The newest checkpoint: replay of a cold cache starts there. */
  readonly checkpoint: CheckpointPointer | null;
  /** Items with seq in (table?.seq ?? 0, seq], oldest first. */
  readonly tail: readonly LogItem[];
}

/** An index together with the etag it was read or written with. */
export interface LoadedIndex {
  readonly index: RepoIndex;
  readonly etag: string;
}
