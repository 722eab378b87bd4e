/**
 * The entries under a directory that a running server changes meanwhile, such as its cache, where
 * generations are built in `.build-*` directories that are renamed or removed when done.
 * `readdir(root, { recursive: true })` fails with ENOENT when a directory goes between being listed
 * and being read; here such a directory is skipped, as a listing made a moment later would not
 * show it.
 */
import type { Dirent } from 'node:fs';
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';

export interface TreeEntry {
  /** Relative to the root, with `/` between names. */
  readonly path: string;
  readonly directory: boolean;
}

export async function liveTree(root: string): Promise<TreeEntry[]> {
  const entries: TreeEntry[] = [];
  async function walk(relative: string): Promise<void> {
    let names: Dirent[];
    try {
      names = await readdir(join(root, relative), { withFileTypes: true });
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (relative !== '' && (code === 'ENOENT' || code === 'ENOTDIR')) return;
      throw error;
    }
    for (const entry of names) {
      const path = relative === '' ? entry.name : `${relative}/${entry.name}`;
      entries.push({ path, directory: entry.isDirectory() });
      if (entry.isDirectory()) await walk(path);
    }
  }
  await walk('');
  return entries;
}

/** The relative paths of every entry under `root` (see liveTree). */
export async function livePaths(root: string): Promise<string[]> {
  return (await liveTree(root)).map((entry) => entry.path);
}
