/**
 * What a node does once before it takes requests, so that the first person to open a repository
 * page does not wait for it: load the Markdown, sanitizing and highlighting libraries (tens of
 * milliseconds each to load), run each once, and make one cat-file round trip.
 */
import type { GitRunner } from '../git/GitRunner.js';
import { emptyIndex } from '../wal/indexCodec.js';
import { CatFile } from './CatFile.js';
import { highlight, preloadHighlighter } from './highlight.js';
import { preloadMarkdown, renderMarkdown } from './markdown.js';
import { blobView, commitsView, commitView, homeView, treeView } from './views.js';

export async function warmUpBrowse(git: GitRunner, emptyRepo: string): Promise<void> {
  await Promise.all([preloadMarkdown(), preloadHighlighter()]);
  await renderMarkdown('# narwal\n\nA [link](docs/a.md), `code`, ![image](a.png).\n', {
    blob: '/r/-/blob/main',
    raw: '/r/-/raw/main',
    dir: '',
  });
  await highlight('export const answer: number = 42;\n', 'ts');
  renderSamples();
  const catFile = new CatFile(await git.spawn(['--git-dir', emptyRepo, 'cat-file', '--batch-command']));
  try {
    await catFile.info('HEAD');
  } finally {
    catFile.close();
  }
}

/** Each view once, on made-up objects: the first real page then runs code already compiled. */
function renderSamples(): void {
  const who = { name: 'n', email: 'e', time: 0, zone: '+0000' };
  const commit = {
    oid: '0'.repeat(40),
    tree: '1'.repeat(40),
    parents: ['2'.repeat(40)],
    author: who,
    committer: who,
    message: 'm\n',
  };
  const index = emptyIndex('narwal/warm-up', { public: false, now: new Date(0) });
  const entries = [{ mode: '100644', name: 'a.ts', oid: '3'.repeat(40), kind: 'blob' as const }];
  const sizes = new Map([['3'.repeat(40), 1]]);
  const base = { index, rev: 'main', commit, path: ['a.ts'] };
  treeView({ ...base, entries, more: 0, sizes, readme: null });
  blobView({
    ...base,
    oid: '3'.repeat(40),
    size: 1,
    body: { kind: 'text', html: 'x', lines: 1, highlighted: true },
  });
  commitsView({ index, rev: 'main', commits: [commit], next: null, later: false });
  commitView({ index, commit, diff: { files: [], truncated: false } });
  homeView({
    index,
    cloneUrl: 'x',
    head: { short: 'main', commit },
    root: entries,
    readme: null,
    branches: [],
    tags: [],
    branchCount: 0,
    tagCount: 0,
    entries: [],
  });
}
