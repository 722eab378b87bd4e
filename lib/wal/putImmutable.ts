import { setTimeout as sleep } from 'node:timers/promises';
import { isStoreError } from '../store/errors.js';
import type { ObjectStore, PutBody } from '../store/ObjectStore.js';

/**
 * An object this old that a writer finds already stored is written again (same key, same bytes)
 * before anything names it: the orphan sweep deletes unnamed objects by age, and an old orphan (a
 * pack of a push whose CAS failed long ago) may be named again by a push of the same objects. The
 * sweep's retention window must exceed this plus the longest push (sweepOrphans.ts).
 */
export const REFRESH_AFTER_MS = 60 * 60_000;

/**
 * Writes a content-addressed object create-only. "Already exists" is success (same key, same
 * content), but only once a HEAD confirms it: a 412 is never taken on faith, because a write
 * that names a missing object would corrupt the log.
 */
export async function putImmutable(
  store: ObjectStore,
  key: string,
  body: PutBody,
  attempts = 6,
  now: () => number = Date.now,
): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      await store.put(key, body, { ifNoneMatch: '*' });
      return;
    } catch (error) {
      if (!isStoreError(error, 'PreconditionFailed') && !isStoreError(error, 'ConditionalConflict')) {
        if (!isStoreError(error, 'StoreUnavailable') || attempt >= attempts) throw error;
      }
      const modified = await store.head(key).then(
        (head) => head.modified,
        (e: unknown) => {
          if (isStoreError(e, 'NotFound')) return null;
          throw e;
        },
      );
      if (modified !== null) {
        // Identical bytes under a content address: rewriting only renews the object's age.
        if (now() - modified > REFRESH_AFTER_MS) await store.put(key, body);
        return;
      }
      if (attempt >= attempts) throw error;
      await sleep(Math.round(Math.random() * 10 * 2 ** attempt));
    }
  }
}
