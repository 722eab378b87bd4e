/**
 * What a node does once before it takes requests, so that the first person to open a repository
 * page does not wait for it: load the Markdown, sanitizing and highlighting libraries (tens of
 * milliseconds each to load), run each once, and make one cat-file round trip.
 */
import type { GitRunner } from '../git/GitRunner.js';
import { CatFile } from './CatFile.js';
import { highlight, preloadHighlighter } from './highlight.js';
import { preloadMarkdown, renderMarkdown } from './markdown.js';

export async function warmUpBrowse(git: GitRunner, emptyRepo: string): Promise<void> {
  await Promise.all([preloadMarkdown(), preloadHighlighter()]);
  await renderMarkdown('# narwal\n\nA [link](docs/a.md), `code`, ![image](a.png).\n', {
    blob: '/r/-/blob/main',
    raw: '/r/-/raw/main',
    dir: '',
  });
  await highlight('export const answer: number = 42;\n', 'ts');
  const catFile = new CatFile(await git.spawn(['--git-dir', emptyRepo, 'cat-file', '--batch-command']));
  try {
    await catFile.info('HEAD');
  } finally {
    catFile.close();
  }
}
