/**
 * The repository pages, read-only, for browsers and anything else that speaks HTTP:
 *
 *   /REPO                              home: default branch, README, clone URL, branches, tags, log
 *   /REPO/-/tree/REV[/PATH]            a directory at REV
 *   /REPO/-/blob/REV/PATH              a file at REV, highlighted
 *   /REPO/-/raw/REV/PATH               its bytes
 *   /REPO/-/commits/REV[?next=OIDS]    the commits of REV, newest first, 50 a page
 *   /REPO/-/commit/OID                 a commit and its diff
 *   /REPO/-/archive/REV.tar.gz|.zip    `git archive` of REV, streamed
 *   /REPO/-/refs                       every branch and tag with its last commit
 *
 * REV is a branch, a tag, a commit id, `@SEQ` (the default branch after log entry SEQ) or
 * `NAME@SEQ` (RepoBrowser.resolve). Read access is checked first, as for git: a repository the
 * caller may not read is "not found". Everything is read from the generation of the index just
 * read, and every page is a function of object ids or of that generation, so pages are kept in
 * memory by what they depend on and carry an ETag derived from it: a page asked again with its
 * ETag costs the index read and a 304.
 */
import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import type { Principal } from '../auth/Principal.js';
import { commitDiff } from '../browse/commitDiff.js';
import { isBinary, isImage, lfsPointer, RAW_HEADERS, rawContentType } from '../browse/fileKinds.js';
import type { Commit, TreeEntry } from '../browse/gitObjects.js';
import { highlight, languageFor } from '../browse/highlight.js';
import { Lru } from '../browse/Lru.js';
import { renderMarkdown } from '../browse/markdown.js';
import type { BrowseSession, RepoBrowser, Resolved } from '../browse/RepoBrowser.js';
import {
  type BlobBody,
  BROWSE_STYLE,
  blobView,
  commitsView,
  commitView,
  homeView,
  pageUrl,
  type RefRow,
  refsView,
  sorted,
  treeView,
} from '../browse/views.js';
import { childExit } from '../git/childOutput.js';
import type { GitRunner } from '../git/GitRunner.js';
import { type Html, layout, raw } from '../monitor/html.js';
import type { LoadedIndex, RepoIndex } from '../wal/types.js';
import { baseUrl } from './baseUrl.js';
import { NOT_STORED } from './cachePolicy.js';
import { htmlPage } from './errorResponse.js';
import { badRequest, methodNotAllowed, notFound } from './HttpError.js';
import { type HistoryRouteDeps, readable } from './historyAccess.js';
import type { CoreRequest, CoreResponse } from './types.js';

export interface BrowseRouteDeps extends HistoryRouteDeps {
  readonly browse: RepoBrowser;
  readonly git: GitRunner;
  /** Rendered page contents, by what they depend on. */
  readonly browsePages: Lru<string>;
}

export const BROWSE_KINDS = ['tree', 'blob', 'raw', 'commits', 'commit', 'archive', 'refs'] as const;
export type BrowseKind = (typeof BROWSE_KINDS)[number] | 'home';

/** Bumped when what pages show changes, so that no ETag of an older rendering matches. */
const RENDERING = 'b1';
const COMMITS_PER_PAGE = 50;
/** Files larger than this are not shown in a page (the raw download has them). */
const MAX_SHOWN_BYTES = 1024 * 1024;
/** ...and larger than this are shown without highlighting. */
const MAX_HIGHLIGHT_BYTES = 256 * 1024;
/** Raw files up to this size are read through the open cat-file; larger ones are streamed. */
const MAX_BUFFERED_RAW = 1024 * 1024;
/** Refs whose commits the home and refs pages read (sorted by date); past it, by name. */
const MAX_DATED_REFS = 500;
const HOME_REFS = 10;
/** Entries a tree page lists (a generated directory may hold a hundred thousand). */
const MAX_TREE_ENTRIES = 5_000;
const HOME_ENTRIES = 10;
const README = /^readme(\.(md|markdown|txt|rst|org|adoc))?$/i;

