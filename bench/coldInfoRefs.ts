/**
 * Seed 000's accidental finding: one `info/refs` against a repository with ~950 log entries and
 * a cold cache hung past 120 s. Here: `git ls-remote` (one info/refs, protocol v2 ls-refs) against
 * a long log with the cache directory deleted before every probe, then warm; the peer serves a bare
 * copy of the same history, for scale (it has no log to replay: its "cold" is only the page cache).
 */
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { git } from './gitClient.js';
import type { BenchServer } from './servers.js';
import { median } from './stats.js';

export interface ColdProbeResult {
  readonly server: string;
  readonly entries: number;
  readonly latencyMs: number;
  readonly cold: number[];
  readonly warm: number[];
  readonly coldMedian: number;
  readonly warmMedian: number;
}

export async function probeInfoRefs(options: {
  server: BenchServer;
  repo: string;
  entries: number;
  probes: number;
  home: string;
  /** narwal's cache directory, deleted before each cold probe (absent for the peer). */
  cacheDir?: string;
}): Promise<ColdProbeResult> {
  const url = options.server.repoUrl(options.repo);
  const once = async () => {
    const out = await git(['ls-remote', url], { home: options.home });
    if (out.code !== 0) throw new Error(`${options.server.name}: ls-remote failed: ${out.stderr}`);
    return out.ms;
  };
  const cold: number[] = [];
  const warm: number[] = [];
  for (let p = 0; p < options.probes; p++) {
    if (options.cacheDir !== undefined)
      await rm(join(options.cacheDir, 'repos'), { recursive: true, force: true });
    cold.push(await once());
    warm.push(await once());
    warm.push(await once());
  }
  return {
    server: options.server.name,
    entries: options.entries,
    latencyMs: options.server.latencyMs,
    cold,
    warm,
    coldMedian: median(cold),
    warmMedian: median(warm),
  };
}
