import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { cpuMeter, totalCpu } from '../../../bench/procCpu.js';

describe("a server's CPU meter", () => {
  it('counts the work of the processes it starts, and leaves no cgroup behind', async () => {
    // A shell that runs one short child per line it reads, and says when it is done.
    const shell = spawn('sh', ['-c', 'while read line; do /bin/true; echo ran; done'], {
      stdio: ['pipe', 'pipe', 'inherit'],
    });
    const meter = cpuMeter(shell.pid as number);
    const before = meter.read();
    const ran = once(shell.stdout, 'data');
    shell.stdin.write('go\n');
    await ran;
    const after = meter.read();
    if (meter.clock === 'cgroup') {
      // One /bin/true is about a millisecond: under a clock tick, seen only by the cgroup's clock.
      expect(after.children).toBeGreaterThan(before.children);
      expect(totalCpu(after)).toBeGreaterThan(totalCpu(before));
    }
    expect(after.self).toBeGreaterThanOrEqual(0);
    expect(after.children).toBeGreaterThanOrEqual(0);
    shell.stdin.end();
    await once(shell, 'exit');
    await meter.close();
    expect(existsSync(`/sys/fs/cgroup/unified/narwal-bench-${shell.pid}`)).toBe(false);
    expect(existsSync(`/sys/fs/cgroup/cpuacct/narwal-bench-${shell.pid}`)).toBe(false);
  });
});
