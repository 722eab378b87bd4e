/** Summary statistics of latency samples, as the seed reports them. */

/** Nearest-rank percentile (NaN for no samples). */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length, Math.max(rank, 1)) - 1] ?? Number.NaN;
}

export function median(values: readonly number[]): number {
  return percentile(values, 50);
}

export function mean(values: readonly number[]): number {
  if (values.length === 0) return Number.NaN;
  return values.reduce((sum, v) => sum + v, 0) / values.length;
}

/** Population standard deviation. */
export function standardDeviation(values: readonly number[]): number {
  if (values.length === 0) return Number.NaN;
  const m = mean(values);
  return Math.sqrt(values.reduce((sum, v) => sum + (v - m) ** 2, 0) / values.length);
}

/**
 * The median of each quarter of the samples in the order they were taken (seed 000: "quartile
 * medians ran 763, 782, 791, 804 ms from the first entry to the thousandth").
 */
export function quarterMedians(values: readonly number[]): number[] {
  const n = values.length;
  return [0, 1, 2, 3].map((q) =>
    median(values.slice(Math.floor((q * n) / 4), Math.floor(((q + 1) * n) / 4))),
  );
}

export interface LatencySummary {
  readonly n: number;
  readonly p50: number;
  readonly p90: number;
  readonly p99: number;
  readonly mean: number;
  readonly sd: number;
  readonly min: number;
  readonly max: number;
  readonly quarters: number[];
}

export function summarizeLatencies(values: readonly number[]): LatencySummary {
  return {
    n: values.length,
    p50: percentile(values, 50),
    p90: percentile(values, 90),
    p99: percentile(values, 99),
    mean: mean(values),
    sd: standardDeviation(values),
    min: values.length ? Math.min(...values) : Number.NaN,
    max: values.length ? Math.max(...values) : Number.NaN,
    quarters: quarterMedians(values),
  };
}

/** Least-squares slope of y over x (NaN with fewer than two points). */
export function slope(points: readonly (readonly [number, number])[]): number {
  if (points.length < 2) return Number.NaN;
  const mx = mean(points.map((p) => p[0]));
  const my = mean(points.map((p) => p[1]));
  let num = 0;
  let den = 0;
  for (const [x, y] of points) {
    num += (x - mx) * (y - my);
    den += (x - mx) ** 2;
  }
  return den === 0 ? Number.NaN : num / den;
}
