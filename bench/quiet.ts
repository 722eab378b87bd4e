/**
 * The benchmark shares its machine with whatever else runs there (a test suite, another build),
 * and two servers compared in turn are only comparable if neither storm shared the CPUs with
 * that. So a storm starts when the machine has been idle for a moment, and one that other work
 * disturbed is run again (see run.ts).
 */
import { availableParallelism } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { machineBusySeconds } from './procCpu.js';

export interface QuietOptions {
  /** Busy share of the machine's capacity, 0..1, below which it counts as idle. */
  readonly maxBusy: number;
  readonly windowMs: number;
  readonly timeoutMs: number;
  readonly signal?: AbortSignal;
}

/** Waits until one window passes with the machine idle; resolves with how long that took and whether it did. */
export async function waitForQuiet(options: QuietOptions): Promise<{ waitedMs: number; quiet: boolean }> {
  const started = performance.now();
  const cpus = availableParallelism();
  for (;;) {
    const before = machineBusySeconds();
    await sleep(options.windowMs, undefined, options.signal ? { signal: options.signal } : {});
    const busy = (machineBusySeconds() - before) / (options.windowMs / 1000) / cpus;
    const waitedMs = performance.now() - started;
    if (busy <= options.maxBusy) return { waitedMs, quiet: true };
    if (waitedMs >= options.timeoutMs) return { waitedMs, quiet: false };
  }
}
