/**
 * The command line's usage is written once (bin/usage.ts): the README shows exactly what
 * `narwal --help` prints, and every command the CLI dispatches has its usage there.
 */
import { readFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { commandNames, helpText, usageOf } from '../../../bin/usage.js';

const ROOT = resolve(import.meta.dirname, '../../..');

describe('the usage', () => {
  it('in the README is what narwal --help prints (npm run build && node scripts/readme-usage.mjs)', async () => {
    const readme = await readFile(join(ROOT, 'README.md'), 'utf8');
    const block = /<!-- usage:start -->\n\n```text\n([\s\S]*?)\n```\n\n<!-- usage:end -->/.exec(readme)?.[1];
    expect(block, 'the README has a usage section between its markers').toBeDefined();
    expect(block).toBe(helpText());
  });

  it('names every command the CLI dispatches, and only those', async () => {
    const main = await readFile(join(ROOT, 'bin/narwal.ts'), 'utf8');
    const dispatched = [...main.matchAll(/case '([a-z]+)':\n\s+return \w+\(rest\);/g)].map((m) => m[1]);
    expect(dispatched.length).toBeGreaterThan(10);
    expect([...new Set(dispatched)].sort()).toEqual(commandNames().sort());
  });

  it('gives each command its own lines of the help', () => {
    const help = helpText();
    for (const name of commandNames()) {
      const lines = usageOf(name)
        .split('\n')
        .filter((l) => l.startsWith('  narwal '));
      expect(lines.length).toBeGreaterThan(0);
      for (const line of lines) expect(help).toContain(`  ${line.slice('  narwal '.length)}`);
    }
  });
});