/** A page cache of `maxBytes` of rendered contents. */
export function browsePageCache(maxBytes: number): Lru<string> {
  return new Lru<string>(maxBytes, (page) => page.length * 2);
}

/** Whether `/REPO/-/ACTION` is a repository page; `rest` is what follows the kind. */
export function browseAction(action: string): { kind: BrowseKind; rest: string[] } | null {
  const [kind = '', ...rest] = action.split('/');
  if (!(BROWSE_KINDS as readonly string[]).includes(kind)) return null;
  return { kind: kind as BrowseKind, rest };
}

export async function browseRoute(
  deps: BrowseRouteDeps,
  request: CoreRequest,
  repo: string,
  page: { kind: BrowseKind; rest: string[] },
  principal: Principal | null,
): Promise<CoreResponse> {
  if (request.method !== 'GET' && request.method !== 'HEAD') throw methodNotAllowed('narwal: use GET');
  const loaded = await readable(deps, repo, principal);
  const session = await deps.browse.open(loaded);
  let keep = false;
  try {
    const context: PageContext = { deps, request, principal, loaded, session };
    switch (page.kind) {
      case 'home':
        return await home(context);
      case 'tree':
        return await tree(context, page.rest);
      case 'blob':
        return await blob(context, page.rest);
      case 'raw': {
        const answer = await rawFile(context, page.rest);
        keep = answer.keep;
        return answer.response;
      }
      case 'commits':
        return await commits(context, page.rest);
      case 'commit':
        return await commitPage(context, page.rest);
      case 'archive':
        keep = true;
        return await archive(context, page.rest);
      case 'refs':
        return await refsPage(context);
      default:
        throw notFound(`narwal: no such page ${page.kind}`);
    }
  } catch (error) {
    keep = false;
    throw error;
  } finally {
    if (!keep) session.done();
  }
}

interface PageContext {
  readonly deps: BrowseRouteDeps;
  readonly request: CoreRequest;
  readonly principal: Principal | null;
  readonly loaded: LoadedIndex;
  readonly session: BrowseSession;
}

/** What a cached page is keyed by: the repository incarnation, then what the page depends on. */
function pageKey(index: RepoIndex, ...parts: readonly string[]): string {
  return [index.repo, index.created, RENDERING, ...parts].join('\0');
}

/**
 * Caching headers. Anonymous readers of a public repository get answers shared caches may keep:
 * for good when the URL names an object id, revalidated (ETag) when it names a ref that moves.
 * Anything asked with credentials, and every page of a private repository, stays `private,
 * no-store` (cachePolicy.ts): the ETag still lets a client that kept it ask again for a 304.
 */
function cacheHeaders(ctx: PageContext, key: string, immutable: boolean): Record<string, string> {
  const user = ctx.principal?.name ?? '';
  const etag = `"${createHash('sha256').update(`${key}\0${user}`).digest('base64url').slice(0, 27)}"`;
  const shared = ctx.principal === null && ctx.loaded.index.public;
  const policy = shared
    ? { 'cache-control': immutable ? 'public, max-age=86400, immutable' : 'public, no-cache' }
    : NOT_STORED;
  return { ...policy, etag, vary: 'Authorization' };
}

