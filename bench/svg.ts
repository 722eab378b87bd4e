/** Small self-contained SVG line charts for the report (no library: the numbers are the content). */

export interface Series {
  readonly name: string;
  readonly points: readonly (readonly [number, number])[];
}

export interface ChartOptions {
  readonly title: string;
  readonly xLabel: string;
  readonly yLabel: string;
  readonly series: readonly Series[];
  /** Draw a dot at every point (for few points, e.g. throughput per worker count). */
  readonly dots?: boolean;
  readonly logX?: boolean;
  readonly yFrom0?: boolean;
  readonly width?: number;
  readonly height?: number;
}

const COLORS = ['#1f77b4', '#d62728', '#2ca02c', '#9467bd', '#ff7f0e', '#8c564b'];

export function lineChart(options: ChartOptions): string {
  const width = options.width ?? 640;
  const height = options.height ?? 360;
  const m = { left: 64, right: 16, top: 32, bottom: 64 };
  const all = options.series
    .flatMap((s) => s.points)
    .filter(([x, y]) => Number.isFinite(x) && Number.isFinite(y));
  const tx = (x: number) => (options.logX ? Math.log10(Math.max(x, 1e-9)) : x);
  const xs = all.map(([x]) => tx(x));
  const ys = all.map(([, y]) => y);
  const [x0, x1] = range(xs.length ? Math.min(...xs) : 0, xs.length ? Math.max(...xs) : 1);
  const [y0, y1] = range(
    options.yFrom0 === false && ys.length ? Math.min(...ys) : 0,
    ys.length ? Math.max(...ys) : 1,
  );
  const px = (x: number) => m.left + ((tx(x) - x0) / (x1 - x0)) * (width - m.left - m.right);
  const py = (y: number) => height - m.bottom - ((y - y0) / (y1 - y0)) * (height - m.top - m.bottom);
  const parts: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="sans-serif" font-size="12">`,
    `<rect width="100%" height="100%" fill="white"/>`,
    `<text x="${width / 2}" y="18" text-anchor="middle" font-size="14">${esc(options.title)}</text>`,
  ];
  for (const t of ticks(y0, y1)) {
    parts.push(
      `<line x1="${m.left}" x2="${width - m.right}" y1="${py(t).toFixed(1)}" y2="${py(t).toFixed(1)}" stroke="#ddd"/>`,
      `<text x="${m.left - 6}" y="${(py(t) + 4).toFixed(1)}" text-anchor="end">${fmt(t)}</text>`,
    );
  }
  const xTicks = options.logX ? ticks(x0, x1).map((t) => 10 ** t) : ticks(x0, x1);
  for (const t of xTicks) {
    parts.push(
      `<line x1="${px(t).toFixed(1)}" x2="${px(t).toFixed(1)}" y1="${m.top}" y2="${height - m.bottom}" stroke="#eee"/>`,
      `<text x="${px(t).toFixed(1)}" y="${height - m.bottom + 16}" text-anchor="middle">${fmt(t)}</text>`,
    );
  }
  parts.push(
    `<line x1="${m.left}" x2="${width - m.right}" y1="${height - m.bottom}" y2="${height - m.bottom}" stroke="#333"/>`,
    `<line x1="${m.left}" x2="${m.left}" y1="${m.top}" y2="${height - m.bottom}" stroke="#333"/>`,
    `<text x="${(m.left + width - m.right) / 2}" y="${height - m.bottom + 34}" text-anchor="middle">${esc(options.xLabel)}</text>`,
    `<text transform="translate(16 ${(m.top + height - m.bottom) / 2}) rotate(-90)" text-anchor="middle">${esc(options.yLabel)}</text>`,
  );
  options.series.forEach((s, i) => {
    const color = COLORS[i % COLORS.length];
    const pts = s.points.filter(([x, y]) => Number.isFinite(x) && Number.isFinite(y));
    if (pts.length > 0) {
      const d = pts
        .map(([x, y], k) => `${k === 0 ? 'M' : 'L'}${px(x).toFixed(1)} ${py(y).toFixed(1)}`)
        .join(' ');
      parts.push(`<path d="${d}" fill="none" stroke="${color}" stroke-width="1.8"/>`);
      if (options.dots)
        for (const [x, y] of pts)
          parts.push(`<circle cx="${px(x).toFixed(1)}" cy="${py(y).toFixed(1)}" r="3" fill="${color}"/>`);
    }
    const lx = m.left + 8 + i * Math.floor((width - m.left - m.right) / Math.max(options.series.length, 1));
    parts.push(
      `<rect x="${lx}" y="${height - 18}" width="12" height="3" fill="${color}"/>`,
      `<text x="${lx + 16}" y="${height - 13}">${esc(s.name)}</text>`,
    );
  });
  parts.push('</svg>');
  return `${parts.join('\n')}\n`;
}

/** The empirical distribution of samples: x = value, y = share of samples at or below it. */
export function cdf(values: readonly number[]): [number, number][] {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted.map((v, i) => [v, (i + 1) / sorted.length]);
}

/** A rolling median of samples in order (window `w`), to show drift along a long run. */
export function rollingMedian(values: readonly number[], w: number): [number, number][] {
  const out: [number, number][] = [];
  const step = Math.max(1, Math.floor(w / 4));
  for (let i = 0; i + w <= values.length; i += step) {
    const slice = [...values.slice(i, i + w)].sort((a, b) => a - b);
    out.push([i + w, slice[Math.floor(slice.length / 2)] ?? Number.NaN]);
  }
  return out;
}

function range(lo: number, hi: number): [number, number] {
  if (hi > lo) return [lo, hi + (hi - lo) * 0.05];
  return [lo - 1, hi + 1];
}

function ticks(lo: number, hi: number): number[] {
  const span = hi - lo;
  const raw = span / 5;
  const mag = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 5, 10].map((f) => f * mag).find((s) => span / s <= 6) ?? 10 * mag;
  const out: number[] = [];
  for (let t = Math.ceil(lo / step) * step; t <= hi + 1e-9; t += step) out.push(Number(t.toPrecision(12)));
  return out;
}

function fmt(v: number): string {
  if (Math.abs(v) >= 1000) return Math.round(v).toLocaleString('en-US');
  return Number(v.toPrecision(3)).toString();
}

function esc(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}
