/**
 * The repository pages in a real browser (Debian's chromium through playwright-core), against
 * narwal in this process, with the hostile repository of browseFixture.ts pushed by the real git:
 * a walk through every page kind by its links (home -> files -> a directory three levels down ->
 * a highlighted file -> its raw bytes; commits, an older page, a commit and its diff; branches
 * and tags; a tree at a log entry), with screenshots at phone and desktop widths in
 * test-artifacts/browse/. On every page: no script ran, no dialog opened, nothing the repository
 * wrote became markup. The raw SVG and HTML files, opened as documents, run no script either.
 */
import { mkdir, rm } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { App } from '../../lib/app.js';
import {
  type BrowseFixture,
  buildBrowseFixture,
  HTML_BRANCH,
  HTML_FILE_NAME,
} from '../helpers/browseFixture.js';
import { launchChromium } from '../helpers/chromium.js';
import { gitOk, makeHome } from '../helpers/gitClient.js';
import { ADMIN_TOKEN, type RunningNarwal, startInProcess } from '../helpers/narwalServer.js';

const ARTIFACTS = resolve(import.meta.dirname, '../../test-artifacts/browse');
const REPO = 'team/code';
const WIDTHS = { desktop: { width: 1280, height: 900 }, phone: { width: 390, height: 844 } } as const;

let server: RunningNarwal & { app: App };
let browser: Browser;
let home: string;
let fixture: BrowseFixture;
let outsider: string;
const contexts: BrowserContext[] = [];
/** Dialogs any page opened (alert, confirm): a script ran. */
const dialogs: string[] = [];

async function newPage(
  token: string | null,
  viewport: { width: number; height: number },
  options: { javaScript?: boolean } = {},
): Promise<Page> {
  const context = await browser.newContext({
    ...(token !== null ? { httpCredentials: { username: 'me', password: token } } : {}),
    viewport,
    javaScriptEnabled: options.javaScript ?? true,
  });
  contexts.push(context);
  const page = await context.newPage();
  page.on('dialog', (dialog) => {
    dialogs.push(dialog.message());
    void dialog.dismiss();
  });
  return page;
}

/** What a page must never show: a script that ran, markup from the repository, unsafe links. */
async function expectNothingRan(page: Page): Promise<void> {
  const found = await page.evaluate(() => ({
    pwned: (window as unknown as { __pwned?: unknown }).__pwned ?? null,
    scripts: document.querySelectorAll('script').length,
    frames: document.querySelectorAll('iframe, object, embed, svg').length,
    handlers: [...document.querySelectorAll('*')].filter((e) =>
      [...e.attributes].some((a) => /^on/i.test(a.name)),
    ).length,
    unsafeLinks: [...document.querySelectorAll('a[href], img[src]')].filter((e) =>
      /^\s*(javascript|data|vbscript):/i.test(e.getAttribute('href') ?? e.getAttribute('src') ?? ''),
    ).length,
    foreignForms: [...document.querySelectorAll('form')].filter((f) =>
      /^https?:/i.test(f.getAttribute('action') ?? ''),
    ).length,
  }));
  expect(found).toEqual({ pwned: null, scripts: 0, frames: 0, handlers: 0, unsafeLinks: 0, foreignForms: 0 });
  expect(dialogs).toEqual([]);
}

async function shot(page: Page, name: string): Promise<void> {
  await page.screenshot({ path: join(ARTIFACTS, `${name}.png`), fullPage: true });
}

async function hasHorizontalScroll(page: Page): Promise<boolean> {
  return page.evaluate(() => document.documentElement.scrollWidth > document.documentElement.clientWidth);
}

beforeAll(async () => {
  await rm(ARTIFACTS, { recursive: true, force: true });
  await mkdir(ARTIFACTS, { recursive: true });
  server = await startInProcess();
  home = await makeHome();
  fixture = await buildBrowseFixture(home, `${server.authUrl}/${REPO}.git`);
  outsider = (
    await server.app.tokens.create({ name: 'outsider', grants: [{ scope: 'read', pattern: 'open/*' }] })
  ).token;
  await server.app.idle();
  browser = await launchChromium();
}, 300_000);

afterAll(async () => {
  for (const context of contexts) await context.close();
  await browser?.close();
  await server?.stop();
  if (home) await rm(home, { recursive: true, force: true });
  if (fixture) await rm(fixture.work, { recursive: true, force: true });
  console.log(`[browser] screenshots in ${ARTIFACTS}`);
});

