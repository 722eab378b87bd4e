/**
 * Seed 000's two-node run: the same push load - `workers` clients, each advancing a branch of its
 * own in one repository, one-commit pushes back to back - sent to one server process, then split
 * across two processes serving the same repository (narwal: two nodes sharing one store, racing on
 * one index; the peer: two http-backend servers on one bare repository). Throughput two/one is
 * the figure; the seed's fell to 0.18.
 */
import { push, pushOk, type SourceRepo } from './history.js';
import { type Load, measured } from './load.js';
import type { BenchServer } from './servers.js';

export interface NodesRun {
  readonly processes: number;
  readonly pushes: number;
  readonly failures: number;
  readonly firstError?: string;
  readonly pushesPerSecond: number;
  readonly latencies: number[];
  readonly load: Load;
}

export async function pushRace(options: {
  nodes: readonly BenchServer[];
  source: SourceRepo;
  /** One chain of commits per worker. */
  chains: readonly (readonly string[])[];
  repo: string;
  signal: AbortSignal;
}): Promise<NodesRun> {
  const { nodes, source } = options;
  const first = nodes[0];
  if (!first) throw new Error('no server');
  await first.newRepo(options.repo);
  await pushOk(source, first.repoUrl(options.repo), [`${source.root}:refs/heads/main`]);
  const latencies: number[] = [];
  let failures = 0;
  let firstError: string | undefined;
  const { load } = await measured(nodes, () =>
    Promise.all(
      options.chains.map(async (chain, w) => {
        const node = nodes[w % nodes.length] as BenchServer;
        const url = node.repoUrl(options.repo);
        for (const oid of chain) {
          options.signal.throwIfAborted();
          const out = await push(source, url, [`${oid}:refs/heads/t-${w}`], options.signal);
          if (out.ok) latencies.push(out.ms);
          else {
            failures++;
            firstError ??= out.error;
          }
        }
      }),
    ),
  );
  return {
    processes: nodes.length,
    pushes: latencies.length,
    failures,
    ...(firstError !== undefined ? { firstError } : {}),
    pushesPerSecond: latencies.length / (load.elapsedMs / 1000),
    latencies,
    load,
  };
}
