/**
 * The repository pages' HTML, as pure functions of what RepoBrowser read. Every value goes
 * through the `html` template's escaping; the only markup taken as it is comes from
 * highlight.js (escaped text and its own spans) and from the sanitized README (markdown.ts).
 *
 * A view returns the page's main content only: the route caches it by what it depends on (object
 * ids, a generation) and wraps it in the layout, which names the signed-in user, per request.
 */
import { type Html, html, plural, raw, shortOid } from '../monitor/html.js';
import { logRows } from '../monitor/pages.js';
import type { LogItem, RepoIndex } from '../wal/types.js';
import type { CommitDiff, FileChange } from './commitDiff.js';
import type { LfsPointer } from './fileKinds.js';
import type { Commit, Signature, TreeEntry } from './gitObjects.js';
import { subjectOf } from './gitObjects.js';
import { HIGHLIGHT_STYLE } from './highlight.js';

export const BROWSE_STYLE = `
nav.tabs { display: flex; flex-wrap: wrap; gap: 0.25rem 1rem; margin: -0.25rem 0 0.75rem; }
nav.tabs a { text-decoration: none; }
nav.tabs a.on { font-weight: 700; color: inherit; }
.crumbs { font: 0.95em ui-monospace, monospace; margin: 0.5rem 0; word-break: break-all; }
table.files td.name { word-break: break-all; }
table.files td.size, table.files td.mode { white-space: nowrap; width: 1%; color: var(--muted); font: 0.85em ui-monospace, monospace; }
.blob { display: flex; border: 1px solid var(--line); border-radius: 6px; overflow-x: auto; font: 0.85em/1.45 ui-monospace, monospace; }
.blob pre { margin: 0; padding: 0.5rem; }
.blob pre.lines { text-align: right; color: var(--muted); user-select: none; border-right: 1px solid var(--line); }
.blob pre.lines a { color: inherit; text-decoration: none; }
.blob pre.code { flex: 1; }
.readme { border: 1px solid var(--line); border-radius: 6px; padding: 0.25rem 1rem; margin: 1rem 0; overflow-x: auto; }
.readme img { max-width: 100%; }
.readme pre { overflow-x: auto; }
.diff { border: 1px solid var(--line); border-radius: 6px; margin: 0.75rem 0; overflow-x: auto; }
.diff h3 { font: 600 0.9em ui-monospace, monospace; margin: 0; padding: 0.4rem 0.6rem; border-bottom: 1px solid var(--line); word-break: break-all; }
.diff pre { margin: 0; padding: 0.25rem 0; font: 0.82em/1.4 ui-monospace, monospace; }
.diff pre span { display: block; padding: 0 0.6rem; white-space: pre; }
.diff .add { background: rgba(46, 160, 67, 0.15); }
.diff .del { background: rgba(248, 81, 73, 0.15); }
.diff .hunk { color: var(--muted); background: rgba(84, 174, 255, 0.1); }
.diff p { margin: 0.4rem 0.6rem; }
.commit-message { white-space: pre-wrap; font: 0.9em ui-monospace, monospace; margin: 0.5rem 0; }
.num { font: 0.85em ui-monospace, monospace; white-space: nowrap; }
.num .plus { color: #1a7f37; } .num .minus { color: #cf222e; }
.preview img { max-width: 100%; border: 1px solid var(--line); }
td.when { white-space: nowrap; }
${HIGHLIGHT_STYLE}
@media (max-width: 40rem) { .blob { font-size: 0.78em; } }
`;

/** `/REPO/-/KIND/REV/PATH`, each segment percent-encoded. */
export function pageUrl(repo: string, kind: string, rev: string, path: readonly string[] = []): string {
  const segments = [...rev.split('/'), ...path].map((s) => encodeURIComponent(s));
  return `/${repo}/-/${kind}/${segments.join('/')}`;
}

export const commitUrl = (repo: string, oid: string) => `/${repo}/-/commit/${oid}`;

export interface RepoHeader {
  readonly repo: string;
  readonly public: boolean;
  /** The revision the pages browse (tabs link to it). */
  readonly rev: string;
  readonly tab: 'home' | 'files' | 'commits' | 'refs' | 'log' | 'commit';
}

function header(h: RepoHeader): Html {
  const tab = (name: RepoHeader['tab'], href: string, label: string) =>
    html`<a href="${href}" class="${h.tab === name ? 'on' : ''}">${label}</a>`;
  return html`<h1><a href="/${h.repo}">${h.repo}</a>${h.public ? html` <span class="tag">public</span>` : ''}</h1>
<nav class="tabs">${tab('home', `/${h.repo}`, 'Home')}${tab('files', pageUrl(h.repo, 'tree', h.rev), 'Files')}${tab(
    'commits',
    pageUrl(h.repo, 'commits', h.rev),
    'Commits',
  )}${tab('refs', `/${h.repo}/-/refs`, 'Branches and tags')}${tab('log', `/${h.repo}/-/log`, 'Log')}</nav>`;
}

