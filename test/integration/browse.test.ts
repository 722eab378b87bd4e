/**
 * The repository pages over HTTP, against narwal in this process, with a hostile repository
 * pushed by the real git (browseFixture.ts): what each page and download answers, the ETag and
 * caching rules, path traversal in tree and raw paths, and a private repository's pages and
 * archives refused to a token that may not read it (and to nobody at all).
 */
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { App } from '../../lib/app.js';
import {
  BIG_DIFF_LINES,
  type BrowseFixture,
  buildBrowseFixture,
  EVIL_HTML,
  EVIL_SVG,
  HISTORY_COMMITS,
  HTML_BRANCH,
  HTML_FILE_NAME,
  LFS_OID,
  LFS_POINTER,
} from '../helpers/browseFixture.js';
import { commitFile, gitOk, makeHome, workRepo } from '../helpers/gitClient.js';
import { ADMIN_TOKEN, type RunningNarwal, startInProcess } from '../helpers/narwalServer.js';
import { rawRequest } from '../helpers/rawHttp.js';

const run = promisify(execFile);
const REPO = 'team/code';
const OPEN = 'open/pub';
let server: RunningNarwal & { app: App };
let home: string;
let fixture: BrowseFixture;
let outsider: string;
let reader: string;
let openCommit: string;

const basic = (token: string) => `Basic ${Buffer.from(`me:${token}`).toString('base64')}`;
const ADMIN = basic(ADMIN_TOKEN);

async function get(
  path: string,
  headers: Record<string, string> = { authorization: ADMIN },
): Promise<{ status: number; headers: Headers; body: Buffer; text: string }> {
  const res = await fetch(`${server.url}${path}`, { headers: { accept: 'text/html', ...headers } });
  const body = Buffer.from(await res.arrayBuffer());
  return { status: res.status, headers: res.headers, body, text: body.toString('utf8') };
}

/** A request line sent as it is (fetch and browsers normalize `..` away before sending). */
async function raw(path: string, authorization = ADMIN) {
  return rawRequest(server.url, {
    head: [`GET ${path} HTTP/1.1`, 'Host: x', 'Connection: close', `Authorization: ${authorization}`].join(
      '\r\n',
    ),
    deadlineMs: 20_000,
  });
}

/**
 * Markup a page must never carry: script, frames, SVG, style or forms from the repository, event
 * handler attributes, javascript: or data: links. Text that merely reads like them is escaped, so
 * a `<` starts a real tag only.
 */
function markupAttacks(page: string): string[] {
  const main = page.slice(page.indexOf('<main>'));
  const patterns = [
    /<script/i,
    /<iframe/i,
    /<svg/i,
    /<object/i,
    /<style/i,
    /<form/i,
    /<[a-z][^>]*\son\w+\s*=/i,
    /<[a-z][^>]*(href|src)\s*=\s*"\s*(javascript|data|vbscript):/i,
  ];
  return patterns.filter((p) => p.test(main)).map(String);
}

const enc = (path: string) => path.split('/').map(encodeURIComponent).join('/');

beforeAll(async () => {
  server = await startInProcess();
  home = await makeHome();
  fixture = await buildBrowseFixture(home, `${server.authUrl}/${REPO}.git`);
  outsider = (
    await server.app.tokens.create({ name: 'outsider', grants: [{ scope: 'read', pattern: 'open/*' }] })
  ).token;
  reader = (
    await server.app.tokens.create({ name: 'reader', grants: [{ scope: 'read', pattern: 'team/*' }] })
  ).token;
  await server.app.wal.createRepo(OPEN, { public: true });
  const work = await workRepo(home, 0, 'open');
  openCommit = await commitFile(work, home, 'hello.txt', 'hello\n', 'public hello');
  await gitOk(['push', '-q', `${server.authUrl}/${OPEN}.git`, 'main'], { cwd: work, home });
  await server.app.idle();
}, 180_000);

afterAll(async () => {
  await server?.stop();
  if (home) await rm(home, { recursive: true, force: true });
  if (fixture) await rm(fixture.work, { recursive: true, force: true });
});

