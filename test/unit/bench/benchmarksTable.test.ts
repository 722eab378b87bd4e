/**
 * The full run's targets table lives in docs/benchmarks.md, and bench/report.ts writes it there,
 * between the doc's markers, with its link to the report relative to the doc.
 */
import { copyFile, mkdir, mkdtemp, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { TABLE_END, TABLE_START, updateTable } from '../../../bench/report.js';

const ROOT = resolve(import.meta.dirname, '../../..');
const count = (text: string, marker: string) => text.split(marker).length - 1;

describe('the targets table', () => {
  it('has its place in docs/benchmarks.md, and only there', async () => {
    const doc = await readFile(join(ROOT, 'docs/benchmarks.md'), 'utf8');
    const readme = await readFile(join(ROOT, 'README.md'), 'utf8');
    expect([count(doc, TABLE_START), count(doc, TABLE_END)]).toEqual([1, 1]);
    expect(doc.indexOf(TABLE_START)).toBeLessThan(doc.indexOf(TABLE_END));
    expect([count(readme, TABLE_START), count(readme, TABLE_END)]).toEqual([0, 0]);
  });

  it('is written between the markers, the report linked from where the doc is', async () => {
    const root = await mkdtemp(join(tmpdir(), 'narwal-bench-doc-'));
    await mkdir(join(root, 'docs'));
    await copyFile(join(ROOT, 'docs/benchmarks.md'), join(root, 'docs/benchmarks.md'));
    const table = '| target | result |\n| --- | --- |\n| pushes | pass |';
    await updateTable(
      join(root, 'docs/benchmarks.md'),
      { startedAt: '2026-12-05T10:00:00.000Z', narwal: { commit: 'abcdef1234567' }, machine: { nproc: 2 } },
      table,
      join(root, 'bench/results/2026-12-05T10-00-00Z.md'),
    );
    const written = await readFile(join(root, 'docs/benchmarks.md'), 'utf8');
    const section = written.slice(written.indexOf(TABLE_START), written.indexOf(TABLE_END));
    expect(section).toContain(
      'Latest full run (2026-12-05, narwal abcdef1, 2 shared CPUs; report with charts: [bench/results/2026-12-05T10-00-00Z.md](../bench/results/2026-12-05T10-00-00Z.md)):',
    );
    expect(section).toContain('| pushes | pass   |');
    expect(written.slice(written.indexOf(TABLE_END))).toContain('## Chaos runs');
  });
});