/** `rev / a / b`, each a link to its tree. */
function crumbs(repo: string, rev: string, path: readonly string[]): Html {
  const parts = path.map(
    (name, i) =>
      html` / ${i === path.length - 1 ? name : html`<a href="${pageUrl(repo, 'tree', rev, path.slice(0, i + 1))}">${name}</a>`}`,
  );
  return html`<div class="crumbs"><a href="${pageUrl(repo, 'tree', rev)}">${rev}</a>${parts}</div>`;
}

/** A commit time in UTC, to the minute, as `git log --date=iso` would show it in UTC. */
function when(sig: Signature): Html {
  const iso = new Date(sig.time * 1000).toISOString();
  return html`<time datetime="${iso}">${iso.slice(0, 10)} ${iso.slice(11, 16)}</time>`;
}

export function formatSize(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KiB`;
  return `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
}

/** Directories first, then files, each by name (git's own order is by bytes, directories mixed). */
export function sorted(entries: readonly TreeEntry[]): TreeEntry[] {
  return [...entries].sort((a, b) => {
    const ad = a.kind === 'tree' ? 0 : 1;
    const bd = b.kind === 'tree' ? 0 : 1;
    return ad - bd || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);
  });
}

function fileRows(
  repo: string,
  rev: string,
  dir: readonly string[],
  entries: readonly TreeEntry[],
  sizes: ReadonlyMap<string, number> | null,
): Html[] {
  return sorted(entries).map((e) => {
    const path = [...dir, e.name];
    const link =
      e.kind === 'tree'
        ? html`<a href="${pageUrl(repo, 'tree', rev, path)}">${e.name}/</a>`
        : e.kind === 'submodule'
          ? html`${e.name} <span class="muted small">submodule at <span class="oid">${shortOid(e.oid)}</span></span>`
          : html`<a href="${pageUrl(repo, 'blob', rev, path)}">${e.name}</a>${e.kind === 'symlink' ? html` <span class="muted small">symlink</span>` : ''}`;
    const size = sizes?.get(e.oid);
    return html`<tr><td class="mode">${e.mode.padStart(6, '0')}</td><td class="name">${link}</td>${
      sizes ? html`<td class="size">${size === undefined ? '' : formatSize(size)}</td>` : ''
    }</tr>`;
  });
}

export interface RefRow {
  readonly name: string;
  readonly short: string;
  readonly commit: Commit | null;
}

function refTable(repo: string, rows: readonly RefRow[], kind: 'branch' | 'tag'): Html {
  if (rows.length === 0) return html`<p class="muted">None.</p>`;
  return html`<table class="refs ${kind === 'branch' ? 'branches' : 'tags'}"><tbody>${rows.map(
    (r) =>
      html`<tr><td class="ref"><a href="${pageUrl(repo, 'tree', r.short)}">${r.short}</a></td><td>${
        r.commit
          ? html`<a class="oid" href="${commitUrl(repo, r.commit.oid)}">${shortOid(r.commit.oid)}</a> ${subjectOf(r.commit.message)}`
          : ''
      }</td><td class="muted small wide">${r.commit ? r.commit.author.name : ''}</td><td class="muted small when">${
        r.commit ? when(r.commit.committer) : ''
      }</td></tr>`,
  )}</tbody></table>`;
}

export interface HomeData {
  readonly index: RepoIndex;
  readonly cloneUrl: string;
  /** The default branch's short name, and its commit (null: HEAD names no branch yet). */
  readonly head: { readonly short: string; readonly commit: Commit | null };
  readonly root: readonly TreeEntry[] | null;
  readonly readme: {
    readonly name: string;
    readonly html: string | null;
    readonly text: string | null;
  } | null;
  readonly branches: readonly RefRow[];
  readonly tags: readonly RefRow[];
  readonly branchCount: number;
  readonly tagCount: number;
  readonly entries: readonly LogItem[];
}