describe('the repository pages', () => {
  it('show the home: README rendered and sanitized, clone URL, branches, tags, latest log entries', async () => {
    const page = await get(`/${REPO}`);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/^text\/html/);
    expect(page.text).toContain(`git clone ${server.url}/${REPO}.git`);
    expect(page.text).toContain('<h1>Hostile README</h1>');
    expect(page.text).toContain(`href="/${REPO}/-/blob/main/docs/guide.md"`);
    expect(page.text).toContain(`src="/${REPO}/-/raw/main/img/logo.png"`);
    expect(markupAttacks(page.text)).toEqual([]);
    expect(page.text).toContain('&#60;em&#62;x&#60;/em&#62;');
    expect(page.text).toContain('x&#34;&#62;&#60;svg/onload=alert(1)&#62;');
    expect(page.text).toMatch(/Latest entries of the log/);
    expect(page.text).toContain(`/${REPO}/-/entry/1"`);
    expect(page.headers.get('content-security-policy')).toBe(
      "default-src 'none'; style-src 'unsafe-inline'; img-src 'self'; form-action 'self'; frame-ancestors 'none'",
    );
  });

  it('list a tree at a branch, a tag, a commit, an entry, NAME@SEQ, with sizes; names that are HTML stay text', async () => {
    const tree = await get(`/${REPO}/-/tree/main`);
    expect(tree.status).toBe(200);
    expect(tree.text).toContain(
      '&#60;img src=x onerror=&#34;window.__pwned=&#39;file name&#39;&#34;&#62;.txt',
    );
    expect(markupAttacks(tree.text)).toEqual([]);
    expect(tree.text).not.toContain('<img src=x');
    expect(tree.text).not.toContain('page.html');
    expect(tree.text).toContain('1.1 MiB');
    for (const rev of ['v1', fixture.first, '@1', 'main@1', enc(HTML_BRANCH)]) {
      const past = await get(`/${REPO}/-/tree/${rev}`);
      expect(past.status, rev).toBe(200);
      expect(past.text, rev).toContain('page.html');
      expect(past.text, rev).not.toContain('history.txt');
    }
    const deep = await get(`/${REPO}/-/tree/main/src/a/b`);
    expect(deep.text).toContain(`href="/${REPO}/-/blob/main/src/a/b/code.ts"`);
  });

  it('show a file highlighted, a markdown file rendered, and what is not text without a huge page', async () => {
    const code = await get(`/${REPO}/-/blob/main/src/a/b/code.ts`);
    expect(code.status).toBe(200);
    expect(code.text).toContain('<span class="hljs-keyword">export</span>');
    expect(code.text).toContain('id="L3"');
    const big = await get(`/${REPO}/-/blob/main/big.txt`);
    expect(big.text).toContain('too large to show here');
    expect(big.body.length).toBeLessThan(20_000);
    expect((await get(`/${REPO}/-/blob/main/bin.dat`)).text).toContain('Binary file');
    const lfs = await get(`/${REPO}/-/blob/main/lfs.bin`);
    expect(lfs.text).toContain('Git LFS pointer');
    expect(lfs.text).toContain(`sha256:${LFS_OID}`);
    expect((await get(`/${REPO}/-/blob/main/evil.svg`)).text).toContain(
      `<img src="/${REPO}/-/raw/main/evil.svg"`,
    );
    expect((await get(`/${REPO}/-/blob/main/link`)).text).toContain(
      'Symbolic link to <code>README.md</code>',
    );
    const guide = await get(`/${REPO}/-/blob/main/docs/guide.md`);
    expect(guide.text).toContain(`href="/${REPO}/-/blob/main/README.md"`);
  });

  it('serve raw bytes with the right type, HTML and SVG never able to script the site', async () => {
    const png = await get(`/${REPO}/-/raw/main/img/logo.png`);
    expect(png.headers.get('content-type')).toBe('image/png');
    expect(png.body.subarray(1, 4).toString()).toBe('PNG');
    const html = await get(`/${REPO}/-/raw/${fixture.first}/page.html`);
    expect(html.headers.get('content-type')).toBe('text/plain; charset=utf-8');
    expect(html.text).toBe(EVIL_HTML);
    const svg = await get(`/${REPO}/-/raw/main/evil.svg`);
    expect(svg.headers.get('content-type')).toBe('image/svg+xml');
    expect(svg.text).toBe(EVIL_SVG);
    for (const answer of [png, html, svg]) {
      expect(answer.headers.get('content-security-policy')).toMatch(/default-src 'none'.*sandbox/);
      expect(answer.headers.get('x-content-type-options')).toBe('nosniff');
    }
    expect((await get(`/${REPO}/-/raw/main/lfs.bin`)).text).toBe(LFS_POINTER);
    const big = await get(`/${REPO}/-/raw/main/big.txt`);
    expect(big.status).toBe(200);
    expect(big.body.equals(await readFile(join(fixture.work, 'big.txt')))).toBe(true);
    expect((await get(`/${REPO}/-/raw/main/${enc(HTML_FILE_NAME)}`)).text).toBe(
      'a file whose name is HTML\n',
    );
  });

  it('page the commit list exactly as git log orders it, 50 a page, each page from where the last stopped', async () => {
    const expected = (await gitOk(['rev-list', 'main'], { cwd: fixture.work, home })).trim().split('\n');
    expect(expected.length).toBe(HISTORY_COMMITS + 3);
    const seen: string[] = [];
    let path: string | null = `/${REPO}/-/commits/main`;
    while (path !== null) {
      const page = await get(path);
      expect(page.status).toBe(200);
      const oids = [...page.text.matchAll(/href="\/team\/code\/-\/commit\/([0-9a-f]{40})"/g)].map(
        (m) => m[1] as string,
      );
      expect(oids.length).toBeLessThanOrEqual(50);
      seen.push(...oids);
      const next = /href="([^"]*\?next=[0-9a-f,]+)" rel="next"/.exec(page.text);
      path = next ? (next[1] as string) : null;
    }
    expect(seen).toEqual(expected);
    expect((await get(`/${REPO}/-/commits/main?next=not-an-oid`)).status).toBe(400);
    // A later page that starts where the first does is still a later page (kept apart from it).
    const again = await get(`/${REPO}/-/commits/main?next=${expected[0]}`);
    expect(again.text).toContain('rel="first"');
    expect((await get(`/${REPO}/-/commits/main`)).text).not.toContain('rel="first"');
  });

  it('show a commit with its diff, a message that is HTML as text, and a file over the limit as too large', async () => {
    const message = await get(`/${REPO}/-/commit/${fixture.htmlMessage}`);
    expect(message.status).toBe(200);
    expect(message.text).toContain('fix &#60;img src=x onerror=&#34;window.__pwned');
    expect(markupAttacks(message.text)).toEqual([]);
    expect(message.text).not.toContain('<img src=x');
    expect(message.text).toContain('page.html');
    expect(message.text).toContain('deleted');
    const big = await get(`/${REPO}/-/commit/${fixture.bigDiff.slice(0, 12)}`);
    expect(big.status).toBe(200);
    expect(big.text).toContain('Diff too large to show');
    expect(big.text).toContain(`+${BIG_DIFF_LINES}`);
    expect(big.text).not.toContain('line 2999');
    const first = await get(`/${REPO}/-/commit/${fixture.first}`);
    expect(first.text).toContain('<span class="add">+export function greet(name: string): string {</span>');
    expect((await get(`/${REPO}/-/commit/${'0'.repeat(40)}`)).status).toBe(404);
  });

  it('stream archives of any revision through git archive: .tar.gz and .zip, with a safe prefix', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'narwal-archive-'));
    try {
      const tgz = await get(`/${REPO}/-/archive/main.tar.gz`);
      expect(tgz.status).toBe(200);
      expect(tgz.headers.get('content-type')).toBe('application/gzip');
      expect(tgz.headers.get('content-disposition')).toBe('attachment; filename="code-main.tar.gz"');
      await writeFile(join(dir, 'a.tar.gz'), tgz.body);
      const listing = (await run('tar', ['-tzf', join(dir, 'a.tar.gz')])).stdout.split('\n');
      expect(listing).toContain('code-main/src/a/b/code.ts');
      expect(listing).toContain('code-main/history.txt');
      const zip = await get(`/${REPO}/-/archive/@1.zip`);
      expect(zip.body.subarray(0, 2).toString()).toBe('PK');
      await writeFile(join(dir, 'a.zip'), zip.body);
      const names = (
        await run('python3', [
          '-c',
          'import sys, zipfile; print("\\n".join(zipfile.ZipFile(sys.argv[1]).namelist()))',
          join(dir, 'a.zip'),
        ])
      ).stdout;
      expect(names).toContain('code-1/page.html');
      const tag = await get(`/${REPO}/-/archive/${enc('x"><svg/onload=alert(1)>')}.tar.gz`);
      expect(tag.status).toBe(200);
      expect(tag.headers.get('content-disposition')).toBe(
        'attachment; filename="code-x-svg-onload-alert-1-.tar.gz"',
      );
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('refuse path traversal and odd paths in tree, blob and raw URLs, reading nothing outside the commit', async () => {
    const attempts = [
      `/${REPO}/-/raw/main/../../../../etc/passwd`,
      `/${REPO}/-/raw/main/%2e%2e/%2e%2e/%2e%2e/etc/passwd`,
      `/${REPO}/-/raw/main/src/..%2f..%2f..%2fetc%2fpasswd`,
      `/${REPO}/-/tree/main/..`,
      `/${REPO}/-/tree/main/src/./a`,
      `/${REPO}/-/blob/main//README.md`,
      `/${REPO}/-/raw/main/..%5c..%5cetc%5cpasswd`,
      `/${REPO}/-/raw/main/../../../${OPEN}/-/raw/main/hello.txt`,
      `/${REPO}/-/tree/../../etc`,
      `/${REPO}/-/archive/../../main.tar.gz`,
    ];
    for (const path of attempts) {
      const answer = await raw(path);
      expect([400, 404], path).toContain(answer.status);
      expect(answer.body.toString(), path).not.toMatch(/root:|hello\n/);
    }
    expect((await raw(`/${REPO}/-/tree/main/..`)).body.toString()).toContain('invalid path segment');
    expect((await get(`/${REPO}/-/raw/main/nope/x`)).status).toBe(404);
  });

  it("answer a private repository's pages and archives to nobody who may not read it, as if it did not exist", async () => {
    const paths = [
      `/${REPO}`,
      `/${REPO}/-/tree/main`,
      `/${REPO}/-/tree/main/src/a/b`,
      `/${REPO}/-/blob/main/README.md`,
      `/${REPO}/-/raw/main/README.md`,
      `/${REPO}/-/commits/main`,
      `/${REPO}/-/commit/${fixture.first}`,
      `/${REPO}/-/archive/main.tar.gz`,
      `/${REPO}/-/archive/main.zip`,
      `/${REPO}/-/refs`,
    ];
    const missing = await get('/team/none/-/tree/main', { authorization: basic(outsider) });
    expect(missing.status).toBe(404);
    for (const path of paths) {
      const refused = await get(path, { authorization: basic(outsider) });
      expect(refused.status, path).toBe(404);
      expect(refused.text.replace('team/code', 'team/none'), path).toBe(missing.text);
      const anonymous = await get(path, {});
      expect(anonymous.status, path).toBe(401);
      expect(anonymous.text, path).not.toContain('Hostile');
      expect((await get(path, { authorization: basic(reader) })).status, path).toBe(200);
    }
    // An object of the private repository asked through a public one's URL is not there.
    for (const path of [
      `/${OPEN}/-/commit/${fixture.first}`,
      `/${OPEN}/-/tree/${fixture.first}`,
      `/${OPEN}/-/archive/${fixture.first}.zip`,
    ])
      expect((await get(path, {})).status, path).toBe(404);
  });

  it('carry an ETag from the commit or generation: shared caches keep only public pages, 304 when unchanged', async () => {
    const pub = await get(`/${OPEN}/-/tree/main`, {});
    expect(pub.status).toBe(200);
    expect(pub.headers.get('cache-control')).toBe('public, no-cache');
    const etag = pub.headers.get('etag') ?? '';
    expect(etag).toMatch(/^"[\w-]+"$/);
    const again = await get(`/${OPEN}/-/tree/main`, { 'if-none-match': etag });
    expect(again.status).toBe(304);
    expect(again.body.length).toBe(0);
    const pinned = await get(`/${OPEN}/-/tree/${openCommit}`, {});
    expect(pinned.headers.get('cache-control')).toBe('public, max-age=86400, immutable');
    const signedIn = await get(`/${OPEN}/-/tree/main`, { authorization: ADMIN });
    expect(signedIn.headers.get('cache-control')).toMatch(/^private, no-store/);
    expect(signedIn.headers.get('etag')).not.toBe(etag);
    const priv = await get(`/${REPO}/-/blob/main/README.md`);
    expect(priv.headers.get('cache-control')).toMatch(/^private, no-store/);
    expect(
      (
        await get(`/${REPO}/-/blob/main/README.md`, {
          authorization: ADMIN,
          'if-none-match': priv.headers.get('etag') ?? '',
        })
      ).status,
    ).toBe(304);
    // A push moves main: the ETag of a page at main changes with it.
    const work = await workRepo(home, 0, 'open2');
    await gitOk(['fetch', '-q', `${server.authUrl}/${OPEN}.git`, 'main'], { cwd: work, home });
    await gitOk(['checkout', '-q', '-B', 'main', 'FETCH_HEAD'], { cwd: work, home });
    await commitFile(work, home, 'more.txt', 'more\n');
    await gitOk(['push', '-q', `${server.authUrl}/${OPEN}.git`, 'main'], { cwd: work, home });
    const moved = await get(`/${OPEN}/-/tree/main`, { 'if-none-match': etag });
    expect(moved.status).toBe(200);
    expect(moved.text).toContain('more.txt');
    await rm(work, { recursive: true, force: true });
  });

  it('show an empty repository: its home says there are no commits, its tree that there is no such branch', async () => {
    await server.app.wal.createRepo('team/empty', { public: false });
    const page = await get('/team/empty');
    expect(page.status).toBe(200);
    expect(page.text).toContain('The default branch (main) has no commits yet.');
    expect(page.text).toContain(`git clone ${server.url}/team/empty.git`);
    const tree = await get('/team/empty/-/tree/main');
    expect(tree.status).toBe(404);
    expect(tree.text).toContain('has no branch, tag or commit named');
  });

  it('list at most 5,000 entries of a tree, directories first, and say how many more there are', async () => {
    const work = await workRepo(home, 0, 'wide');
    let stream = 'commit refs/heads/main\ncommitter T <t@e> 1700000000 +0000\ndata 5\nwide\n';
    for (let i = 0; i < 5_050; i++)
      stream += `M 100644 inline f${String(i).padStart(5, '0')}.txt\ndata 2\n${i % 10}\n\n`;
    stream += 'M 100644 inline zdir/inner.txt\ndata 2\nz\n\n';
    await new Promise<void>((resolve, reject) => {
      const child = execFile('git', ['fast-import', '--quiet'], { cwd: work }, (error) =>
        error ? reject(error) : resolve(),
      );
      child.stdin?.end(stream);
    });
    await gitOk(['push', '-q', `${server.authUrl}/team/wide.git`, 'main'], { cwd: work, home });
    const tree = await get('/team/wide/-/tree/main');
    expect(tree.status).toBe(200);
    expect([...tree.text.matchAll(/<td class="name">/g)].length).toBe(5_000);
    expect(tree.text).toContain('and 51 more entries');
    expect(tree.text.indexOf('zdir/')).toBeLessThan(tree.text.indexOf('f00000.txt'));
    await rm(work, { recursive: true, force: true });
  });

  it('change nothing: every page is GET only', async () => {
    const before = (await server.app.wal.readIndexFully(REPO))?.etag;
    for (const path of [`/${REPO}/-/tree/main`, `/${REPO}/-/archive/main.zip`]) {
      const res = await fetch(`${server.url}${path}`, { method: 'POST', headers: { authorization: ADMIN } });
      expect(res.status, path).toBe(405);
    }
    expect((await server.app.wal.readIndexFully(REPO))?.etag).toBe(before);
  });
});