describe('the repository pages in a browser', () => {
  for (const [label, viewport] of Object.entries(WIDTHS)) {
    it(`walks every page kind by its links (${label})`, async () => {
      const page = await newPage(ADMIN_TOKEN, viewport);
      const visit = async (name: string) => {
        await expectNothingRan(page);
        if (label === 'phone') expect(await hasHorizontalScroll(page), name).toBe(false);
        await shot(page, `${label}-${name}`);
      };

      // Home: README rendered, clone URL, branches, tags, the log's latest entries.
      expect((await page.goto(`${server.url}/${REPO}`))?.status()).toBe(200);
      expect(await page.locator('.readme h1').textContent()).toBe('Hostile README');
      expect(await page.locator('main').innerText()).toContain(`git clone ${server.url}/${REPO}.git`);
      expect(await page.locator('table.branches td.ref').allInnerTexts()).toContain(HTML_BRANCH);
      expect(await page.locator('table.log td.seq a').count()).toBeGreaterThan(0);
      await visit('01-home');

      // Files: the root, then three levels down by clicking, then a highlighted file.
      await page.getByRole('link', { name: 'Files' }).click();
      await page.waitForURL(`${server.url}/${REPO}/-/tree/main`);
      expect(await page.locator('table.files td.name').allInnerTexts()).toContain(HTML_FILE_NAME);
      await visit('02-tree-root');
      for (const dir of ['src/', 'a/', 'b/'])
        await page.getByRole('link', { name: dir, exact: true }).click();
      await page.waitForURL(`${server.url}/${REPO}/-/tree/main/src/a/b`);
      await visit('03-tree-deep');
      await page.getByRole('link', { name: 'code.ts' }).click();
      await page.waitForURL(`${server.url}/${REPO}/-/blob/main/src/a/b/code.ts`);
      expect(await page.locator('pre.code .hljs-keyword').count()).toBeGreaterThan(0);
      await visit('04-file');
      const rawLink = page.getByRole('link', { name: 'raw', exact: true });
      const rawHref = (await rawLink.getAttribute('href')) ?? '';
      const rawAnswer = await page.request.get(`${server.url}${rawHref}`);
      expect(rawAnswer.headers()['content-type']).toBe('text/plain; charset=utf-8');
      expect(await rawAnswer.text()).toContain('export function greet');

      // The README's relative link leads to the file page; an SVG shows as an image.
      await page.goto(`${server.url}/${REPO}`);
      await page.locator('.readme a', { hasText: 'relative link' }).click();
      await page.waitForURL(`${server.url}/${REPO}/-/blob/main/docs/guide.md`);
      expect(await page.locator('.readme h1').textContent()).toBe('Guide');
      await visit('05-markdown-file');
      await page.goto(`${server.url}/${REPO}/-/blob/main/evil.svg`);
      expect(await page.locator('.preview img').count()).toBe(1);
      await visit('06-svg-file');
      await page.goto(`${server.url}/${REPO}/-/blob/main/big.txt`);
      expect(await page.locator('main').innerText()).toContain('too large to show here');
      await visit('07-large-file');

      // Commits, an older page, a commit with a message that is HTML, and its diff.
      await page.goto(`${server.url}/${REPO}`);
      await page.getByRole('link', { name: 'Commits', exact: true }).click();
      await page.waitForURL(`${server.url}/${REPO}/-/commits/main`);
      expect(await page.locator('table.commits tbody tr').count()).toBe(50);
      await visit('08-commits');
      await page.getByRole('link', { name: 'older' }).click();
      await page.waitForURL(/\/-\/commits\/main\?next=/);
      expect(await page.locator('table.commits tbody tr').count()).toBe(50);
      await visit('09-commits-older');
      await page.goto(`${server.url}/${REPO}/-/commits/main`);
      await page.locator(`a.oid[href$="${fixture.htmlMessage}"]`).click();
      await page.waitForURL(`${server.url}/${REPO}/-/commit/${fixture.htmlMessage}`);
      expect(await page.locator('h2').first().innerText()).toContain('<img src=x onerror=');
      expect(await page.locator('.diff .del').count()).toBeGreaterThan(0);
      await visit('10-commit');
      await page.goto(`${server.url}/${REPO}/-/commit/${fixture.bigDiff}`);
      expect(await page.locator('.diff').innerText()).toContain('Diff too large to show');
      await visit('11-commit-too-large');

      // Branches and tags, a ref whose name is HTML, and the state after log entry 1.
      await page.getByRole('link', { name: 'Branches and tags' }).click();
      await page.waitForURL(`${server.url}/${REPO}/-/refs`);
      await visit('12-refs');
      await page.getByRole('link', { name: HTML_BRANCH, exact: true }).click();
      expect(await page.locator('table.files td.name').allInnerTexts()).toContain('page.html');
      await visit('13-tree-html-branch');
      await page.goto(`${server.url}/${REPO}/-/log`);
      await page.locator('table.log td.seq a', { hasText: /^#1$/ }).click();
      await page.getByRole('link', { name: 'files at this entry' }).click();
      await page.waitForURL(`${server.url}/${REPO}/-/tree/@1`);
      expect(await page.locator('table.files td.name').allInnerTexts()).toContain('page.html');
      await visit('14-tree-at-entry');

      // An archive, as the link downloads it.
      await page.goto(`${server.url}/${REPO}/-/tree/main`);
      const download = page.waitForEvent('download');
      await page.getByRole('link', { name: '.zip' }).first().click();
      expect((await download).suggestedFilename()).toBe('code-main.zip');
    });
  }

  it('works with JavaScript turned off: every page is plain HTML and links', async () => {
    const page = await newPage(ADMIN_TOKEN, WIDTHS.desktop, { javaScript: false });
    await page.goto(`${server.url}/${REPO}`);
    await page.getByRole('link', { name: 'Files' }).click();
    await page.getByRole('link', { name: 'src/', exact: true }).click();
    await page.getByRole('link', { name: 'a/', exact: true }).click();
    await page.getByRole('link', { name: 'b/', exact: true }).click();
    await page.getByRole('link', { name: 'code.ts' }).click();
    await page.waitForURL(`${server.url}/${REPO}/-/blob/main/src/a/b/code.ts`);
    expect(await page.locator('pre.code .hljs-keyword').count()).toBeGreaterThan(0);
    await page.getByRole('link', { name: 'Commits', exact: true }).click();
    await page.getByRole('link', { name: 'older' }).click();
    await page.waitForURL(/\/-\/commits\/main\?next=/);
    expect(await page.locator('table.commits tbody tr').count()).toBe(50);
  });

  it('refuses path traversal in tree, blob and raw URLs as a browser sends them', async () => {
    const page = await newPage(ADMIN_TOKEN, WIDTHS.desktop);
    const attempts = [
      `/${REPO}/-/raw/main/..%2f..%2f..%2fetc%2fpasswd`,
      `/${REPO}/-/raw/main/%2e%2e/%2e%2e/%2e%2e/%2e%2e/%2e%2e/etc/passwd`,
      `/${REPO}/-/tree/main/src/%2e%2e/%2e%2e/%2e%2e`,
      `/${REPO}/-/blob/main/..%5c..%5cREADME.md`,
      `/${REPO}/-/raw/main/src/a/../../../../../etc/passwd`,
    ];
    for (const path of attempts) {
      const answer = await page.goto(`${server.url}${path}`);
      expect([400, 404], `${path} -> ${page.url()}`).toContain(answer?.status());
      expect(await page.locator('body').innerText(), path).not.toMatch(/root:|Hostile README/);
    }
    await shot(page, 'desktop-16-traversal-refused');
  });

  it('opens raw SVG and HTML files as documents without running their scripts', async () => {
    const page = await newPage(ADMIN_TOKEN, WIDTHS.desktop);
    await page.goto(`${server.url}/${REPO}/-/raw/main/evil.svg`);
    expect(await page.evaluate(() => document.documentElement.getAttribute('data-pwned'))).toBeNull();
    await page.goto(`${server.url}/${REPO}/-/raw/${fixture.first}/page.html`);
    expect(await page.evaluate(() => document.body?.getAttribute('data-pwned') ?? null)).toBeNull();
    expect(await page.evaluate(() => document.body?.innerText ?? '')).toContain('<script>');
    expect(dialogs).toEqual([]);
  });

  it('shows a token that may not read the repository the same page as for no repository at all', async () => {
    const page = await newPage(outsider, WIDTHS.desktop);
    for (const path of [
      '',
      '/-/tree/main',
      '/-/blob/main/README.md',
      '/-/commits/main',
      `/-/commit/${fixture.first}`,
      '/-/refs',
    ]) {
      const answer = await page.goto(`${server.url}/${REPO}${path}`);
      expect(answer?.status(), path).toBe(404);
      expect(await page.locator('main').innerText(), path).not.toContain('Hostile');
    }
    const archive = await page.request.get(`${server.url}/${REPO}/-/archive/main.tar.gz`);
    expect(archive.status()).toBe(404);
    await shot(page, 'desktop-15-refused');
    const anonymous = await newPage(null, WIDTHS.desktop);
    expect((await anonymous.request.get(`${server.url}/${REPO}/-/tree/main`)).status()).toBe(401);
    const work = fixture.work;
    // The repository is still there for those who may read it.
    expect(
      (await gitOk(['ls-remote', `${server.authUrl}/${REPO}.git`, 'main'], { cwd: work, home })).trim(),
    ).toContain(fixture.main);
  });
});