export function homeView(d: HomeData): Html {
  const repo = d.index.repo;
  const rev = d.head.short;
  const readme = d.readme
    ? html`<div class="readme"><h2 class="muted small">${d.readme.name}</h2>${
        d.readme.html !== null ? raw(d.readme.html) : html`<pre>${d.readme.text ?? ''}</pre>`
      }</div>`
    : '';
  const latest = d.head.commit;
  return html`${header({ repo, public: d.index.public, rev, tab: 'home' })}
<p>Clone: <code>git clone ${d.cloneUrl}</code></p>
${
  latest
    ? html`<div class="box"><a class="oid" href="${commitUrl(repo, latest.oid)}">${shortOid(latest.oid)}</a> ${subjectOf(latest.message)} <span class="muted small">${latest.author.name}, ${when(latest.committer)}</span>
<div class="small"><a href="${pageUrl(repo, 'commits', rev)}">commits on ${rev}</a> · <a href="${`${pageUrl(repo, 'archive', rev)}.tar.gz`}">.tar.gz</a> · <a href="${`${pageUrl(repo, 'archive', rev)}.zip`}">.zip</a></div></div>`
    : html`<p class="muted">The default branch (${rev}) has no commits yet.</p>`
}
${d.root ? html`<table class="files"><tbody>${fileRows(repo, rev, [], d.root, null)}</tbody></table>` : ''}
${readme}
<h2>Branches <span class="muted">(${d.branchCount})</span></h2>${refTable(repo, d.branches, 'branch')}${
    d.branchCount > d.branches.length
      ? html`<p class="small"><a href="/${repo}/-/refs">all ${plural(d.branchCount, 'branch')}</a></p>`
      : ''
  }
<h2>Tags <span class="muted">(${d.tagCount})</span></h2>${refTable(repo, d.tags, 'tag')}${
    d.tagCount > d.tags.length
      ? html`<p class="small"><a href="/${repo}/-/refs">all ${plural(d.tagCount, 'tag')}</a></p>`
      : ''
  }
<h2>Latest entries of the log</h2>${
    d.entries.length === 0
      ? html`<p class="muted">Nothing pushed yet.</p>`
      : html`<table class="log"><thead><tr><th>Entry</th><th>Who, when (UTC)</th><th>Refs</th></tr></thead><tbody>${logRows(repo, d.entries)}</tbody></table>
<p class="small"><a href="/${repo}/-/log">the whole log (${d.index.seq} ${d.index.seq === 1 ? 'entry' : 'entries'})</a></p>`
  }`;
}

export function refsView(
  index: RepoIndex,
  rev: string,
  branches: readonly RefRow[],
  tags: readonly RefRow[],
  more: { branches: number; tags: number },
): Html {
  const repo = index.repo;
  return html`${header({ repo, public: index.public, rev, tab: 'refs' })}
<h2>Branches <span class="muted">(${branches.length + more.branches})</span></h2>${refTable(repo, branches, 'branch')}${
    more.branches > 0
      ? html`<p class="muted small">and ${more.branches} more (all of them: <code>git ls-remote</code>)</p>`
      : ''
  }
<h2>Tags <span class="muted">(${tags.length + more.tags})</span></h2>${refTable(repo, tags, 'tag')}${
    more.tags > 0 ? html`<p class="muted small">and ${more.tags} more</p>` : ''
  }`;
}

export interface TreeData {
  readonly index: RepoIndex;
  readonly rev: string;
  readonly commit: Commit;
  readonly path: readonly string[];
  /** The entries shown (the first, directories first), and how many more the tree has. */
  readonly entries: readonly TreeEntry[];
  readonly more: number;
  readonly sizes: ReadonlyMap<string, number>;
  readonly readme: {
    readonly name: string;
    readonly html: string | null;
    readonly text: string | null;
  } | null;
}

export function treeView(d: TreeData): Html {
  const repo = d.index.repo;
  const c = d.commit;
  const up = d.path.length > 0 ? pageUrl(repo, 'tree', d.rev, d.path.slice(0, -1)) : null;
  return html`${header({ repo, public: d.index.public, rev: d.rev, tab: 'files' })}
${crumbs(repo, d.rev, d.path)}
<div class="box small"><a class="oid" href="${commitUrl(repo, c.oid)}">${shortOid(c.oid)}</a> ${subjectOf(c.message)} <span class="muted">${c.author.name}, ${when(c.committer)}</span>
· <a href="${pageUrl(repo, 'commits', d.rev)}">history</a> · <a href="${`${pageUrl(repo, 'archive', d.rev)}.tar.gz`}">.tar.gz</a> · <a href="${`${pageUrl(repo, 'archive', d.rev)}.zip`}">.zip</a></div>
<table class="files"><thead><tr><th>Mode</th><th>Name</th><th>Size</th></tr></thead><tbody>${
    up ? html`<tr><td class="mode"></td><td class="name"><a href="${up}">..</a></td><td></td></tr>` : ''
  }${fileRows(repo, d.rev, d.path, d.entries, d.sizes)}</tbody></table>${
    d.more > 0
      ? html`<p class="muted small">and ${d.more} more ${d.more === 1 ? 'entry' : 'entries'} (clone the repository to see them all)</p>`
      : ''
  }
${
  d.readme
    ? html`<div class="readme"><h2 class="muted small">${d.readme.name}</h2>${
        d.readme.html !== null ? raw(d.readme.html) : html`<pre>${d.readme.text ?? ''}</pre>`
      }</div>`
    : ''
}`;
}

