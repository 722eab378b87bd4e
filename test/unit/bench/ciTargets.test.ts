import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { CiStormPlan, CiStormResult } from '../../../bench/ciStorm.js';
import { writeReport } from '../../../bench/report.js';
import { evaluateTargets } from '../../../bench/targets.js';
import { benchResultsWith } from '../../helpers/benchResults.js';

/** A storm of `plan` on `server`: every job in `elapsedMs`, `cpuMs` of server CPU in all. */
function storm(
  server: string,
  plan: CiStormPlan,
  elapsedMs: number,
  cpuMs: number,
  round?: number,
): CiStormResult {
  return {
    server,
    plan,
    ...(round !== undefined ? { round } : {}),
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

  it('judges several rounds of each storm by their medians, and gives their range', () => {
    const rows = ciRows([
      storm('narwal', one, 100, 80, 0),
      storm('narwal', eight, 200, 130, 0),
      storm('peer', eight, 400, 400, 0),
      storm('narwal', one, 100, 100, 1),
      storm('narwal', eight, 100, 160, 1),
      storm('peer', eight, 800, 400, 1),
      storm('narwal', one, 100, 90, 2),
      storm('narwal', eight, 400, 100, 2),
      storm('peer', eight, 200, 400, 2),
    ]);
    // CPU: 130 of 100-160 against 90 of 80-100. jobs/s: 40 (of 20, 40, 80) against 20 (10, 20, 40).
    expect(rows.map((r) => [r.measured, r.pass])).toEqual([
      ['130 ms vs 90 ms: 1.44x (medians of 3 and 3 storms: 100-160 ms vs 80-100 ms)', false],
      ['40.00 vs peer 20.00: 2.00x (medians of 3 and 3 storms)', false],
    ]);
  });

  it("reports the medians in the CI tables, and the range of narwal's CPU beside the floor", async () => {
    const dir = await mkdtemp(join(tmpdir(), 'narwal-ci-report-'));
    const { markdown } = await writeReport(
      benchResultsWith({
        ci: {
          repo: 'r',
          storms: [0, 1, 2].flatMap((round) => [
            storm('narwal', one, 100, [80, 100, 90][round] as number, round),
            storm('narwal', eight, 200, [130, 160, 100][round] as number, round),
            storm('floor', eight, 100, [12, 20, 16][round] as number, round),
          ]),
        },
      }),
      { dir, stamp: 'ci' },
    );
    const text = await readFile(markdown, 'utf8');
    await rm(dir, { recursive: true, force: true });
    expect(text).toContain('each figure is the median of its 3 storms');
    expect(text).toContain(
      '| depth=1 | 8 identical | 130 ms (100-160) | 5.71 ms | 16 ms | 2.00 ms | 3.86 ms |',
    );
  });
});
