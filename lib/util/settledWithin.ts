import { setTimeout as sleep } from 'node:timers/promises';

/**
 * Whether `promise` settled within `ms` (either way: a rejection counts as settled). The timer is
 * cleared as soon as it does, so a long bound keeps no timer, and no process, alive.
 */
export async function settledWithin(promise: Promise<unknown>, ms: number): Promise<boolean> {
  const abandon = new AbortController();
  try {
    return await Promise.race([
      promise.then(
        () => true,
        () => true,
      ),
      sleep(ms, false, { signal: abandon.signal }),
    ]);
  } finally {
    abandon.abort();
  }
}
