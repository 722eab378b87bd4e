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

/**
 * Cases, crashes, max latency per case and max RSS per target, printed as one summary line each.
 * RSS growth is measured from the last `begin()` (or construction): the process's RSS before the
 * first case, so that a server started in the same process is not counted as growth.
 */
export class FuzzFigures {
  readonly #targets = new Map<string, TargetFigures>();
  #baseRssBytes = process.memoryUsage.rss();

  /** Takes the RSS now as the baseline that growth is measured from. */
  begin(): void {
    this.#baseRssBytes = process.memoryUsage.rss();
  }

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

  /** One case of `target`; RSS is sampled now unless the caller sampled it during the case. */
  record(target: string, ms: number, options: { crashed?: boolean; rssBytes?: number } = {}): void {
    const entry = this.#entry(target);
    entry.cases += 1;
    if (options.crashed) entry.crashes += 1;
    entry.maxMs = Math.max(entry.maxMs, ms);
    entry.maxRssBytes = Math.max(entry.maxRssBytes, options.rssBytes ?? process.memoryUsage.rss());
  }

  crashes(): number {
    return [...this.#targets.values()].reduce((sum, t) => sum + t.crashes, 0);
  }

  summary(title: string): string {
    const all = [...this.#targets.values()];
    const mib = (bytes: number) => Math.round(bytes / 1024 ** 2);
    const line = (name: string, t: TargetFigures) =>
      `  ${name}: ${t.cases} cases, ${t.crashes} crashes, max ${t.maxMs.toFixed(1)} ms/case, max RSS ${mib(t.maxRssBytes)} MiB (growth ${mib(Math.max(0, t.maxRssBytes - this.#baseRssBytes))} MiB)`;
    const total: TargetFigures = {
      cases: all.reduce((n, t) => n + t.cases, 0),
      crashes: this.crashes(),
      maxMs: Math.max(0, ...all.map((t) => t.maxMs)),
      maxRssBytes: Math.max(0, ...all.map((t) => t.maxRssBytes)),
    };
    const lines = [...this.#targets.entries()].map(([name, t]) => line(name, t));
    return [
      `${title} (seed ${FUZZ_SEED}, RSS at start ${mib(this.#baseRssBytes)} MiB):`,
      ...lines,
      line('total', total),
    ].join('\n');
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
