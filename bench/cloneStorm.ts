/**
 * A clone storm: at least `clones` bare clones of one URL by `workers` concurrent clients, and
 * more until `minMs` have passed, so that a fast server is measured over as long a storm as a slow
 * one (a storm of a second or two is mostly its ramp up and down). Each git clone goes into a
 * temporary directory removed as soon as it finishes. Measures throughput, per-clone wall time and
 * the CPU the server (with its git children) and the clients spent.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { git } from './gitClient.js';
import { type CpuTimes, cpuDelta, machineBusySeconds, processCpu, totalCpu } from './procCpu.js';
import type { BenchServer } from './servers.js';
import { percentile } from './stats.js';
import { wireClone } from './wireClone.js';

export interface StormOptions {
  readonly server: BenchServer;
  readonly repo: string;
  readonly clones: number;
  /** No clone starts after this (ms from the start) once `clones` have started; 0: exactly `clones`. */
  readonly minMs?: number;
  readonly workers: number;
  /** git's protocol.version: 2 is git's default. */
  readonly protocol: 0 | 2;
  /** `git`: real `git clone --bare`; `wire`: the same requests, pack discarded (v2 only). */
  readonly client: ClientKind;
  readonly tmpRoot: string;
  readonly home: string;
  readonly signal?: AbortSignal;
}

export type ClientKind = 'git' | 'wire';

export interface StormResult {
  readonly server: string;
  readonly client: ClientKind;
  readonly workers: number;
  readonly protocol: 0 | 2;
  /** Clones started: `clones` or more, for `minMs`. */
  readonly clones: number;
  readonly failures: number;
  readonly firstError?: string;
  readonly elapsedMs: number;
  /** Per successful clone, in completion order. */
  readonly cloneMs: number[];
  readonly serverCpu: CpuTimes;
  /** The git clients (`children`) and the harness with the wire clients (`self`), on the server's machine. */
  readonly clientCpu: CpuTimes;
  /** Busy CPU seconds of the whole machine, and how many CPUs it has. */
  readonly machineCpu: number;
  readonly cpus: number;
  /**
   * Busy CPU time of the machine that was neither the server nor the clients nor the harness:
   * other work sharing the machine, which makes the run less comparable.
   */
  readonly otherCpu: number;
}

export async function cloneStorm(options: StormOptions): Promise<StormResult> {
  const url = options.server.repoUrl(options.repo);
  const cloneMs: number[] = [];
  let failures = 0;
  let firstError: string | undefined;
  let next = 0;
  const serverBefore = options.server.cpu();
  const clientBefore = processCpu('self');
  const machineBefore = machineBusySeconds();
  const started = performance.now();
  const more = () => next < options.clones || performance.now() - started < (options.minMs ?? 0);
  const worker = async () => {
    while (more()) {
      options.signal?.throwIfAborted();
      next++;
      try {
        cloneMs.push(await cloneOnce(options, url));
      } catch (error) {
        failures++;
        firstError ??= error instanceof Error ? error.message : String(error);
      }
    }
  };
  const workers = options.minMs ? options.workers : Math.min(options.workers, options.clones);
  await Promise.all(Array.from({ length: workers }, worker));
  const elapsedMs = performance.now() - started;
  options.signal?.throwIfAborted();
  const serverCpu = cpuDelta(serverBefore, options.server.cpu());
  const clientCpu = cpuDelta(clientBefore, processCpu('self'));
  const machineCpu = machineBusySeconds() - machineBefore;
  return {
    server: options.server.name,
    client: options.client,
    workers: options.workers,
    protocol: options.protocol,
    clones: next,
    failures,
    ...(firstError !== undefined ? { firstError } : {}),
    elapsedMs,
    cloneMs,
    serverCpu,
    clientCpu,
    machineCpu,
    cpus: availableParallelism(),
    otherCpu: Math.max(0, machineCpu - totalCpu(serverCpu) - totalCpu(clientCpu)),
  };
}

/** One clone's wall time in ms; throws with the client's complaint when it fails. */
async function cloneOnce(options: StormOptions, url: string): Promise<number> {
  if (options.client === 'wire') {
    if (options.protocol !== 2) throw new Error('the wire client speaks protocol v2 only');
    return (await wireClone(url, options.signal)).ms;
  }
  const dir = await mkdtemp(join(options.tmpRoot, 'clone-'));
  try {
    const out = await git(
      ['-c', `protocol.version=${options.protocol}`, 'clone', '--quiet', '--bare', url, join(dir, 'c.git')],
      { home: options.home, ...(options.signal ? { signal: options.signal } : {}) },
    );
    if (out.code !== 0) throw new Error(out.stderr.trim().split('\n').slice(-3).join(' / '));
    return out.ms;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

export interface StormSummary {
  readonly clonesPerSecond: number;
  readonly p50Ms: number;
  readonly p90Ms: number;
  readonly serverCpuPerClone: number;
  readonly clientCpuPerClone: number;
}

export function summarize(result: StormResult): StormSummary {
  const ok = result.cloneMs.length;
  return {
    clonesPerSecond: ok / (result.elapsedMs / 1000),
    p50Ms: percentile(result.cloneMs, 50),
    p90Ms: percentile(result.cloneMs, 90),
    serverCpuPerClone: (result.serverCpu.self + result.serverCpu.children) / Math.max(ok, 1),
    clientCpuPerClone: totalCpu(result.clientCpu) / Math.max(ok, 1),
  };
}
