import { describe, expect, it } from 'vitest';
import type { WritersResult } from '../../../bench/concurrentWriters.js';
import type { SequentialResult } from '../../../bench/sequentialPushes.js';
import { evaluateTargets } from '../../../bench/targets.js';
import { benchResultsWith } from '../../helpers/benchResults.js';

const sequential = (server: string, latencies: number[]) =>
  ({ server, pushes: latencies.length, latencies, failures: 0 }) as unknown as SequentialResult;
const writers = (server: string, count: number, wallMs: number) =>
  ({
    server,
    writers: count,
    succeeded: count,
    landed: count,
    lost: 0,
    wallMs,
    latencies: [],
  }) as unknown as WritersResult;

describe('the push targets', () => {
  it('holds pushes to the peer: p50 and spread at most its own, at most 2 round trips over it at 30 ms', () => {
    const rows = evaluateTargets(
      benchResultsWith({
        sequential: [
          sequential('peer', [90, 100, 110]),
          sequential('narwal', [95, 101, 107]),
          sequential('narwal-30ms', [140, 155, 170]),
        ],
      }),
    );
    expect(rows.map((r) => [r.target, r.pass, r.miss])).toEqual([
      ['sequential push p50, 0 ms store latency', false, '1% over'],
      ['sequential push standard deviation', true, ''],
      ['sequential push p50, 30 ms store latency', true, ''],
    ]);
    expect(rows[2]?.measured).toBe('155 ms, 55 ms over peer = 1.8 round trips');
    const slow = evaluateTargets(
      benchResultsWith({
        sequential: [sequential('peer', [90, 100, 110]), sequential('narwal-30ms', [180, 190, 200])],
      }),
    );
    expect(slow[0]).toMatchObject({ pass: false, miss: '1.0 round trips (30 ms) over' });
  });

  it("compares the wall time of the most writers both servers ran with the peer's", () => {
    const rows = evaluateTargets(
      benchResultsWith({
        writers: [
          writers('peer', 50, 2000),
          writers('peer', 150, 6000),
          writers('narwal', 50, 1500),
          writers('narwal', 150, 6300),
        ],
      }),
    );
    expect(rows.map((r) => [r.target, r.pass, r.miss])).toEqual([
      ['simultaneous writers on distinct branches', true, ''],
      ['150 simultaneous writers, wall time', false, '5% over'],
    ]);
    expect(rows[1]?.measured).toBe('6,300 ms vs peer 6,000 ms: 1.05x');
  });
});