function notModified(ctx: PageContext, headers: Record<string, string>): CoreResponse | null {
  const asked = ctx.request.headers['if-none-match'];
  if (asked === undefined) return null;
  const tags = asked.split(',').map((t) => t.trim().replace(/^W\//, ''));
  if (!tags.includes(headers.etag as string) && !tags.includes('*')) return null;
  return { status: 304, headers, body: Buffer.alloc(0) };
}

/** A page: from memory when rendered before, else rendered by `render` and kept. */
async function cachedPage(
  ctx: PageContext,
  title: string,
  key: string,
  immutable: boolean,
  render: () => Promise<Html>,
): Promise<CoreResponse> {
  const headers = cacheHeaders(ctx, key, immutable);
  const unchanged = notModified(ctx, headers);
  if (unchanged) return unchanged;
  let main = ctx.deps.browsePages.get(key);
  if (main === undefined) {
    main = (await render()).value;
    ctx.deps.browsePages.set(key, main);
  }
  const page = layout(title, raw(main), {
    user: ctx.principal?.name ?? null,
    style: BROWSE_STYLE,
  });
  const response = htmlPage(200, page);
  return {
    ...response,
    headers: {
      ...response.headers,
      ...headers,
      'content-security-policy':
        "default-src 'none'; style-src 'unsafe-inline'; img-src 'self'; form-action 'self'; frame-ancestors 'none'",
    },
  };
}

/** The short name a page shows for a ref: `main` for refs/heads/main, `v1` for refs/tags/v1. */
function shortRef(ref: string): string {
  return ref.replace(/^refs\/(heads|tags)\//, '');
}

async function home(ctx: PageContext): Promise<CoreResponse> {
  const { index } = ctx.loaded;
  const key = pageKey(index, 'home', String(index.seq), ctx.loaded.etag);
  return cachedPage(ctx, index.repo, key, false, async () => {
    const { session, deps } = ctx;
    const refs = await session.refs(null);
    const [entries, branches, tags] = await Promise.all([
      deps.history.log(index, { limit: HOME_ENTRIES }),
      refRows(session, refs, 'refs/heads/', HOME_REFS),
      refRows(session, refs, 'refs/tags/', HOME_REFS),
    ]);
    const headValue = refs.get(index.head);
    const headCommit = headValue ? await session.commit(headValue.peeled ?? headValue.oid) : null;
    const rev = shortRef(index.head);
    const root = headCommit ? await session.tree(headCommit.tree) : null;
    const readme = headCommit && root ? await readmeOf(ctx, root, rev, []) : null;
    const listed = root ? sorted(root).slice(0, MAX_TREE_ENTRIES) : null;
    return homeView({
      index,
      cloneUrl: `${baseUrl(deps, ctx.request)}/${index.repo}.git`,
      head: { short: rev, commit: headCommit },
      root: listed,
      readme,
      branches: branches.rows,
      tags: tags.rows,
      branchCount: branches.count,
      tagCount: tags.count,
      entries: entries.items,
    });
  });
}

async function refsPage(ctx: PageContext): Promise<CoreResponse> {
  const { index } = ctx.loaded;
  const key = pageKey(index, 'refs', String(index.seq), ctx.loaded.etag);
  return cachedPage(ctx, `${index.repo} branches and tags`, key, false, async () => {
    const refs = await ctx.session.refs(null);
    const [branches, tags] = await Promise.all([
      refRows(ctx.session, refs, 'refs/heads/', MAX_DATED_REFS),
      refRows(ctx.session, refs, 'refs/tags/', MAX_DATED_REFS),
    ]);
    return refsView(index, shortRef(index.head), branches.rows, tags.rows, {
      branches: branches.count - branches.rows.length,
      tags: tags.count - tags.rows.length,
    });
  });
}

/**
 * Up to `limit` refs under `prefix` with their commits, newest commit first. With more than
 * MAX_DATED_REFS of them only the first by name are read: the page's work stays bounded.
 */
async function refRows(
  session: BrowseSession,
  refs: ReadonlyMap<string, { oid: string; peeled?: string }>,
  prefix: string,
  limit: number,
): Promise<{ rows: RefRow[]; count: number }> {
  const names = [...refs.keys()].filter((n) => n.startsWith(prefix)).sort();
  const dated = names.length <= MAX_DATED_REFS;
  const read = dated ? names : names.slice(0, limit);
  const rows = await Promise.all(
    read.map(async (name): Promise<RefRow> => {
      const value = refs.get(name);
      const commit = value ? await session.commit(value.peeled ?? value.oid).catch(() => null) : null;
      return { name, short: name.slice(prefix.length), commit };
    }),
  );
  if (dated) rows.sort((a, b) => (b.commit?.committer.time ?? 0) - (a.commit?.committer.time ?? 0));
  return { rows: rows.slice(0, limit), count: names.length };
}

async function readmeOf(
  ctx: PageContext,
  entries: readonly TreeEntry[],
  rev: string,
  dir: readonly string[],
): Promise<{ name: string; html: string | null; text: string | null } | null> {
  const candidates = entries.filter((e) => e.kind === 'blob' && README.test(e.name));
  const chosen = candidates.find((e) => /\.(md|markdown)$/i.test(e.name)) ?? candidates[0];
  if (chosen === undefined) return null;
  const info = await ctx.session.info(chosen.oid);
  if (info === null || info.size > MAX_SHOWN_BYTES) return null;
  const object = await ctx.session.contents(chosen.oid);
  if (object === null || isBinary(object.data)) return null;
  const text = object.data.toString('utf8');
  if (!/\.(md|markdown)$/i.test(chosen.name)) return { name: chosen.name, html: null, text };
  const repo = ctx.loaded.index.repo;
  const html = await renderMarkdown(text, {
    blob: pageUrl(repo, 'blob', rev),
    raw: pageUrl(repo, 'raw', rev),
    dir: dir.join('/'),
  });
  return { name: chosen.name, html, text: null };
}

async function tree(ctx: PageContext, rest: readonly string[]): Promise<CoreResponse> {
  const resolved = await ctx.session.resolve(rest);
  const commit = await ctx.session.commit(resolved.commit);
  const { index } = ctx.loaded;
  const key = pageKey(index, 'tree', resolved.rev, commit.oid, ...resolved.path);
  return cachedPage(ctx, title(index, resolved), key, resolved.immutable, async () => {
    const target = await ctx.session.lookup(commit, resolved.path, resolved.rev);
    if (target.entry !== null && target.entry.kind !== 'tree') {
      throw notFound(
        `narwal: ${resolved.path.join('/')} is a file at ${resolved.rev}: see ${pageUrl(index.repo, 'blob', resolved.rev, resolved.path)}`,
      );
    }
    const all = await ctx.session.tree(target.oid);
    const entries = sorted(all).slice(0, MAX_TREE_ENTRIES);
    const [sizes, readme] = await Promise.all([
      ctx.session.sizes(entries),
      readmeOf(ctx, all, resolved.rev, resolved.path),
    ]);
    return treeView({
      index,
      rev: resolved.rev,
      commit,
      path: resolved.path,
      entries,
      more: all.length - entries.length,
      sizes,
      readme,
    });
  });
}

function title(index: RepoIndex, resolved: Resolved): string {
  return `${resolved.path.length > 0 ? `${resolved.path.join('/')} at ` : ''}${resolved.rev} · ${index.repo}`;
}

async function blob(ctx: PageContext, rest: readonly string[]): Promise<CoreResponse> {
  const resolved = await ctx.session.resolve(rest);
  const commit = await ctx.session.commit(resolved.commit);
  const { index } = ctx.loaded;
  if (resolved.path.length === 0) throw notFound(`narwal: name a file after ${resolved.rev}`);
  const key = pageKey(index, 'blob', resolved.rev, commit.oid, ...resolved.path);
  return cachedPage(ctx, title(index, resolved), key, resolved.immutable, async () => {
    const target = await ctx.session.lookup(commit, resolved.path, resolved.rev);
    const entry = target.entry;
    if (entry === null || entry.kind === 'tree' || entry.kind === 'submodule') {
      throw notFound(`narwal: ${resolved.path.join('/')} is not a file at ${resolved.rev}`);
    }
    const info = await ctx.session.info(entry.oid);
    if (info === null) throw notFound(`narwal: ${resolved.path.join('/')} is missing at ${resolved.rev}`);
    const name = entry.name;
    let body: BlobBody;
    if (info.size > MAX_SHOWN_BYTES) body = { kind: 'large' };
    else {
      const object = await ctx.session.contents(entry.oid);
      const data = object?.data ?? Buffer.alloc(0);
      body = await blobBody(ctx, entry, name, data, resolved);
    }
    return blobView({
      index,
      rev: resolved.rev,
      commit,
      path: resolved.path,
      oid: entry.oid,
      size: info.size,
      body,
    });
  });
}

async function blobBody(
  ctx: PageContext,
  entry: TreeEntry,
  name: string,
  data: Buffer,
  resolved: Resolved,
): Promise<BlobBody> {
  if (entry.kind === 'symlink') return { kind: 'symlink', target: data.toString('utf8') };
  const pointer = lfsPointer(data);
  if (pointer) return { kind: 'lfs', pointer };
  if (isImage(name)) return { kind: 'image' };
  if (isBinary(data)) return { kind: 'binary' };
  const text = data.toString('utf8');
  if (/\.(md|markdown)$/i.test(name)) {
    const repo = ctx.loaded.index.repo;
    const html = await renderMarkdown(text, {
      blob: pageUrl(repo, 'blob', resolved.rev),
      raw: pageUrl(repo, 'raw', resolved.rev),
      dir: resolved.path.slice(0, -1).join('/'),
    });
    return { kind: 'markdown', html };
  }
  const lines = text === '' ? 0 : text.split('\n').length - (text.endsWith('\n') ? 1 : 0);
  const highlightable = data.length <= MAX_HIGHLIGHT_BYTES;
  const language = highlightable ? await languageFor(name) : null;
  return { kind: 'text', html: await highlight(text, language), lines, highlighted: language !== null };
}

async function rawFile(
  ctx: PageContext,
  rest: readonly string[],
): Promise<{ response: CoreResponse; keep: boolean }> {
  const resolved = await ctx.session.resolve(rest);
  const commit = await ctx.session.commit(resolved.commit);
  if (resolved.path.length === 0) throw notFound(`narwal: name a file after ${resolved.rev}`);
  const target = await ctx.session.lookup(commit, resolved.path, resolved.rev);
  const entry = target.entry;
  if (entry === null || entry.kind === 'tree' || entry.kind === 'submodule') {
    throw notFound(`narwal: ${resolved.path.join('/')} is not a file at ${resolved.rev}`);
  }
  const key = pageKey(ctx.loaded.index, 'raw', entry.oid, entry.name);
  const headers = { ...cacheHeaders(ctx, key, resolved.immutable), ...RAW_HEADERS };
  const unchanged = notModified(ctx, headers);
  if (unchanged) return { response: unchanged, keep: false };
  const info = await ctx.session.info(entry.oid);
  if (info === null) throw notFound(`narwal: ${resolved.path.join('/')} is missing at ${resolved.rev}`);
  if (info.size <= MAX_BUFFERED_RAW) {
    const data = (await ctx.session.contents(entry.oid))?.data ?? Buffer.alloc(0);
    const type =
      entry.kind === 'symlink' ? 'text/plain; charset=utf-8' : rawContentType(entry.name, isBinary(data));
    return {
      response: { status: 200, headers: { ...headers, 'content-type': type }, body: data },
      keep: false,
    };
  }
  // Large: streamed from its own git process, the generation kept until it is done.
  const type = rawContentType(entry.name, true);
  const child = await ctx.deps.git.spawn(['--git-dir', ctx.session.dir, 'cat-file', 'blob', entry.oid], {
    owner: owner(ctx),
  });
  return {
    response: {
      status: 200,
      headers: { ...headers, 'content-type': type, 'content-length': String(info.size) },
      body: streamed(ctx, child),
    },
    keep: true,
  };
}

/** A git child's stdout as a body; the session is done when git exits, git killed if the client leaves. */
function streamed(ctx: PageContext, child: import('../git/ProcessSpawner.js').GitChild): Readable {
  child.stdin?.end();
  const exit = childExit(child);
  void exit.then(() => ctx.session.done());
  const body = child.stdout ?? Readable.from([]);
  body.once('close', () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
  });
  return body;
}

async function commits(ctx: PageContext, rest: readonly string[]): Promise<CoreResponse> {
  const resolved = await ctx.session.resolve(rest);
  if (resolved.path.length > 0) throw notFound('narwal: the commit list is of a whole branch, tag or commit');
  const nextParam = ctx.request.query.get('next');
  const starts = nextParam === null ? [resolved.commit] : parseStarts(nextParam);
  const { index } = ctx.loaded;
  const key = pageKey(
    index,
    'commits',
    resolved.rev,
    nextParam === null ? 'first' : 'next',
    starts.join(','),
  );
  // A later page depends only on the ids it starts from; the first on where the ref points.
  const immutable = resolved.immutable || nextParam !== null;
  return cachedPage(ctx, `commits of ${resolved.rev} · ${index.repo}`, key, immutable, async () => {
    const page = await ctx.session.walk(starts, COMMITS_PER_PAGE);
    return commitsView({
      index,
      rev: resolved.rev,
      commits: page.commits,
      next: page.next ? page.next.join(',') : null,
      later: nextParam !== null,
    });
  });
}

const MAX_STARTS = 256;

function parseStarts(value: string): string[] {
  const oids = value.split(',');
  if (oids.length > MAX_STARTS || !oids.every((o) => /^([0-9a-f]{40}|[0-9a-f]{64})$/.test(o)))
    throw badRequest('narwal: next= takes the commit ids a commit list page links to');
  return oids;
}

async function commitPage(ctx: PageContext, rest: readonly string[]): Promise<CoreResponse> {
  const [name = '', ...more] = rest;
  if (more.length > 0 || !/^[0-9a-f]{4,64}$/.test(name))
    throw notFound('narwal: /-/commit/ takes a commit id');
  const info = await ctx.session.info(name);
  const commit: Commit = await ctx.session.commit(info?.oid ?? name, name);
  const { index } = ctx.loaded;
  const key = pageKey(index, 'commit', commit.oid);
  return cachedPage(ctx, `${commit.oid.slice(0, 10)} · ${index.repo}`, key, name === commit.oid, async () => {
    const diff = await commitDiff(ctx.deps.git, ctx.session.dir, commit, { owner: owner(ctx) });
    return commitView({ index, commit, diff });
  });
}

const ARCHIVES = {
  '.tar.gz': { format: 'tar.gz', type: 'application/gzip' },
  '.zip': { format: 'zip', type: 'application/zip' },
} as const;

async function archive(ctx: PageContext, rest: readonly string[]): Promise<CoreResponse> {
  const last = rest.at(-1) ?? '';
  const suffix = (Object.keys(ARCHIVES) as (keyof typeof ARCHIVES)[]).find(
    (s) => last.endsWith(s) && last.length > s.length,
  );
  if (suffix === undefined) throw notFound('narwal: archives are REV.tar.gz or REV.zip');
  const resolved = await ctx.session.resolve([...rest.slice(0, -1), last.slice(0, -suffix.length)]);
  if (resolved.path.length > 0) throw notFound('narwal: archives are of a whole branch, tag or commit');
  const { index } = ctx.loaded;
  const key = pageKey(index, 'archive', resolved.commit, suffix);
  const headers = cacheHeaders(ctx, key, resolved.immutable);
  const unchanged = notModified(ctx, headers);
  if (unchanged) {
    ctx.session.done();
    return unchanged;
  }
  const name = `${index.repo.split('/').pop() ?? 'repo'}-${safeName(resolved.rev)}`;
  const { format, type } = ARCHIVES[suffix];
  const child = await ctx.deps.git.spawn(
    ['--git-dir', ctx.session.dir, 'archive', `--format=${format}`, `--prefix=${name}/`, resolved.commit],
    { owner: owner(ctx) },
  );
  return {
    status: 200,
    headers: {
      ...headers,
      'content-type': type,
      'content-disposition': `attachment; filename="${name}${suffix}"`,
      'x-content-type-options': 'nosniff',
    },
    body: streamed(ctx, child),
  };
}

/**
 * A revision as a file and directory name: letters, digits, `.`, `_` and `-` (a ref may hold
 * `/`, quotes or `..`, which have no place in a prefix git writes into every path of an archive).
 */
function safeName(rev: string): string {
  const name = rev
    .replace(/[^A-Za-z0-9._-]+/g, '-')
    .replace(/^[.-]+/, '')
    .replace(/\.+$/, '');
  return name === '' ? 'archive' : name.slice(0, 100);
}

function owner(ctx: PageContext): string {
  if (ctx.principal !== null) return `token:${ctx.principal.tokenId ?? ctx.principal.name}`;
  return `address:${ctx.request.remoteAddress ?? 'unknown'}`;
}
