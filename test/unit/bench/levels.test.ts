import { describe, expect, it } from 'vitest';
import type { StormResult } from '../../../bench/cloneStorm.js';
import { pooled, runLevels } from '../../../bench/levels.js';
import type { BenchServer } from '../../../bench/servers.js';

function storm(server: string, workers: number, clones: number, elapsedMs: number): StormResult {
  return {
    server,
    client: 'wire',
    workers,
    protocol: 2,
    clones,
    failures: 0,
    elapsedMs,
    cloneMs: Array.from({ length: clones }, () => 10),
    serverCpu: { self: 1, children: 0.5 },
    clientCpu: { self: 0.25, children: 0 },
    machineCpu: 2,
    cpus: 2,
    otherCpu: 0.1,
  };
}

const server = (name: string) => ({ name }) as BenchServer;

describe('clone storm levels', () => {
  it('pools storms as one: every clone over all their time', () => {
    const a = storm('narwal', 10, 100, 2000);
    const b = { ...storm('narwal', 10, 50, 2000), failures: 2, firstError: 'cut short' };
    const p = pooled([a, b]);
    expect(p.clones).toBe(150);
    expect(p.cloneMs).toHaveLength(150);
    expect(p.elapsedMs).toBe(4000);
    expect(p.failures).toBe(2);
    expect(p.firstError).toBe('cut short');
    expect(p.serverCpu).toEqual({ self: 2, children: 1 });
    expect(p.machineCpu).toBe(4);
    expect(() => pooled([])).toThrow();
  });

  it('runs the plan round after round, rotating who goes first, and pools each level', async () => {
    const ran: string[] = [];
    let n = 0;
    const { results } = await runLevels(
      [
        { workers: 10, protocol: 2, clones: 5 },
        { workers: 20, protocol: 2, clones: 5 },
      ],
      {
        servers: [server('peer'), server('narwal')],
        storm: async (s, level) => {
          ran.push(`${s.name}@${level.workers}`);
          n++;
          return storm(s.name, level.workers, 10 * n, 1000);
        },
        maxOther: 1,
        retries: 0,
        rounds: 2,
        idleWaitMs: 0,
        quietWindowMs: 1,
        signal: new AbortController().signal,
        log: () => {},
      },
    );
    expect(ran).toEqual([
      'peer@10',
      'narwal@10',
      'narwal@20',
      'peer@20',
      'narwal@10',
      'peer@10',
      'peer@20',
      'narwal@20',
    ]);
    expect(results.map((l) => l.workers)).toEqual([10, 20]);
    // Level 10: peer ran 1st and 6th (10 and 60 clones), narwal 2nd and 5th (20 and 50).
    expect(results[0]?.rounds).toEqual({ peer: [10, 60], narwal: [20, 50] });
    expect(results[0]?.storms.peer?.clones).toBe(70);
    expect(results[0]?.storms.peer?.elapsedMs).toBe(2000);
    expect(results[1]?.rounds).toEqual({ narwal: [30, 80], peer: [40, 70] });
  });
});
