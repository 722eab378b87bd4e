import { setTimeout as sleep } from 'node:timers/promises';
import { isStoreError } from '../store/errors.js';
import type { ObjectStore, PutBody } from '../store/ObjectStore.js';

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
): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      await store.put(key, body, { ifNoneMatch: '*' });
      return;
    } catch (error) {
      if (!isStoreError(error, 'PreconditionFailed') && !isStoreError(error, 'ConditionalConflict')) {
        if (!isStoreError(error, 'StoreUnavailable') || attempt >= attempts) throw error;
      }
      const exists = await store.head(key).then(
        () => true,
        (e: unknown) => {
          if (isStoreError(e, 'NotFound')) return false;
          throw e;
        },
      );
      if (exists) return;
      if (attempt >= attempts) throw error;
      await sleep(Math.round(Math.random() * 10 * 2 ** attempt));
    }
  }
}
