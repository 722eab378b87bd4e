/**
 * How far each destination has accepted a repository's events: one small object per repository
 * and destination, `repos/<repo>.git/events/<destination>.json`, advanced only by conditional PUT
 * (If-Match on the etag read, If-None-Match: * for the first), so two nodes delivering the same
 * events never both advance it: the loser re-reads and continues from where the winner stopped.
 */
import { isStoreError } from '../store/errors.js';
import type { ObjectStore } from '../store/ObjectStore.js';
import { retryReads } from '../store/retryReads.js';
import { repoPrefix } from '../wal/keys.js';

export interface EventCursor {
  readonly repo: string;
  readonly sink: string;
  /** Every event with seq <= this was accepted by the destination. */
  readonly seq: number;
  readonly incarnation: string;
  /** The etag of the stored cursor; null when none is stored yet. */
  readonly etag: string | null;
}

interface StoredCursor {
  readonly v: 1;
  readonly incarnation: string;
  readonly seq: number;
  readonly time: string;
}

/** Another writer advanced the cursor first: re-read it. */
export class CursorMoved extends Error {
  readonly code = 'CursorMoved';
}

export const cursorKey = (repo: string, sink: string) => `${repoPrefix(repo)}events/${sink}.json`;

/** The cursor for the current incarnation; a cursor left by an earlier incarnation counts as 0. */
export async function readCursor(
  store: ObjectStore,
  repo: string,
  sink: string,
  incarnation: string,
): Promise<EventCursor> {
  try {
    const got = await retryReads(() => store.get(cursorKey(repo, sink)));
    if (got.notModified) throw new Error('unexpected 304 without a condition');
    const stored = JSON.parse(got.body.toString('utf8')) as StoredCursor;
    const valid = stored.incarnation === incarnation && Number.isSafeInteger(stored.seq) && stored.seq >= 0;
    return { repo, sink, seq: valid ? stored.seq : 0, incarnation, etag: got.etag };
  } catch (error) {
    if (isStoreError(error, 'NotFound')) return { repo, sink, seq: 0, incarnation, etag: null };
    if (error instanceof SyntaxError) return { repo, sink, seq: 0, incarnation, etag: null };
    throw error;
  }
}

/** Moves the cursor to `seq` (never back); throws CursorMoved when another writer won. */
export async function advanceCursor(
  store: ObjectStore,
  cursor: EventCursor,
  seq: number,
  now: Date,
): Promise<EventCursor> {
  if (seq <= cursor.seq) return cursor;
  const body: StoredCursor = { v: 1, incarnation: cursor.incarnation, seq, time: now.toISOString() };
  try {
    const { etag } = await store.put(cursorKey(cursor.repo, cursor.sink), Buffer.from(JSON.stringify(body)), {
      ...(cursor.etag === null ? { ifNoneMatch: '*' } : { ifMatch: cursor.etag }),
      contentType: 'application/json',
    });
    return { ...cursor, seq, etag };
  } catch (error) {
    if (isStoreError(error, 'PreconditionFailed') || isStoreError(error, 'ConditionalConflict'))
      throw new CursorMoved(`the ${cursor.sink} cursor of ${cursor.repo} moved`, { cause: error });
    // A 5xx leaves the outcome unknown; re-reading the cursor settles it.
    if (isStoreError(error, 'StoreUnavailable'))
      throw new CursorMoved(`the ${cursor.sink} cursor of ${cursor.repo} is in doubt`, { cause: error });
    throw error;
  }
}
