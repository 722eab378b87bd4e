/**
 * The monitor pages in a real browser (Debian's chromium through playwright-core), against narwal
 * in this process with history pushed by the real git: repository list -> log (checkpoints,
 * paging) -> entry -> diff (a forced move, its commits) -> rewind dry run (exactly the changes,
 * nothing written) -> confirmed rewind -> its entry, then the refs through git. Also what a
 * read-only token, an anonymous visitor and a phone see, and that HTML in a ref name or a commit
 * subject is shown as text. Screenshots of every step go to test-artifacts/monitor/.
 */
import { mkdir, rm } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { App } from '../../lib/app.js';
import { launchChromium } from '../helpers/chromium.js';
import { commitFile, gitOk, makeHome, workRepo } from '../helpers/gitClient.js';
import { ADMIN_TOKEN, type RunningNarwal, startInProcess } from '../helpers/narwalServer.js';

const ARTIFACTS = resolve(import.meta.dirname, '../../test-artifacts/monitor');
const REPO = 'team/hist';
const OPEN_REPO = 'team/open';
/** Valid git names, HTML if a page forgot to escape them. */
const HTML_REF = 'refs/heads/<em>x</em>';
const HTML_SUBJECT = 'fix <img src=x onerror=alert(1)> & "quotes" <b>bold</b>';
/** Pushes after the interesting ones, so that the log needs more than one page. */
const FILLER_PUSHES = 45;

let server: RunningNarwal & { app: App };
let browser: Browser;
let home: string;
let work: string;
let readerToken: string;
const contexts: BrowserContext[] = [];
/** The refs (ls-remote) right after each named push, and that push's entry. */
const pushes = new Map<string, { seq: number; refs: Map<string, string> }>();
const commits = { c1: '', c2: '', c3: '', c4: '' };

async function lsRemote(url: string): Promise<Map<string, string>> {
  const out = await gitOk(['ls-remote', url], { home });
  const refs = new Map<string, string>();
  for (const line of out.trim().split('\n')) {
    const [oid, name] = line.split('\t');
    if (oid && name && name !== 'HEAD' && !name.endsWith('^{}')) refs.set(name, oid);
  }
  return refs;
}

async function push(label: string | null, ...args: string[]): Promise<void> {
  await gitOk(['push', '-q', `${server.authUrl}/${REPO}.git`, ...args], { cwd: work, home });
  if (label === null) return;
  await server.app.idle();
  const loaded = await server.app.wal.readIndexFully(REPO);
  const items = loaded ? await server.app.wal.itemsAfter(loaded.index, 0) : [];
  const seq = items.filter((item) => item.kind !== 'checkpoint').at(-1)?.seq ?? 0;
  pushes.set(label, { seq, refs: await lsRemote(`${server.authUrl}/${REPO}.git`) });
}

const pushed = (label: string) => {
  const found = pushes.get(label);
  if (found === undefined) throw new Error(`no push ${label}`);
  return found;
};

async function etag(repo = REPO): Promise<string | undefined> {
  return (await server.app.wal.readIndexFully(repo))?.etag;
}

async function newPage(
  options: { token?: string; viewport?: { width: number; height: number } } = {},
): Promise<Page> {
  const context = await browser.newContext({
    ...(options.token !== undefined ? { httpCredentials: { username: 'me', password: options.token } } : {}),
    viewport: options.viewport ?? { width: 1100, height: 800 },
  });
  contexts.push(context);
  return context.newPage();
}

const shot = (page: Page, name: string) =>
  page.screenshot({ path: join(ARTIFACTS, `${name}.png`), fullPage: true });

/** The entry numbers linked from the log table, in page order. */
async function logSeqs(page: Page): Promise<number[]> {
  const texts = await page.locator('table.log td.seq a').allTextContents();
  return texts.map((t) => Number(t.replace('#', '')));
}

async function hasHorizontalScroll(page: Page): Promise<boolean> {
  return page.evaluate(() => document.documentElement.scrollWidth > document.documentElement.clientWidth);
}

