/**
 * What one `npm run bench` writes to bench/results/<stamp>.json: every measurement of the seeds,
 * per server (`peer`, `narwal` with no store latency, `narwal-<L>ms` with L ms on every store
 * operation), with the load each was measured under.
 */
import type { CiStormResult } from './ciStorm.js';
import type { StormResult } from './cloneStorm.js';
import type { ColdProbeResult } from './coldInfoRefs.js';
import type { WritersResult } from './concurrentWriters.js';
import type { PackLayout } from './fixtures.js';
import type { LevelResult } from './levels.js';
import type { LfsBenchResult } from './lfsTransfer.js';
import type { LogPageProbe } from './logPage.js';
import type { MonitorPagesResult } from './monitorPages.js';
import type { NarwalBuild } from './narwalBuild.js';
import type { LongLog } from './packedLog.js';
import type { UrisBenchResult } from './packfileUris.js';
import type { ProfileResult } from './pushProfile.js';
import type { SequentialResult } from './sequentialPushes.js';
import type { NodesRun } from './twoNodes.js';

export interface Machine {
  nproc: number;
  cpu: string;
  memoryGiB: number;
  kernel: string;
  git: string;
  node: string;
  loadAverageBefore: number[];
  loadAverageAfter?: number[];
  /** How the servers' CPU was read: each in a cgroup of its own, or from /proc ticks (procCpu.ts). */
  cpuClock?: 'cgroup' | 'proc';
}

export interface BenchResults {
  benchmark: 'narwal-vs-peer';
  mode: 'quick' | 'full';
  startedAt: string;
  finishedAt: string;
  machine: Machine;
  narwal: NarwalBuild;
  /** narwal's second store latency (the first is 0). */
  latencyMs: number;
  sizes: Record<string, unknown>;
  notes: string[];
  /** Error lines the servers logged during the run (each prefixed with the server's name). */
  serverErrors?: string[];
  sequential?: SequentialResult[];
  clones?: {
    fixture: { refs: number; repo: string; layouts: Record<string, PackLayout> };
    client: 'git' | 'wire';
    levels: LevelResult[];
    discarded: StormResult[];
  };
  /** CI checkout storms (bench/ciStorm.ts), per plan the peer then narwal. */
  ci?: { repo: string; storms: CiStormResult[] };
  /** Per server: the same push load on one process and on two. */
  nodes?: Record<string, { one: NodesRun; two: NodesRun }>;
  refs?: { interval: number; runs: SequentialResult[] };
  writers?: WritersResult[];
  cold?: {
    log: LongLog;
    probes: ColdProbeResult[];
    pages: { entries: number; latencyMs: number; pages: LogPageProbe[] }[];
    /** The monitor page and JSON API over HTTP (absent in runs made before they existed). */
    monitorPages?: MonitorPagesResult[];
  };
  profile?: ProfileResult[];
  /** Git LFS: a large object through the embedded store against cp, and the batch call at latency. */
  lfs?: LfsBenchResult;
  /** Full clones with packfile-uris on the Lambda stand-in (absent in runs made before them). */
  uris?: UrisBenchResult;
}
