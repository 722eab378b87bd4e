/**
 * What a workload cost, from the processes' own accounting (/proc): the CPU of each server with
 * the git children it reaped, the CPU of the clients and the harness (this process and its
 * children), and how much of the machine went to other work meanwhile - the machine is shared,
 * so every figure carries the load it was measured under.
 */
import { availableParallelism } from 'node:os';
import { type CpuTimes, cpuDelta, machineBusySeconds, processCpu, totalCpu } from './procCpu.js';
import type { BenchServer } from './servers.js';

export interface Load {
  readonly elapsedMs: number;
  /** Per server name: its CPU (self and reaped children) during the workload. */
  readonly serverCpu: Readonly<Record<string, CpuTimes>>;
  readonly clientCpu: CpuTimes;
  readonly machineCpu: number;
  readonly cpus: number;
  /** The share of the machine's capacity used by neither the servers nor the clients. */
  readonly otherShare: number;
  /** The share of the machine's capacity used at all. */
  readonly busyShare: number;
}

export async function measured<T>(
  servers: readonly BenchServer[],
  work: () => Promise<T>,
): Promise<{ value: T; load: Load }> {
  const before = servers.map((s) => s.cpu());
  const clientBefore = processCpu('self');
  const machineBefore = machineBusySeconds();
  const started = performance.now();
  const value = await work();
  const elapsedMs = performance.now() - started;
  const serverCpu: Record<string, CpuTimes> = {};
  servers.forEach((s, i) => {
    serverCpu[s.name] = cpuDelta(before[i] as CpuTimes, s.cpu());
  });
  const clientCpu = cpuDelta(clientBefore, processCpu('self'));
  const machineCpu = machineBusySeconds() - machineBefore;
  const cpus = availableParallelism();
  const known = Object.values(serverCpu).reduce((sum, c) => sum + totalCpu(c), 0) + totalCpu(clientCpu);
  const seconds = Math.max(elapsedMs / 1000, 1e-3);
  return {
    value,
    load: {
      elapsedMs,
      serverCpu,
      clientCpu,
      machineCpu,
      cpus,
      otherShare: Math.max(0, machineCpu - known) / seconds / cpus,
      busyShare: machineCpu / seconds / cpus,
    },
  };
}
