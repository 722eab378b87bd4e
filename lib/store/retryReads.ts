import { setTimeout as sleep } from 'node:timers/promises';
import { isStoreError } from './errors.js';

/**
 * Retries an idempotent read a few times when the store is briefly unavailable. (The S3 SDK has
 * its own retries; this covers what is left after them, and the embedded store.)
 */
export async function retryReads<T>(read: () => Promise<T>, attempts = 4, baseMs = 20): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await read();
    } catch (error) {
      if (!isStoreError(error, 'StoreUnavailable') || attempt >= attempts) throw error;
      await sleep(Math.round(Math.random() * baseMs * 2 ** attempt));
    }
  }
}
