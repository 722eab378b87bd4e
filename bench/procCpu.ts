/**
 * CPU time of a server process and of every child it has waited for, from /proc/<pid>/stat
 * (proc(5): utime, stime, cutime, cstime are fields 14-17, in clock ticks). A git child's time,
 * and that of its own children (upload-pack's pack-objects), reaches cutime/cstime once it has
 * been reaped, which node does as soon as it exits: measured before and after a workload, the
 * difference is what serving it cost, git included.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

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

/**
 * A server's CPU, read the finest way the machine allows. Ticks are 10 ms, and a delta of
 * utime + stime + cutime + cstime can be off by 20 ms or more: as much as a whole CI job's answer.
 * Where the bench may make a cgroup (root, a writable cgroup file system), the server is moved
 * into one of its own: the cgroup's clock counts every descendant in nanoseconds or
 * microseconds, whether reaped yet or not, and the process's own part is the sum of its threads'
 * run time (/proc/<pid>/task/<tid>/schedstat, in nanoseconds). Otherwise, /proc/<pid>/stat.
 */
export interface CpuMeter {
  readonly clock: 'cgroup' | 'proc';
  read(): CpuTimes;
  /** Removes the cgroup, once the process and its descendants are gone (best effort). */
  close(): Promise<void>;
}

/** Where a cgroup of the bench's own can go, and how its total CPU is read (seconds). */
interface CgroupRoot {
  readonly dir: string;
  /** The file that says `dir` is such a root. */
  readonly marker: string;
  readonly total: (cgroup: string) => number;
}

const CGROUP_ROOTS: readonly CgroupRoot[] = [
  // cgroup v2, alone or beside v1 (cgroups(7)): cpu.stat's usage_usec is kept for every cgroup.
  ...['/sys/fs/cgroup', '/sys/fs/cgroup/unified'].map((dir) => ({
    dir,
    marker: 'cgroup.controllers',
    total: (cgroup: string) => {
      const line = readFileSync(join(cgroup, 'cpu.stat'), 'utf8').match(/^usage_usec (\d+)$/m);
      if (!line?.[1]) throw new Error(`no usage_usec in ${cgroup}/cpu.stat`);
      return Number(line[1]) / 1e6;
    },
  })),
  // cgroup v1's cpuacct controller: cpuacct.usage in nanoseconds.
  ...['/sys/fs/cgroup/cpuacct', '/sys/fs/cgroup/cpu,cpuacct'].map((dir) => ({
    dir,
    marker: 'cpuacct.usage',
    total: (cgroup: string) => Number(readFileSync(join(cgroup, 'cpuacct.usage'), 'utf8').trim()) / 1e9,
  })),
];

/** Measures `pid` (and whatever it starts from now on) in a cgroup named after it, if it can. */
export function cpuMeter(pid: number): CpuMeter {
  for (const root of CGROUP_ROOTS) {
    if (!existsSync(join(root.dir, root.marker))) continue;
    const cgroup = join(root.dir, `narwal-bench-${pid}`);
    try {
      removeStaleCgroups(root.dir);
      mkdirSync(cgroup);
      writeFileSync(join(cgroup, 'cgroup.procs'), String(pid));
      const start = root.total(cgroup);
      const selfStart = threadsCpu(pid);
      return {
        clock: 'cgroup',
        read: () => {
          const total = root.total(cgroup) - start;
          const self = Math.min(threadsCpu(pid) - selfStart, total);
          return { self, children: total - self };
        },
        close: async () => {
          for (let attempt = 0; attempt < 50 && existsSync(cgroup); attempt++) {
            try {
              rmdirSync(cgroup);
            } catch {
              await sleep(100); // a descendant still exiting
            }
          }
        },
      };
    } catch {
      try {
        rmdirSync(cgroup);
      } catch {}
    }
  }
  return { clock: 'proc', read: () => processCpu(pid), close: async () => {} };
}

/** Seconds the threads of `pid` have run (schedstat's first field, nanoseconds). */
function threadsCpu(pid: number): number {
  let ns = 0;
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      ns += Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[0]);
    } catch {
      // the thread ended between the listing and the read
    }
  }
  return ns / 1e9;
}

/** Cgroups an interrupted bench left behind: empty ones go (a busy one refuses, and stays). */
function removeStaleCgroups(root: string): void {
  for (const name of readdirSync(root)) {
    if (!name.startsWith('narwal-bench-')) continue;
    try {
      rmdirSync(join(root, name));
    } catch {}
  }
}
