/**
 * Shared settings and figures of the fuzzers. Every run uses a fixed seed (printed by fast-check
 * on failure, with the counterexample's path) so that a failure replays exactly:
 * `NARWAL_FUZZ_SEED=<seed> npx vitest run <file>`. `NARWAL_FUZZ_RUNS` multiplies the number of
 * cases of every target (CI runs the default, 1).
 */
import type { Parameters } from 'fast-check';

function positive(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value) || value <= 0) throw new Error(`${name} must be a positive number, not ${raw}`);
  return value;
}

export const FUZZ_SEED = Math.trunc(positive('NARWAL_FUZZ_SEED', 20_260_601));
const RUNS = positive('NARWAL_FUZZ_RUNS', 1);

/** fast-check parameters for a target whose CI run has `baseRuns` cases. */
export function fuzzParams<T>(baseRuns: number): Parameters<T> {
  return { seed: FUZZ_SEED, numRuns: Math.max(1, Math.round(baseRuns * RUNS)), endOnFailure: true };
}

/** A vitest timeout for a target whose CI run takes well under `baseMs`, scaled like its cases. */
export function fuzzTimeout(baseMs: number): number {
  return Math.max(baseMs, Math.round(baseMs * RUNS));
}

interface TargetFigures {
  cases: number;
  crashes: number;
  maxMs: number;
  maxRssBytes: number;
}

/** Cases, crashes, max latency per case and max RSS per target, printed as one summary line each. */
export class FuzzFigures {
  readonly #targets = new Map<string, TargetFigures>();

  /** Times `work`; a throw that `expected` does not accept counts as a crash and is rethrown. */
  measure<T>(target: string, work: () => T, expected: (error: unknown) => boolean): T | undefined {
    const started = performance.now();
    try {
      return work();
    } catch (error) {
      if (!expected(error)) {
        this.#entry(target).crashes += 1;
        throw error;
      }
      return undefined;
    } finally {
      this.record(target, performance.now() - started);
    }
  }

  record(target: string, ms: number, crashed = false): void {
    const entry = this.#entry(target);
    entry.cases += 1;
    if (crashed) entry.crashes += 1;
    entry.maxMs = Math.max(entry.maxMs, ms);
    entry.maxRssBytes = Math.max(entry.maxRssBytes, process.memoryUsage.rss());
  }

  crashes(): number {
    return [...this.#targets.values()].reduce((sum, t) => sum + t.crashes, 0);
  }

  summary(title: string): string {
    const lines = [...this.#targets.entries()].map(
      ([name, t]) =>
        `  ${name}: ${t.cases} cases, ${t.crashes} crashes, max ${t.maxMs.toFixed(1)} ms/case, max RSS ${Math.round(t.maxRssBytes / 1024 ** 2)} MiB`,
    );
    return [`${title} (seed ${FUZZ_SEED}):`, ...lines].join('\n');
  }

  #entry(target: string): TargetFigures {
    let entry = this.#targets.get(target);
    if (entry === undefined) {
      entry = { cases: 0, crashes: 0, maxMs: 0, maxRssBytes: 0 };
      this.#targets.set(target, entry);
    }
    return entry;
  }
}