beforeAll(async () => {
  await rm(ARTIFACTS, { recursive: true, force: true });
  await mkdir(ARTIFACTS, { recursive: true });
  server = await startInProcess({ env: { NARWAL_CHECKPOINT_EVERY: '10' } });
  readerToken = (
    await server.app.tokens.create({ name: 'reader', grants: [{ scope: 'read', pattern: 'team/*' }] })
  ).token;
  browser = await launchChromium();
  home = await makeHome();
  work = await workRepo(home, 0, 'browser');
  commits.c1 = await commitFile(work, home, 'a.txt', 'one\n', 'first');
  await push('c1', 'main');
  commits.c2 = await commitFile(work, home, 'a.txt', 'two\n', 'second');
  await push('c2', 'main');
  await gitOk(['checkout', '-q', '-b', 'feature'], { cwd: work, home });
  commits.c3 = await commitFile(work, home, 'b.txt', 'feature\n', 'feature work');
  await push('feature', 'feature');
  await gitOk(['tag', '-a', '-m', 'release one', 'v1', commits.c2], { cwd: work, home });
  await push('tag', 'v1');
  await push('html-ref', `${commits.c2}:${HTML_REF}`);
  // A forced move of main onto a commit that is not a descendant: one commit added, one dropped.
  await gitOk(['checkout', '-q', '-b', 'rework', commits.c1], { cwd: work, home });
  commits.c4 = await commitFile(work, home, 'a.txt', 'reworked\n', HTML_SUBJECT);
  await push('forced', '-f', 'rework:refs/heads/main');
  await push('delete', ':feature');
  await gitOk(['checkout', '-q', '-b', 'filler'], { cwd: work, home });
  for (let i = 0; i < FILLER_PUSHES; i++) {
    await commitFile(work, home, 'filler.txt', `${i}\n`, `filler ${i}`);
    await push(i === FILLER_PUSHES - 1 ? 'last' : null, 'filler');
  }
  // A public repository, for anonymous visitors.
  await server.app.wal.createRepo(OPEN_REPO, { public: true });
  await gitOk(['push', '-q', `${server.authUrl}/${OPEN_REPO}.git`, `${commits.c1}:refs/heads/main`], {
    cwd: work,
    home,
  });
  await server.app.idle();
}, 300_000);

afterAll(async () => {
  for (const context of contexts) await context.close();
  await browser?.close();
  await server?.stop();
  console.log(`[browser] screenshots in ${ARTIFACTS}`);
});

