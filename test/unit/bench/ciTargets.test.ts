import { describe, expect, it } from 'vitest';
import type { CiStormPlan, CiStormResult } from '../../../bench/ciStorm.js';
import { evaluateTargets } from '../../../bench/targets.js';
import { benchResultsWith } from '../../helpers/benchResults.js';

/** A storm of `plan` on `server`: every job in `elapsedMs`, `cpuMs` of server CPU in all. */
function storm(server: string, plan: CiStormPlan, elapsedMs: number, cpuMs: number): CiStormResult {
  return {
    server,
    plan,
    failures: 0,
    elapsedMs,
    jobMs: Array.from({ length: plan.jobs }, () => elapsedMs),
    serverCpu: { self: cpuMs / 1000, children: 0 },
  };
}

const one: CiStormPlan = { name: '1 job', kind: 'depth=1', jobs: 1, commits: 1 };
const eight: CiStormPlan = { name: '8 identical', kind: 'depth=1', jobs: 8, commits: 1 };
const wire: CiStormPlan = { ...eight, name: '8 identical, wire clients', client: 'wire' };

/** The target rows of a run whose CI phase had these storms. */
function ciRows(storms: CiStormResult[]) {
  return evaluateTargets(benchResultsWith({ ci: { repo: 'r', storms } }));
}

describe('the CI storm targets', () => {
  it('compares identical git jobs with one job, and jobs/s with the peer for git and wire clients', () => {
    const rows = ciRows([
      storm('narwal', one, 100, 80),
      storm('peer', eight, 400, 400),
      storm('narwal', eight, 200, 100),
      storm('peer', wire, 200, 360),
      storm('narwal', wire, 50, 120),
    ]);
    expect(rows.map((r) => [r.target, r.pass])).toEqual([
      ['CI storm depth=1, 8 identical: server CPU against one job', true],
      ['CI storm depth=1, 8 identical: jobs/s', false],
      ['CI storm depth=1, 8 identical, wire clients: jobs/s', true],
    ]);
    // 8 jobs in 200 ms against 8 in 400 ms: 2x, a third short of 3x.
    expect(rows[1]).toMatchObject({ measured: '40.00 vs peer 20.00: 2.00x', miss: '33% short' });
    expect(rows[2]?.measured).toBe('160.00 vs peer 40.00: 4.00x');
  });

  it('sets the bare node:http floor of the same storm beside its CPU, and judges narwal alone', () => {
    const rows = ciRows([
      storm('narwal', one, 100, 80),
      storm('narwal', eight, 200, 120),
      storm('floor', eight, 100, 12),
    ]);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({
      server: 'narwal',
      measured: '120 ms vs 80 ms: 1.50x (a bare node:http server replaying the answers: 12 ms)',
      pass: false,
    });
  });
});
