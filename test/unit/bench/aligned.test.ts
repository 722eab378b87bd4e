/**
 * The benchmark writes its table into the README, which Biome formats (and CI checks): the
 * table must come out as Biome would format it, escaped pipes included.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { aligned } from '../../../bench/report.js';

const biome = resolve(import.meta.dirname, '../../../node_modules/.bin/biome');

describe('aligned', () => {
  it('pads every column to its widest cell, as Biome formats Markdown tables', async () => {
    const table = [
      '| target | server | measured |',
      '| --- | --- | --- |',
      '| sequential push p50 | narwal | 99 ms vs peer 84 ms: 1.18x |',
      '| a \\| b | x | - |',
    ].join('\n');
    const out = aligned(table);
    expect(out.split('\n')[1]).toBe(`| ${'-'.repeat(19)} | ------ | ${'-'.repeat(26)} |`);
    expect(out).toContain('| a \\| b              |');
    const file = join(await mkdtemp(join(tmpdir(), 'narwal-aligned-')), 'table.md');
    await writeFile(file, `${out}\n`);
    // Exits non-zero when the file is not formatted as Biome would format it.
    await expect(promisify(execFile)(biome, ['format', file])).resolves.toBeDefined();
  });
});
