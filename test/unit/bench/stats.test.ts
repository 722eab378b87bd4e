import { describe, expect, it } from 'vitest';
import { sequentialRounds } from '../../../bench/logPage.js';
import { covered, keyKind } from '../../../bench/pushProfile.js';
import { percentile, quarterMedians, standardDeviation, summarizeLatencies } from '../../../bench/stats.js';
import { cdf, lineChart, rollingMedian } from '../../../bench/svg.js';

describe('bench statistics', () => {
  it('takes nearest-rank percentiles', () => {
    const values = [5, 1, 4, 2, 3, 10, 9, 8, 7, 6];
    expect(percentile(values, 50)).toBe(5);
    expect(percentile(values, 90)).toBe(9);
    expect(percentile(values, 100)).toBe(10);
    expect(percentile([], 50)).toBeNaN();
  });

  it('computes the population standard deviation', () => {
    expect(standardDeviation([2, 4, 4, 4, 5, 5, 7, 9])).toBe(2);
  });

  it('takes the median of each quarter in the order of the samples', () => {
    const values = [1, 2, 3, 10, 11, 12, 20, 21, 22, 30, 31, 32];
    expect(quarterMedians(values)).toEqual([2, 11, 21, 31]);
    expect(summarizeLatencies(values).quarters).toEqual([2, 11, 21, 31]);
  });
});

describe('store round trips of a trace', () => {
  it('counts spans that ran one after another, not those that overlapped', () => {
    // An index read, then three uploads side by side, then the CAS.
    const spans = [
      { start: 0, ms: 30 },
      { start: 31, ms: 30 },
      { start: 32, ms: 30 },
      { start: 33, ms: 31 },
      { start: 70, ms: 30 },
    ];
    expect(sequentialRounds(spans)).toBe(3);
    expect(covered(spans)).toBe(30 + 33 + 30);
    expect(sequentialRounds([])).toBe(0);
    expect(covered([])).toBe(0);
  });

  it('names keys by their kind', () => {
    expect(keyKind('repos/me/x.git/index.json')).toBe('index.json');
    expect(keyKind('repos/me/x.git/packs/pack-1.pack')).toBe('packs/');
    expect(keyKind('tokens/abc.json')).toBe('tokens');
  });
});

describe('charts', () => {
  it('draws every series as a path with its name', () => {
    const svg = lineChart({
      title: 'a < b',
      xLabel: 'x',
      yLabel: 'y',
      series: [
        { name: 'peer', points: cdf([3, 1, 2]) },
        {
          name: 'narwal',
          points: [
            [1, 1],
            [2, Number.NaN],
            [3, 2],
          ],
        },
      ],
    });
    expect(svg.startsWith('<svg')).toBe(true);
    expect(svg).toContain('a &lt; b');
    expect(svg.match(/<path /g)).toHaveLength(2);
    expect(svg).toContain('>peer<');
    expect(svg).not.toContain('NaN');
  });

  it('builds a distribution and a rolling median', () => {
    expect(cdf([3, 1, 2])).toEqual([
      [1, 1 / 3],
      [2, 2 / 3],
      [3, 1],
    ]);
    expect(rollingMedian([1, 2, 3, 4, 5, 6, 7, 8], 4)).toEqual([
      [4, 3],
      [5, 4],
      [6, 5],
      [7, 6],
      [8, 7],
    ]);
  });
});
