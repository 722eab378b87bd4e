/** Waiting for something another process or a background task makes true, without a fixed sleep. */
import { setTimeout as sleep } from 'node:timers/promises';

/**
 * Asks `check` every `everyMs` until it holds or `withinMs` have passed, and answers whether it
 * held; the caller asserts on that, so a condition that never holds fails the test at its line.
 */
export async function eventually(
  check: () => boolean | Promise<boolean>,
  options: { withinMs?: number; everyMs?: number } = {},
): Promise<boolean> {
  const { withinMs = 5_000, everyMs = 20 } = options;
  for (const until = Date.now() + withinMs; Date.now() < until; ) {
    if (await check()) return true;
    await sleep(everyMs);
  }
  return check();
}
