/** A benchmark run's results with nothing measured but `extra`, for tests of the targets table. */
import type { BenchResults } from '../../bench/benchResults.js';

export function benchResultsWith(extra: Partial<BenchResults>): BenchResults {
  return {
    benchmark: 'narwal-vs-peer',
    mode: 'quick',
    startedAt: '2026-01-01T00:00:00Z',
    finishedAt: '2026-01-01T00:01:00Z',
    machine: {
      nproc: 2,
      cpu: 'x',
      memoryGiB: 4,
      kernel: 'k',
      git: 'git',
      node: 'v20',
      loadAverageBefore: [0],
    },
    narwal: { commit: 'c'.repeat(40), localChanges: false, cli: 'dist/narwal.js' },
    latencyMs: 30,
    sizes: {},
    notes: [],
    ...extra,
  };
}