export type BlobBody =
  | { readonly kind: 'text'; readonly html: string; readonly lines: number; readonly highlighted: boolean }
  | { readonly kind: 'markdown'; readonly html: string }
  | { readonly kind: 'image' }
  | { readonly kind: 'binary' }
  | { readonly kind: 'large' }
  | { readonly kind: 'lfs'; readonly pointer: LfsPointer }
  | { readonly kind: 'symlink'; readonly target: string };

export interface BlobData {
  readonly index: RepoIndex;
  readonly rev: string;
  readonly commit: Commit;
  readonly path: readonly string[];
  readonly oid: string;
  readonly size: number;
  readonly body: BlobBody;
}

/** Line numbers as links to themselves (`#L12`), in a column of their own beside the code. */
function lineNumbers(count: number): string {
  let out = '';
  for (let i = 1; i <= count; i++) out += `<a id="L${i}" href="#L${i}">${i}</a>\n`;
  return out;
}

export function blobView(d: BlobData): Html {
  const repo = d.index.repo;
  const rawUrl = pageUrl(repo, 'raw', d.rev, d.path);
  const body = d.body;
  let content: Html;
  switch (body.kind) {
    case 'text':
      content = html`<div class="blob"><pre class="lines">${raw(lineNumbers(body.lines))}</pre><pre class="code"><code>${raw(body.html)}</code></pre></div>`;
      break;
    case 'markdown':
      content = html`<div class="readme">${raw(body.html)}</div>`;
      break;
    case 'image':
      content = html`<div class="preview"><img src="${rawUrl}" alt="${d.path.at(-1) ?? ''}"></div>`;
      break;
    case 'binary':
      content = html`<p class="box">Binary file, ${formatSize(d.size)}: <a href="${rawUrl}">download it</a>.</p>`;
      break;
    case 'large':
      content = html`<p class="box">This file is ${formatSize(d.size)}, too large to show here: <a href="${rawUrl}">view it raw</a>.</p>`;
      break;
    case 'lfs':
      content = html`<div class="box">A <strong>Git LFS pointer</strong>: the file's ${formatSize(body.pointer.size)} are kept by an LFS server, not in this repository.
<div class="small">object <code>sha256:${body.pointer.oid}</code></div></div>`;
      break;
    case 'symlink':
      content = html`<p class="box">Symbolic link to <code>${body.target}</code></p>`;
      break;
  }
  return html`${header({ repo, public: d.index.public, rev: d.rev, tab: 'files' })}
${crumbs(repo, d.rev, d.path)}
<p class="small muted">${formatSize(d.size)}${body.kind === 'text' ? html` · ${plural(body.lines, 'line')}` : ''} · <a href="${rawUrl}">raw</a> · <a href="${pageUrl(repo, 'commits', d.rev)}">history of ${d.rev}</a> · blob <span class="oid">${shortOid(d.oid)}</span>${
    body.kind === 'text' && !body.highlighted ? ' · not highlighted' : ''
  }</p>
${content}`;
}

export interface CommitsData {
  readonly index: RepoIndex;
  readonly rev: string;
  readonly commits: readonly Commit[];
  /** The next page's start (query value), or null. */
  readonly next: string | null;
  /** Whether this is a later page (a link back to the first). */
  readonly later: boolean;
}

export function commitsView(d: CommitsData): Html {
  const repo = d.index.repo;
  const first = pageUrl(repo, 'commits', d.rev);
  return html`${header({ repo, public: d.index.public, rev: d.rev, tab: 'commits' })}
<h2>Commits on <span class="ref">${d.rev}</span></h2>
<table class="commits"><thead><tr><th>Commit</th><th>Message</th><th class="wide">Author</th><th>Date (UTC)</th></tr></thead><tbody>${d.commits.map(
    (c) =>
      html`<tr><td><a class="oid" href="${commitUrl(repo, c.oid)}">${shortOid(c.oid)}</a></td><td>${subjectOf(c.message)}</td><td class="muted small wide">${c.author.name}</td><td class="muted small when">${when(c.committer)}</td></tr>`,
  )}</tbody></table>
<nav class="pager">${d.later ? html`<a href="${first}" rel="first">newest</a>` : ''}${
    d.next !== null ? html`<a href="${`${first}?next=${d.next}`}" rel="next">older</a>` : ''
  }</nav>`;
}

