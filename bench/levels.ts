/**
 * The storms of a run, level by level: both servers at each level, the server that goes first
 * alternating between levels to spread drift (page cache, thermal, other work), each storm started
 * on an idle machine and run again when other work took more than `maxOther` of it.
 */
import type { StormResult } from './cloneStorm.js';
import { waitForQuiet } from './quiet.js';
import type { BenchServer } from './servers.js';

export interface LevelResult {
  readonly workers: number;
  readonly protocol: 0 | 2;
  /** Which server ran first at this level (the order rotates to spread drift). */
  readonly order: readonly string[];
  /** Per server name. */
  readonly storms: Readonly<Record<string, StormResult>>;
}

export interface Level {
  readonly workers: number;
  readonly protocol: 0 | 2;
  readonly clones: number;
}

export interface LevelsOptions {
  readonly servers: readonly BenchServer[];
  readonly storm: (server: BenchServer, level: Level) => Promise<StormResult>;
  readonly maxOther: number;
  readonly retries: number;
  readonly idleWaitMs: number;
  readonly signal: AbortSignal;
  readonly log: (line: string) => void;
}

export async function runLevels(
  plan: readonly Level[],
  options: LevelsOptions,
): Promise<{ results: LevelResult[]; discarded: StormResult[] }> {
  const { servers } = options;
  const results: LevelResult[] = [];
  const discarded: StormResult[] = [];
  for (const [i, level] of plan.entries()) {
    const order = servers.map((_, k) => servers[(k + i) % servers.length] as BenchServer);
    const byName = new Map<string, StormResult>();
    for (const server of order) {
      for (let attempt = 0; ; attempt++) {
        const idle = await waitForQuiet({
          maxBusy: 0.05,
          windowMs: 2000,
          timeoutMs: options.idleWaitMs,
          signal: options.signal,
        });
        const result = await options.storm(server, level);
        const other = otherWork(result);
        options.log(
          `  ${server.name.padEnd(11)} ${String(level.workers).padStart(3)} workers v${level.protocol}: ${result.cloneMs.length}/${level.clones} clones in ${(result.elapsedMs / 1000).toFixed(1)} s, machine ${percent(busy(result))} busy, other work ${percent(other)}${idle.quiet ? '' : ' (machine never idle before it)'}${result.firstError ? ` - first error: ${result.firstError}` : ''}`,
        );
        if (other <= options.maxOther || attempt >= options.retries) {
          byName.set(server.name, result);
          break;
        }
        discarded.push(result);
        options.log('  other work disturbed that storm; running it again');
      }
    }
    if (byName.size !== servers.length) throw new Error('a storm did not run');
    results.push({
      workers: level.workers,
      protocol: level.protocol,
      order: order.map((s) => s.name),
      storms: Object.fromEntries(byName),
    });
  }
  return { results, discarded };
}

/** The share of the machine's CPU capacity kept busy during a storm. */
export function busy(r: StormResult): number {
  return r.machineCpu / (r.elapsedMs / 1000) / r.cpus;
}

/** The share of it that went to neither the server nor the clients. */
export function otherWork(r: StormResult): number {
  return r.otherCpu / (r.elapsedMs / 1000) / r.cpus;
}

export function percent(share: number): string {
  return `${Math.round(100 * share)}%`;
}
