/**
 * The folders of lib/ (and bin/, functions/) form layers, written down once, in
 * docs/architecture.md ("Layers"): each may import only from those listed below it. This test
 * reads that list and every import of the code (static, dynamic, type-only and re-exports alike)
 * and fails on an import that goes up or sideways, and on a folder the list does not place: a new
 * folder is placed in the list on purpose, never by default.
 */
import { readdir, readFile } from 'node:fs/promises';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = resolve(import.meta.dirname, '../../..');
const TOP_FOLDERS = ['lib', 'bin', 'functions'];

/** The layer order as docs/architecture.md writes it, top first. */
async function layerOrder(): Promise<string[]> {
  const doc = await readFile(join(ROOT, 'docs/architecture.md'), 'utf8');
  const section = doc.split(/^## Layers$/m)[1];
  if (section === undefined) throw new Error('docs/architecture.md has no "## Layers" section');
  const block = /```text\n([\s\S]*?)```/.exec(section)?.[1];
  if (block === undefined) throw new Error('the Layers section of docs/architecture.md has no text block');
  return block
    .split('\n')
    .map((line) => line.split('#')[0]?.trim() ?? '')
    .filter((line) => line !== '');
}

/** The unit a file belongs to: `lib/<folder>`, a file directly in lib/ (`lib/app.ts`), `bin`, `functions`. */
function unitOf(file: string): string {
  const parts = relative(ROOT, file).split('/');
  if (parts[0] !== 'lib') return parts[0] as string;
  return parts.length > 2 ? `lib/${parts[1]}` : `lib/${parts[1]}`;
}

async function sourceFiles(): Promise<string[]> {
  const files: string[] = [];
  for (const dir of TOP_FOLDERS) {
    const entries = await readdir(join(ROOT, dir), { recursive: true, withFileTypes: true });
    for (const e of entries) if (e.isFile() && e.name.endsWith('.ts')) files.push(join(e.parentPath, e.name));
  }
  return files;
}

/** Relative module specifiers a file imports or re-exports, statically or dynamically. */
function importsOf(text: string): string[] {
  const found: string[] = [];
  const patterns = [
    /^\s*(?:import|export)\s[^;]*?\sfrom\s+['"](\.{1,2}\/[^'"]+)['"]/gms,
    /^\s*import\s+['"](\.{1,2}\/[^'"]+)['"]/gm,
    /\bimport\(\s*['"](\.{1,2}\/[^'"]+)['"]\s*\)/g,
  ];
  for (const pattern of patterns) for (const [, spec] of text.matchAll(pattern)) if (spec) found.push(spec);
  return found;
}

interface Edge {
  readonly from: string;
  readonly to: string;
  readonly file: string;
  readonly spec: string;
}

async function edges(): Promise<Edge[]> {
  const out: Edge[] = [];
  for (const file of await sourceFiles()) {
    for (const spec of importsOf(await readFile(file, 'utf8'))) {
      const target = resolve(dirname(file), spec).replace(/\.js$/, '.ts');
      if (!TOP_FOLDERS.some((dir) => target.startsWith(join(ROOT, dir, '/')))) continue;
      const from = unitOf(file);
      const to = unitOf(target);
      if (from !== to) out.push({ from, to, file: relative(ROOT, file), spec });
    }
  }
  return out;
}

describe('the layers', () => {
  it('place every folder of lib/ (and each file directly in it) exactly once', async () => {
    const order = await layerOrder();
    const units = new Set((await sourceFiles()).map(unitOf));
    const unplaced = [...units].filter((u) => !order.includes(u)).sort();
    expect(
      unplaced,
      'not in the layer order of docs/architecture.md ("## Layers"): add each where it belongs',
    ).toEqual([]);
    expect(
      order.filter((u) => !units.has(u)),
      'in the layer order but not in the code',
    ).toEqual([]);
    expect(
      order.filter((u, i) => order.indexOf(u) !== i),
      'listed twice',
    ).toEqual([]);
  });

  it('are only ever imported downwards', async () => {
    const order = await layerOrder();
    const rank = new Map(order.map((u, i) => [u, i]));
    const upward = (await edges())
      .filter((e) => rank.has(e.from) && rank.has(e.to))
      .filter((e) => (rank.get(e.to) as number) <= (rank.get(e.from) as number))
      .map((e) => `${e.file} imports ${e.spec}: ${e.from} may not import ${e.to}`);
    expect(upward, 'imports against the layer order of docs/architecture.md').toEqual([]);
  });
});
