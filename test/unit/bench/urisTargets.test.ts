import { describe, expect, it } from 'vitest';
import type { UrisClone } from '../../../bench/packfileUris.js';
import { evaluateTargets } from '../../../bench/targets.js';
import { benchResultsWith } from '../../helpers/benchResults.js';

const clone = (functionMs: number, initMs = 0): UrisClone => ({
  functionBytes: 2_000,
  functionMs,
  initMs,
  packBytes: 1_000_000,
  wallMs: 300,
  calls: [],
});

describe('the packfile-uris targets', () => {
  it('holds the later clones and the first clone of a state each to 100 ms, the cold start apart', () => {
    const rows = evaluateTargets(
      benchResultsWith({
        uris: { repos: [{ name: 'fixture', first: clone(140, 25), clones: [clone(8), clone(12)] }] },
      }),
    );
    expect(rows.map((r) => [r.target, r.pass])).toEqual([
      ['packfile-uris clone of the fixture (1.0 MB): bytes through the function', true],
      ['packfile-uris clone of the fixture (1.0 MB): function time', true],
      ['packfile-uris clone of the fixture (1.0 MB): function time of the first clone of a state', false],
    ]);
    expect(rows[1]?.measured).toMatch(/^10 ms/);
    expect(rows[2]).toMatchObject({ miss: '40 ms over' });
    expect(rows[2]?.measured).toMatch(/^140 ms .*cold start before it 25 ms, reported apart/);
  });
});