describe('the monitor in a browser, signed in with a write token', () => {
  it('clicks through list -> log -> entry -> diff -> rewind preview -> rewind -> its entry', async () => {
    const page = await newPage({ token: ADMIN_TOKEN });
    const last = (await server.app.wal.readIndexFully(REPO))?.index.seq ?? 0;

    // The repository list: public ones until the browser signs in, then every readable one.
    expect((await page.goto(server.url))?.status()).toBe(200);
    expect(await page.locator('h1').textContent()).toBe('Repositories');
    expect(await page.locator('main a', { hasText: REPO }).count()).toBe(0);
    await page.getByRole('link', { name: 'sign in' }).first().click();
    await page.waitForURL(`${server.url}/`);
    expect(await page.locator('header').innerText()).toContain('signed in as admin');
    expect(await page.locator('main a', { hasText: REPO }).count()).toBe(1);
    expect(await page.locator('main a', { hasText: OPEN_REPO }).count()).toBe(1);
    await shot(page, '01-repositories');

    // The log: newest first, checkpoints marked, no rewind yet; 'older' pages back.
    // The repository's home shows the newest entries; its Log link has them all, paged.
    await page.locator('main a', { hasText: REPO }).click();
    await page.waitForURL(`${server.url}/${REPO}`);
    expect((await logSeqs(page))[0]).toBe(last);
    await page.getByRole('link', { name: 'Log', exact: true }).click();
    await page.waitForURL(`${server.url}/${REPO}/-/log`);
    const first = await logSeqs(page);
    expect(first[0]).toBe(last);
    expect(first.length).toBe(50);
    expect(first).toEqual([...first].sort((a, b) => b - a));
    expect(await page.locator('table.log .tag.checkpoint').count()).toBeGreaterThan(0);
    expect(await page.locator('table.log .tag.rewind').count()).toBe(0);
    await shot(page, '02-log');
    await page.getByRole('link', { name: 'older' }).click();
    await page.waitForURL(/\?before=\d+$/);
    const second = await logSeqs(page);
    expect(second[0]).toBe((first.at(-1) as number) - 1);
    expect(second.at(-1)).toBe(1);
    expect(await page.getByRole('link', { name: 'older' }).count()).toBe(0);
    await shot(page, '03-log-older');

    // The forced push's entry, from the older page.
    const forced = pushed('forced').seq;
    await page.locator('table.log td.seq a', { hasText: new RegExp(`^#${forced}$`) }).click();
    await page.waitForURL(`${server.url}/${REPO}/-/entry/${forced}`);
    expect(await page.locator('main').innerText()).toContain('refs/heads/main');
    await shot(page, '04-entry');

    // Its diff with the entry before: main forced, the new commit listed (as text).
    await page.getByRole('link', { name: `diff with #${forced - 1}` }).click();
    await page.waitForURL(`${server.url}/${REPO}/-/diff?from=${forced - 1}&to=${forced}`);
    const movedMain = page.locator('tr', { hasText: 'refs/heads/main' });
    expect(await movedMain.locator('.tag.forced').count()).toBe(1);
    expect(await movedMain.locator('ul.commits li').allInnerTexts()).toEqual([
      expect.stringContaining(`${commits.c4.slice(0, 10)} ${HTML_SUBJECT}`),
    ]);
    expect(await movedMain.innerText()).toContain('1 commit dropped');
    expect(await page.locator('main img, main b').count()).toBe(0);
    await shot(page, '05-diff');

    // Rewind the branches to the entry after the feature push: a dry run first.
    const target = pushed('feature');
    await page.goto(`${server.url}/${REPO}/-/entry/${target.seq}`);
    await page.getByLabel(/refs/).fill('refs/heads/*');
    const before = await etag();
    await page.getByRole('button', { name: /Rewind to this entry/ }).click();
    await page.waitForURL(/\/-\/rewind\?/);
    const now = await lsRemote(`${server.authUrl}/${REPO}.git`);
    const expected = expectedRewind(now, target.refs, (ref) => /^refs\/heads\/[^/]+$/.test(ref));
    const previewed = await page
      .locator('table.plan tbody tr')
      .evaluateAll((rows) =>
        rows.map((row) => [...row.querySelectorAll('td')].map((td) => td.textContent?.trim() ?? '')),
      );
    expect(previewed).toEqual(expected);
    expect(await page.locator('main').innerText()).toContain('nothing has been written');
    expect(await etag()).toBe(before);
    await shot(page, '06-rewind-preview');

    // Confirm: a new entry, marked as a rewind of that entry.
    await page.getByRole('button', { name: 'Confirm rewind' }).click();
    await page.waitForURL(`${server.url}/${REPO}/-/rewind`);
    expect(await page.locator('main').innerText()).toContain(`published as entry #${last + 1}`);
    await shot(page, '07-rewind-done');
    await page.getByRole('link', { name: `entry #${last + 1}` }).click();
    await page.waitForURL(`${server.url}/${REPO}/-/entry/${last + 1}`);
    expect(await page.locator('.tag.rewind').innerText()).toBe(`rewind to #${target.seq} (refs/heads/*)`);
    await shot(page, '08-rewind-entry');
    await page.goto(`${server.url}/${REPO}/-/log`);
    expect(
      await page
        .locator('table.log tr', { hasText: `#${last + 1}` })
        .locator('.tag.rewind')
        .count(),
    ).toBe(1);
    await shot(page, '09-log-after-rewind');

    // What git sees now: the branches of that entry, everything else as it was.
    const after = await lsRemote(`${server.authUrl}/${REPO}.git`);
    expect(after.get('refs/heads/main')).toBe(commits.c2);
    expect(after.get('refs/heads/feature')).toBe(commits.c3);
    expect(after.has('refs/heads/filler')).toBe(false);
    expect(after.get(HTML_REF)).toBe(commits.c2);
    expect(after.get('refs/tags/v1')).toBe(now.get('refs/tags/v1'));
  });

  it('shows HTML in ref names and commit subjects as text', async () => {
    const page = await newPage({ token: ADMIN_TOKEN });
    await page.goto(`${server.url}/${REPO}/-/entry/${pushed('html-ref').seq}`);
    expect(await page.locator('main').innerText()).toContain(HTML_REF);
    expect(await page.locator('main em').count()).toBe(0);
    await page.getByRole('link', { name: HTML_REF }).first().click();
    await page.waitForURL(/\/-\/who\?ref=/);
    expect(await page.locator('main h2.ref').innerText()).toBe(HTML_REF);
    expect(await page.locator('main em').count()).toBe(0);
    await shot(page, '10-who-html-ref');
  });
});

