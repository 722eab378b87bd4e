/**
 * The storms of a run, level by level: every server at each level, the server that goes first
 * rotating between levels to spread drift (page cache, thermal, other work), each storm started
 * on an idle machine and run again when other work took more than `maxOther` of it. With
 * `rounds` > 1 the whole plan runs that many times over, interleaved, and each level's storms are
 * pooled (all clones over all their time): on a shared machine one storm of a level can land in a
 * slow minute, and the claim is about levels, not minutes.
 */
import type { StormResult } from './cloneStorm.js';
import { waitForQuiet } from './quiet.js';
import type { BenchServer } from './servers.js';

export interface LevelResult {
  readonly workers: number;
  readonly protocol: 0 | 2;
  /** Which server ran first at this level in the first round (the order rotates to spread drift). */
  readonly order: readonly string[];
  /** Per server name: its storms of every round, pooled. */
  readonly storms: Readonly<Record<string, StormResult>>;
  /** Per server name: clones per second of each round's storm, in the order they ran. */
  readonly rounds: Readonly<Record<string, number[]>>;
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
  /** How many times the whole plan runs (at least 1). */
  readonly rounds: number;
  readonly idleWaitMs: number;
  /** How long the machine must stay idle before a storm (2 s unless told). */
  readonly quietWindowMs?: number;
  readonly signal: AbortSignal;
  readonly log: (line: string) => void;
}

export async function runLevels(
  plan: readonly Level[],
  options: LevelsOptions,
): Promise<{ results: LevelResult[]; discarded: StormResult[] }> {
  const { servers } = options;
  const discarded: StormResult[] = [];
  const storms = plan.map(() => new Map<string, StormResult[]>());
  for (let round = 0; round < Math.max(1, options.rounds); round++) {
    for (const [i, level] of plan.entries()) {
      const order = servers.map((_, k) => servers[(k + i + round) % servers.length] as BenchServer);
      for (const server of order) {
        for (let attempt = 0; ; attempt++) {
          const idle = await waitForQuiet({
            maxBusy: 0.05,
            windowMs: options.quietWindowMs ?? 2000,
            timeoutMs: options.idleWaitMs,
            signal: options.signal,
          });
          const result = await options.storm(server, level);
          const other = otherWork(result);
          options.log(
            `  ${server.name.padEnd(11)} ${String(level.workers).padStart(3)} workers v${level.protocol}${options.rounds > 1 ? ` round ${round + 1}` : ''}: ${result.cloneMs.length}/${result.clones} clones in ${(result.elapsedMs / 1000).toFixed(1)} s (${rate(result).toFixed(2)}/s), machine ${percent(busy(result))} busy, other work ${percent(other)}${idle.quiet ? '' : ' (machine never idle before it)'}${result.firstError ? ` - first error: ${result.firstError}` : ''}`,
          );
          if (other <= options.maxOther || attempt >= options.retries) {
            const list = storms[i]?.get(server.name) ?? [];
            list.push(result);
            storms[i]?.set(server.name, list);
            break;
          }
          discarded.push(result);
          options.log('  other work disturbed that storm; running it again');
        }
      }
    }
  }
  const results = plan.map((level, i): LevelResult => {
    const byName = storms[i] ?? new Map<string, StormResult[]>();
    if (byName.size !== servers.length) throw new Error('a storm did not run');
    return {
      workers: level.workers,
      protocol: level.protocol,
      order: servers.map((_, k) => (servers[(k + i) % servers.length] as BenchServer).name),
      storms: Object.fromEntries([...byName].map(([name, list]) => [name, pooled(list)])),
      rounds: Object.fromEntries([...byName].map(([name, list]) => [name, list.map(rate)])),
    };
  });
  return { results, discarded };
}

/** Several storms of one server at one level as one: every clone, over all their time. */
export function pooled(storms: readonly StormResult[]): StormResult {
  const [first] = storms;
  if (!first) throw new Error('no storm to pool');
  const sum = (value: (r: StormResult) => number) => storms.reduce((total, r) => total + value(r), 0);
  const firstError = storms.find((r) => r.firstError !== undefined)?.firstError;
  return {
    ...first,
    clones: sum((r) => r.clones),
    failures: sum((r) => r.failures),
    ...(firstError !== undefined ? { firstError } : {}),
    elapsedMs: sum((r) => r.elapsedMs),
    cloneMs: storms.flatMap((r) => r.cloneMs),
    serverCpu: { self: sum((r) => r.serverCpu.self), children: sum((r) => r.serverCpu.children) },
    clientCpu: { self: sum((r) => r.clientCpu.self), children: sum((r) => r.clientCpu.children) },
    machineCpu: sum((r) => r.machineCpu),
    otherCpu: sum((r) => r.otherCpu),
  };
}

/** Successful clones per second. */
function rate(r: StormResult): number {
  return r.cloneMs.length / (r.elapsedMs / 1000);
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
