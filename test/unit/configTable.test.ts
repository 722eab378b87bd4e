/**
 * The README's configuration table lists every setting the code reads: each `NARWAL_*` name in
 * lib/, bin/ and functions/, and every variable lib/config.ts reads by name (HOST, PORT, AWS_*).
 * A setting added to the code without a row fails here, and so does a row for a setting the code
 * no longer reads.
 */
import { readdir, readFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = resolve(import.meta.dirname, '../..');

/** Variables narwal sets for the git processes it starts (its hooks read them): not settings. */
const FOR_CHILDREN = new Set(['NARWAL_CLONE_KEY']);

async function sources(dir: string): Promise<string[]> {
  const entries = await readdir(join(ROOT, dir), { recursive: true, withFileTypes: true });
  return entries
    .filter((e) => e.isFile() && /\.(ts|mjs|js)$/.test(e.name))
    .map((e) => join(e.parentPath, e.name));
}

async function settingsInCode(): Promise<Set<string>> {
  const names = new Set<string>();
  for (const dir of ['lib', 'bin', 'functions']) {
    for (const file of await sources(dir)) {
      const text = await readFile(file, 'utf8');
      for (const [name] of text.matchAll(/\bNARWAL_[A-Z0-9_]+/g))
        if (!FOR_CHILDREN.has(name)) names.add(name);
    }
  }
  const config = await readFile(join(ROOT, 'lib/config.ts'), 'utf8');
  for (const [, name] of config.matchAll(
    /\b(?:optional|required|integer|signedInteger|flag|optionalPath)\(\s*env,\s*'([A-Z0-9_]+)'/g,
  ))
    if (name) names.add(name);
  for (const [, name] of config.matchAll(/\benv\.([A-Z][A-Z0-9_]+)/g)) if (name) names.add(name);
  return names;
}

async function settingsInReadme(): Promise<Set<string>> {
  const readme = await readFile(join(ROOT, 'README.md'), 'utf8');
  const section = readme.split(/^## Configuration$/m)[1]?.split(/^## /m)[0] ?? '';
  const names = new Set<string>();
  for (const line of section.split('\n')) {
    const first = /^\|([^|]*)\|/.exec(line)?.[1] ?? '';
    for (const [, name] of first.matchAll(/`([A-Z][A-Z0-9_]+)`/g)) if (name) names.add(name);
  }
  return names;
}

describe('the configuration table', () => {
  it('lists every setting the code reads, and nothing else', async () => {
    const [code, readme] = await Promise.all([settingsInCode(), settingsInReadme()]);
    expect(code.size).toBeGreaterThan(40);
    expect(
      [...code].filter((name) => !readme.has(name)).sort(),
      'read by the code, missing from the README',
    ).toEqual([]);
    expect([...readme].filter((name) => !code.has(name)).sort(), 'in the README, read by no code').toEqual(
      [],
    );
  });

  it('leaves out only what narwal passes to its own git hooks', async () => {
    for (const name of FOR_CHILDREN) {
      const hooks = await readFile(join(ROOT, 'lib/git/packCacheHook.ts'), 'utf8');
      expect(hooks).toContain(name);
    }
  });
});