/** [ref, old, new] rows a rewind to `target` should preview: matching refs that differ, by name. */
function expectedRewind(
  now: ReadonlyMap<string, string>,
  target: ReadonlyMap<string, string>,
  matches: (ref: string) => boolean,
): string[][] {
  const names = [...new Set([...now.keys(), ...target.keys()])].filter(matches).sort();
  return names
    .filter((name) => now.get(name) !== target.get(name))
    .map((name) => [
      name,
      now.get(name)?.slice(0, 10) ?? 'absent',
      target.get(name)?.slice(0, 10) ?? 'deleted',
    ]);
}

describe('the monitor for a read-only token', () => {
  it('offers no rewind, and refuses one posted anyway', async () => {
    const page = await newPage({ token: readerToken });
    const seq = pushed('feature').seq;
    expect((await page.goto(`${server.url}/${REPO}/-/entry/${seq}`))?.status()).toBe(200);
    expect(await page.getByRole('button', { name: /Rewind/ }).count()).toBe(0);
    await shot(page, '11-entry-read-only');
    const preview = await page.goto(`${server.url}/${REPO}/-/rewind?to=${seq}`);
    expect(preview?.status()).toBe(403);
    const before = await etag();
    const posted = await page.request.post(`${server.url}/${REPO}/-/rewind`, {
      form: { to: String(seq), expect: String((await server.app.wal.readIndexFully(REPO))?.index.seq) },
    });
    expect(posted.status()).toBe(403);
    expect(await posted.text()).toContain('write');
    expect(await etag()).toBe(before);
  });
});

describe('the monitor for anonymous visitors', () => {
  it('lists public repositories only and asks to sign in for a private one', async () => {
    const page = await newPage();
    await page.goto(server.url);
    expect(await page.locator('main a', { hasText: OPEN_REPO }).count()).toBe(1);
    expect(await page.locator('main a', { hasText: REPO }).count()).toBe(0);
    expect(await page.getByRole('link', { name: 'sign in' }).count()).toBeGreaterThan(0);
    await shot(page, '12-anonymous-list');
    await page.locator('main a', { hasText: OPEN_REPO }).click();
    await page.waitForURL(`${server.url}/${OPEN_REPO}`);
    expect((await logSeqs(page)).length).toBeGreaterThan(0);
    await shot(page, '13-anonymous-public-log');
    // Headless chromium has no credentials dialog to cancel: a challenge without credentials fails
    // the navigation. So the page takes narwal's real 401 (status, challenge, body) by a route and is
    // shown it without the challenge, which is what a person sees after cancelling the dialog.
    const privateLog = `${server.url}/${REPO}`;
    await expect(page.goto(privateLog)).rejects.toThrow(/ERR_INVALID_AUTH_CREDENTIALS/);
    let challenge: string | undefined;
    await page.route(privateLog, async (route) => {
      const response = await route.fetch();
      challenge = response.headers()['www-authenticate'];
      const { 'www-authenticate': _, ...headers } = response.headers();
      await route.fulfill({ response, headers });
    });
    const refused = await page.goto(privateLog);
    expect(refused?.status()).toBe(401);
    expect(challenge).toMatch(/^Basic realm=/);
    expect(await page.locator('h1').innerText()).toBe('Sign in');
    expect(await page.locator('main a', { hasText: REPO }).count()).toBe(0);
    await page.getByRole('link', { name: 'Sign in' }).waitFor();
    await shot(page, '14-anonymous-private');
  });
});

describe('the monitor on a phone', () => {
  it('fits the log, an entry and a diff into 390 px without horizontal scrolling', async () => {
    const page = await newPage({ token: ADMIN_TOKEN, viewport: { width: 390, height: 844 } });
    const forced = pushed('forced').seq;
    const pages = [
      ['15-phone-log', `/${REPO}/-/log`],
      ['16-phone-entry', `/${REPO}/-/entry/${forced}`],
      ['17-phone-diff', `/${REPO}/-/diff?from=${forced - 1}&to=${forced}`],
      ['18-phone-list', '/'],
    ] as const;
    for (const [name, path] of pages) {
      expect((await page.goto(`${server.url}${path}`))?.status(), path).toBe(200);
      await shot(page, name);
      expect(await hasHorizontalScroll(page), path).toBe(false);
    }
  });
});