export interface CommitData {
  readonly index: RepoIndex;
  readonly commit: Commit;
  readonly diff: CommitDiff;
}

function fileChangeView(repo: string, commit: Commit, f: FileChange, i: number): Html {
  const name = f.status === 'R' || f.status === 'C' ? html`${f.oldPath} → ${f.newPath}` : html`${f.newPath}`;
  const label = { A: 'added', D: 'deleted', M: 'modified', R: 'renamed', C: 'copied', T: 'type changed' }[
    f.status
  ];
  const view =
    f.status === 'D'
      ? ''
      : html` <a class="small" href="${pageUrl(repo, 'blob', commit.oid, f.newPath.split('/'))}">view</a>`;
  let body: Html;
  if (f.omitted === 'file-too-large')
    body = html`<p class="muted">Diff too large to show (${plural((f.added ?? 0) + (f.removed ?? 0), 'changed line')}).</p>`;
  else if (f.omitted === 'total-too-large')
    body = html`<p class="muted">Not shown: this commit's diff is too large in total.</p>`;
  else if (f.binary) body = html`<p class="muted">Binary file.</p>`;
  else if (f.lines.length === 0)
    body = html`<p class="muted">${f.oldMode !== f.newMode ? `Mode ${f.oldMode} → ${f.newMode}.` : 'No content change.'}</p>`;
  else {
    let out = '';
    for (const line of f.lines) {
      const c = line.charAt(0);
      const cls = c === '+' ? 'add' : c === '-' ? 'del' : c === '@' ? 'hunk' : 'ctx';
      out += `<span class="${cls}">${escapeLine(line)}</span>`;
    }
    body = html`<pre>${raw(out)}</pre>`;
  }
  return html`<div class="diff" id="f${i}"><h3>${name} <span class="muted small">${label ?? f.status}</span>${numbers(f)}${view}</h3>${body}</div>`;
}

function escapeLine(line: string): string {
  return line.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

function numbers(f: FileChange): Html {
  if (f.added === null || f.removed === null) return html``;
  return html` <span class="num"><span class="plus">+${f.added}</span> <span class="minus">−${f.removed}</span></span>`;
}

export function commitView(d: CommitData): Html {
  const repo = d.index.repo;
  const c = d.commit;
  const { files, truncated } = d.diff;
  const added = files.reduce((s, f) => s + (f.added ?? 0), 0);
  const removed = files.reduce((s, f) => s + (f.removed ?? 0), 0);
  return html`${header({ repo, public: d.index.public, rev: c.oid, tab: 'commit' })}
<h2>${subjectOf(c.message)}</h2>
<div class="box"><div>commit <span class="oid">${c.oid}</span></div>
<div>author ${c.author.name} &lt;${c.author.email}&gt; ${when(c.author)}</div>
${c.committer.name !== c.author.name || c.committer.time !== c.author.time ? html`<div class="muted">committer ${c.committer.name} ${when(c.committer)}</div>` : ''}
${c.parents.map((p) => html`<div>parent <a class="oid" href="${commitUrl(repo, p)}">${p}</a></div>`)}
<div class="small"><a href="${pageUrl(repo, 'tree', c.oid)}">files at this commit</a> · <a href="${pageUrl(repo, 'commits', c.oid)}">history from here</a> · <a href="${`${pageUrl(repo, 'archive', c.oid)}.tar.gz`}">.tar.gz</a> · <a href="${`${pageUrl(repo, 'archive', c.oid)}.zip`}">.zip</a></div></div>
<pre class="commit-message">${c.message.trimEnd()}</pre>
<p>${plural(files.length, 'file')} changed${
    truncated ? ' (at least: the diff was cut off)' : ''
  }, <span class="num"><span class="plus">+${added}</span> <span class="minus">−${removed}</span></span>${
    c.parents.length > 1 ? html` <span class="muted small">(against the first parent)</span>` : ''
  }</p>
<table class="stat"><tbody>${files.map(
    (f, i) =>
      html`<tr><td class="ref"><a href="#f${i}">${f.status === 'R' || f.status === 'C' ? `${f.oldPath} → ${f.newPath}` : f.newPath}</a></td><td>${numbers(f)}</td></tr>`,
  )}</tbody></table>
${files.map((f, i) => fileChangeView(repo, c, f, i))}${
  truncated ? html`<p class="box">The diff is too large: files after these are not shown.</p>` : ''
}`;
}
