/**
 * The docs name the code they describe, and the code moves: every file a doc names in backticks
 * (lib/..., bin/..., functions/..., test/..., docs/..., bench/..., scripts/..., deploy/...) must
 * exist, and every `Class#method` must name a method of that class. docs/architecture.md walks
 * through a push, a clone and a new store backend by file.
 */
import { access, readdir, readFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = resolve(import.meta.dirname, '../../..');
const PATH = /^(lib|bin|functions|test|docs|bench|scripts|deploy)\/[\w./-]+$/;
const METHOD = /^([A-Z]\w+)#(\w+)$/;

async function docs(): Promise<string[]> {
  const names = (await readdir(join(ROOT, 'docs'))).filter((n) => n.endsWith('.md'));
  return ['README.md', ...names.map((n) => `docs/${n}`)];
}

/** Backticked names in the prose and lists of a Markdown file, without its code blocks. */
function namesIn(markdown: string): string[] {
  const prose = markdown.replace(/```[\s\S]*?```/g, '');
  return [...prose.matchAll(/`([^`\n]+)`/g)].map((m) => m[1] as string);
}

async function exists(path: string): Promise<boolean> {
  return access(join(ROOT, path)).then(
    () => true,
    () => false,
  );
}

async function classFile(name: string): Promise<string | undefined> {
  const entries = await readdir(join(ROOT, 'lib'), { recursive: true, withFileTypes: true });
  const found = entries.find((e) => e.isFile() && e.name === `${name}.ts`);
  return found ? join(found.parentPath, found.name) : undefined;
}

describe('the docs', () => {
  it('name only files that exist and methods their classes have', async () => {
    const missing: string[] = [];
    for (const doc of await docs()) {
      for (const name of namesIn(await readFile(join(ROOT, doc), 'utf8'))) {
        if (PATH.test(name) && !(await exists(name.replace(/\/$/, '')))) missing.push(`${doc}: ${name}`);
        const method = METHOD.exec(name);
        if (method) {
          const file = await classFile(method[1] as string);
          const text = file ? await readFile(file, 'utf8') : '';
          if (!new RegExp(`\\b${method[2]}\\(`).test(text)) missing.push(`${doc}: ${name}`);
        }
      }
    }
    expect(missing).toEqual([]);
  });

  it('walk through a push, a clone and a new store backend by file', async () => {
    const doc = await readFile(join(ROOT, 'docs/architecture.md'), 'utf8');
    for (const title of [
      'How a push is published',
      'How a clone is served',
      'How a store backend is added',
    ]) {
      const section = doc.split(`### ${title}\n`)[1]?.split(/\n#{2,3} /)[0] ?? '';
      const files = new Set(namesIn(section).filter((n) => PATH.test(n)));
      expect(files.size, title).toBeGreaterThanOrEqual(8);
    }
  });
});
