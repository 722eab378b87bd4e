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

  it('holds the first clone of a pushed state to 100 ms, and says how long its plans took ahead', () => {
    const rows = evaluateTargets(
      benchResultsWith({
        uris: {
          repos: [
            {
              name: 'fixture',
              first: clone(90),
              clones: [clone(10)],
              afterPush: { ...clone(30), aheadMs: 62 },
            },
            {
              name: 'large',
              first: clone(60),
              clones: [clone(10)],
              afterPush: { ...clone(120), aheadMs: null },
            },
          ],
        },
      }),
    );
    const pushed = rows.filter((r) => r.target.endsWith('first clone of a pushed state'));
    expect(pushed.map((r) => r.pass)).toEqual([true, false]);
    expect(pushed[0]?.measured).toBe(
      "30 ms (2,000 bytes; its plans made ahead by the push's prewarm in 62 ms)",
    );
    expect(pushed[1]).toMatchObject({ miss: '20 ms over' });
    expect(pushed[1]?.measured).toMatch(/no plan was made ahead/);
  });
});
