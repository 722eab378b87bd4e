/**
 * The full run's targets table is shown by the README and by docs/benchmarks.md, and bench/report.ts
 * writes it into both, between each document's markers, with its link to the report relative to it.
 */
import { copyFile, mkdir, mkdtemp, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { TABLE_END, TABLE_START, updateTable } from '../../../bench/report.js';

const ROOT = resolve(import.meta.dirname, '../../..');
const count = (text: string, marker: string) => text.split(marker).length - 1;

describe('the targets table', () => {
  it('has one place in the README and one in docs/benchmarks.md, the same table in both', async () => {
    const tableOf = (text: string) =>
      text.slice(text.indexOf(TABLE_START), text.indexOf(TABLE_END)).replaceAll('../bench/', 'bench/');
    const doc = await readFile(join(ROOT, 'docs/benchmarks.md'), 'utf8');
    const readme = await readFile(join(ROOT, 'README.md'), 'utf8');
    for (const text of [doc, readme]) {
      expect([count(text, TABLE_START), count(text, TABLE_END)]).toEqual([1, 1]);
      expect(text.indexOf(TABLE_START)).toBeLessThan(text.indexOf(TABLE_END));
    }
    expect(tableOf(readme)).toBe(tableOf(doc));
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
