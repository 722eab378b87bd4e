/**
 * Seed 000's first test: one-commit pushes, one after another, advancing one ref of a fresh
 * repository. Each server gets its own repository and the same commits; the servers take turns in
 * blocks (the order rotating), so drift and other work spread over all of them while each block
 * is still pushes back to back.
 */
import { type PushOutcome, push, pushOk, type SourceRepo } from './history.js';
import { type Load, measured } from './load.js';
import type { CpuTimes } from './procCpu.js';
import type { BenchServer } from './servers.js';

export interface SequentialResult {
  readonly server: string;
  readonly pushes: number;
  /** Client wall time of every successful push, in order. */
  readonly latencies: number[];
  readonly failures: number;
  readonly firstError?: string;
  /** The server's CPU over all its blocks (self and git children). */
  readonly serverCpu: CpuTimes;
  /** Load during each of its blocks. */
  readonly blocks: Load[];
}

export async function sequentialPushes(options: {
  servers: readonly BenchServer[];
  source: SourceRepo;
  commits: readonly string[];
  repo: string;
  block: number;
  /** The refspec of the i-th push; by default every push advances `main`. */
  refspec?: (oid: string, i: number) => string;
  signal: AbortSignal;
  log: (line: string) => void;
  label?: string;
}): Promise<SequentialResult[]> {
  const { servers, source, commits } = options;
  const refspec = options.refspec ?? ((oid: string) => `${oid}:refs/heads/main`);
  const state = servers.map((server) => ({
    server,
    latencies: [] as number[],
    failures: 0,
    firstError: undefined as string | undefined,
    cpu: { self: 0, children: 0 },
    blocks: [] as Load[],
  }));
  for (const s of state) {
    await s.server.newRepo(options.repo);
    await pushOk(source, s.server.repoUrl(options.repo), [`${source.root}:refs/heads/main`]);
  }
  for (let from = 0, round = 0; from < commits.length; from += options.block, round++) {
    const slice = commits.slice(from, from + options.block);
    for (let k = 0; k < state.length; k++) {
      const s = state[(k + round) % state.length];
      if (!s) continue;
      const url = s.server.repoUrl(options.repo);
      const { value, load } = await measured([s.server], async () => {
        const outcomes: PushOutcome[] = [];
        for (const [j, oid] of slice.entries()) {
          options.signal.throwIfAborted();
          outcomes.push(await push(source, url, [refspec(oid, from + j)], options.signal));
        }
        return outcomes;
      });
      for (const out of value) {
        if (out.ok) s.latencies.push(out.ms);
        else {
          s.failures++;
          s.firstError ??= out.error;
        }
      }
      const cpu = load.serverCpu[s.server.name] ?? { self: 0, children: 0 };
      s.cpu = { self: s.cpu.self + cpu.self, children: s.cpu.children + cpu.children };
      s.blocks.push(load);
    }
    options.log(
      `  ${options.label ?? 'sequential pushes'} ${Math.min(from + options.block, commits.length)}/${commits.length}: ${state
        .map(
          (s) =>
            `${s.server.name} ${Math.round(s.latencies.slice(-slice.length).reduce((a, b) => a + b, 0) / Math.max(1, slice.length))} ms`,
        )
        .join(', ')}`,
    );
  }
  return state.map((s) => ({
    server: s.server.name,
    pushes: commits.length,
    latencies: s.latencies,
    failures: s.failures,
    ...(s.firstError !== undefined ? { firstError: s.firstError } : {}),
    serverCpu: s.cpu,
    blocks: s.blocks,
  }));
}
