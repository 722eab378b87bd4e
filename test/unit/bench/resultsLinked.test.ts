/**
 * bench/results/ keeps what the docs link: the reports README.md and docs/ point to, and the
 * charts those reports show. A result no doc links is history, and lives in the commit that
 * recorded it.
 */
import { execFile } from 'node:child_process';
import { readdir, readFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const ROOT = resolve(import.meta.dirname, '../../..');
const RESULTS = 'bench/results/';

/** The files under bench/results/ that `markdown` links, relative to bench/results/. */
function linkedResults(markdown: string): string[] {
  return [...markdown.matchAll(/\]\((?:\.\.\/)?bench\/results\/([^)\s#]+)\)/g)].map((m) => m[1] as string);
}

describe('bench/results', () => {
  it('holds exactly what the docs link, and what the linked reports show', async () => {
    const docs = ['README.md', ...(await readdir(join(ROOT, 'docs'))).map((n) => `docs/${n}`)];
    const linked = new Set<string>();
    for (const doc of docs.filter((d) => d.endsWith('.md')))
      for (const file of linkedResults(await readFile(join(ROOT, doc), 'utf8'))) linked.add(file);
    for (const report of [...linked].filter((f) => f.endsWith('.md'))) {
      const text = await readFile(join(ROOT, RESULTS, report), 'utf8');
      for (const [, file] of text.matchAll(/\]\(([^)\s/#]+\.(?:svg|json|md))\)/g)) if (file) linked.add(file);
    }
    const { stdout } = await promisify(execFile)('git', ['ls-files', RESULTS], { cwd: ROOT });
    const tracked = stdout
      .split('\n')
      .filter((l) => l !== '')
      .map((l) => l.slice(RESULTS.length));
    expect(tracked.sort(), 'tracked under bench/results/').toEqual([...linked].sort());
  });
});
