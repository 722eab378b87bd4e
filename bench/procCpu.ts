/**
 * CPU time of a server process and of every child it has waited for, from /proc/<pid>/stat
 * (proc(5): utime, stime, cutime, cstime are fields 14-17, in clock ticks). A git child's time,
 * and that of its own children (upload-pack's pack-objects), reaches cutime/cstime once it has
 * been reaped, which node does as soon as it exits: measured before and after a workload, the
 * difference is what serving it cost, git included.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

let ticksPerSecond: number | undefined;

function clockTicks(): number {
  if (ticksPerSecond === undefined) {
    const out = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim());
    ticksPerSecond = Number.isFinite(out) && out > 0 ? out : 100;
  }
  return ticksPerSecond;
}

export interface CpuTimes {
  /** The process itself (user + system). */
  readonly self: number;
  /** Its reaped children and their descendants (user + system). */
  readonly children: number;
}

/** Seconds of CPU, split into the process and its reaped children. */
export function processCpu(pid: number | 'self'): CpuTimes {
  const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // The command name (field 2) may contain spaces and parentheses: fields are counted after the last ')'.
  const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
  const field = (n: number) => Number(fields[n - 3] ?? Number.NaN);
  const tick = clockTicks();
  return { self: (field(14) + field(15)) / tick, children: (field(16) + field(17)) / tick };
}

export function totalCpu(times: CpuTimes): number {
  return times.self + times.children;
}

export function cpuDelta(before: CpuTimes, after: CpuTimes): CpuTimes {
  return { self: after.self - before.self, children: after.children - before.children };
}

/** Busy CPU seconds of the whole machine so far, every CPU summed (proc(5), /proc/stat `cpu` line). */
export function machineBusySeconds(): number {
  const line = readFileSync('/proc/stat', 'utf8').split('\n')[0] ?? '';
  // user nice system idle iowait irq softirq steal ...: everything but idle and iowait is busy.
  const ticks = line.trim().split(/\s+/).slice(1).map(Number);
  const busy = ticks.reduce((sum, t, i) => (i === 3 || i === 4 ? sum : sum + t), 0);
  return busy / clockTicks();
}
