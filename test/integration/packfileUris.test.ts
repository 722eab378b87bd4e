/**
 * Protocol v2 `packfile-uris` on the embedded store: a full clone by a client that accepts them
 * (`fetch.uriprotocols`) gets the stored packs as signed narwal URLs and the rest inline, and ends
 * with exactly the repository a normal clone makes (refs, objects, `git fsck`); a client that
 * does not opt in gets byte for byte the answer of a node without the feature; a pack that holds
 * objects the clone would not get is never sent; and every bad link is a clear 4xx that changes
 * nothing in the store.
 */
import { readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { UrlSigner } from '../../lib/auth/UrlSigner.js';
import { DELIM_PKT, encodePktLine, FLUSH_PKT } from '../../lib/protocol/pktLine.js';
import { expressRepo, fsckClean, hasObject, tempDir } from '../helpers/clientRepos.js';
import { gitOk, makeHome } from '../helpers/gitClient.js';
import { type RunningNarwal, startInProcess, tempDataDir } from '../helpers/narwalServer.js';

const OPT_IN = ['-c', 'protocol.version=2', '-c', 'fetch.uriprotocols=http'];

let home: string;
let dataDir: string;
let server: RunningNarwal & {
  app: { checkpointer: { make(repo: string): Promise<unknown> }; idle(): Promise<void> };
};
/** A second node on the same store and cache, without packfile URIs: today's answers. */
let plain: RunningNarwal;
let express: string;

beforeAll(async () => {
  home = await makeHome();
  dataDir = await tempDataDir();
  server = await startInProcess({ dataDir });
  plain = await startInProcess({ dataDir, env: { NARWAL_PACKFILE_URIS_TTL_S: '0' } });
  express = await expressRepo(home);
  await gitOk(['push', '--quiet', '--mirror', `${server.authUrl}/team/express.git`], { cwd: express, home });
}, 120_000);

afterAll(async () => {
  await plain?.stop();
  await server?.stop();
  if (dataDir) await rm(dataDir, { recursive: true, force: true, maxRetries: 5 });
});

/** Everything a clone left: refs, objects, and fsck must pass. */
async function stateOf(dir: string): Promise<{ refs: string; objects: string }> {
  await fsckClean(dir, home);
  const objects = await gitOk(['cat-file', '--batch-all-objects', '--batch-check'], { cwd: dir, home });
  return {
    refs: await gitOk(['for-each-ref'], { cwd: dir, home }),
    objects: objects.split('\n').sort().join('\n'),
  };
}

/**
 * A normal clone of `repo` into `dir`/normal.git (the first also completes the generation), then
 * one that accepts packfile URIs into `dir`/uris.git; their paths.
 */
async function cloneBoth(repo: string, dir: string): Promise<{ normal: string; uris: string }> {
  const normal = join(dir, 'normal.git');
  const uris = join(dir, 'uris.git');
  await gitOk(['clone', '--quiet', '--bare', `${server.authUrl}/${repo}.git`, normal], { home });
  await gitOk([...OPT_IN, 'clone', '--quiet', '--bare', `${server.authUrl}/${repo}.git`, uris], { home });
  return { normal, uris };
}

async function packsOf(dir: string): Promise<string[]> {
  return (await readdir(join(dir, 'objects', 'pack'))).filter((n) => n.endsWith('.pack')).sort();
}

/** Every file of the store, with its bytes: what "changes nothing" is checked against. */
async function storeFiles(): Promise<Map<string, string>> {
  const root = join(dataDir, 'store', 'objects');
  const files = new Map<string, string>();
  for (const entry of await readdir(root, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile()) continue;
    const path = join(entry.parentPath, entry.name);
    files.set(path, (await readFile(path)).toString('base64'));
  }
  return files;
}

async function storedPacks(repo: string): Promise<string[]> {
  const dir = join(dataDir, 'store', 'objects', 'repos', `${repo}.git`, 'packs');
  return (await readdir(dir)).filter((n) => n.endsWith('.pack')).map((n) => n.slice(0, -'.pack'.length));
}

function v2Fetch(wants: readonly string[], extra: readonly string[] = []): Buffer {
  return Buffer.concat([
    encodePktLine('command=fetch\n'),
    encodePktLine('object-format=sha1\n'),
    DELIM_PKT,
    encodePktLine('thin-pack\n'),
    encodePktLine('ofs-delta\n'),
    ...extra.map((line) => encodePktLine(`${line}\n`)),
    ...wants.map((oid) => encodePktLine(`want ${oid}\n`)),
    encodePktLine('done\n'),
    FLUSH_PKT,
  ]);
}

async function post(base: string, repo: string, body: Buffer): Promise<Buffer> {
  const response = await fetch(`${base}/${repo}.git/git-upload-pack`, {
    method: 'POST',
    headers: {
      'content-type': 'application/x-git-upload-pack-request',
      'git-protocol': 'version=2',
      authorization: `Basic ${Buffer.from(`admin:test-admin-token`).toString('base64')}`,
    },
    body: new Uint8Array(body),
  });
  expect(response.status).toBe(200);
  return Buffer.from(await response.arrayBuffer());
}

async function get(url: string, init?: RequestInit): Promise<{ status: number; body: Buffer; type: string }> {
  const response = await fetch(url, init);
  return {
    status: response.status,
    body: Buffer.from(await response.arrayBuffer()),
    type: response.headers.get('content-type') ?? '',
  };
}

/** The URIs of a fetch answer's packfile-uris section. */
function urisOf(answer: Buffer): { hash: string; uri: string }[] {
  const text = answer.toString('latin1');
  const at = text.indexOf('packfile-uris\n');
  if (at < 0) return [];
  const uris: { hash: string; uri: string }[] = [];
  let i = at - 4 + Number.parseInt(text.slice(at - 4, at), 16);
  while (text.slice(i, i + 4) !== '0001') {
    const length = Number.parseInt(text.slice(i, i + 4), 16);
    const line = text.slice(i + 4, i + length).replace(/\n$/, '');
    uris.push({ hash: line.slice(0, 40), uri: line.slice(41) });
    i += length;
  }
  return uris;
}

async function wantsOf(repo: string): Promise<string[]> {
  const out = await gitOk(['ls-remote', `${server.authUrl}/${repo}.git`], { home });
  return [
    ...new Set(
      out
        .split('\n')
        .filter((l) => l && !l.includes('^{}') && !l.endsWith('HEAD'))
        .map((l) => l.slice(0, 40)),
    ),
  ];
}

describe('packfile-uris', () => {
  it('clones with the stored pack as a URI and leaves the repository a normal clone does', async () => {
    const dir = await tempDir('pfu');
    // A normal clone first: it completes the generation, and is the reference.
    const clones = await cloneBoth('team/express', dir);
    expect(await stateOf(clones.uris)).toEqual(await stateOf(clones.normal));
    // The stored pack came by its URI, beside the inline pack.
    const stored = await storedPacks('team/express');
    const packs = await packsOf(clones.uris);
    expect(packs).toHaveLength(2);
    expect(packs).toContain(`${stored[0]}.pack`);
  }, 120_000);

  it('sends what a node without the feature sends to clients that do not opt in, byte for byte', async () => {
    const wants = await wantsOf('team/express');
    const auth = { authorization: `Basic ${Buffer.from('admin:test-admin-token').toString('base64')}` };
    // v0 advertisement and v2 ls-refs: identical.
    for (const protocol of [undefined, 'version=1']) {
      const headers = { ...auth, ...(protocol ? { 'git-protocol': protocol } : {}) };
      const path = '/team/express.git/info/refs?service=git-upload-pack';
      const a = await get(`${server.url}${path}`, { headers });
      const b = await get(`${plain.url}${path}`, { headers });
      expect(a.body.equals(b.body)).toBe(true);
    }
    // The v2 capabilities differ by the offer alone.
    const headers = { ...auth, 'git-protocol': 'version=2' };
    const offered = await get(`${server.url}/team/express.git/info/refs?service=git-upload-pack`, {
      headers,
    });
    const today = await get(`${plain.url}/team/express.git/info/refs?service=git-upload-pack`, { headers });
    expect(offered.body.toString()).toContain(' packfile-uris\n');
    expect(today.body.toString()).not.toContain('packfile-uris');
    // The fetch of a client that does not opt in: the same bytes from both nodes.
    const request = v2Fetch(wants);
    await post(plain.url, 'team/express', request); // the first answer is git's; the next are kept
    const withFeature = await post(server.url, 'team/express', request);
    const without = await post(plain.url, 'team/express', request);
    expect(withFeature.equals(without)).toBe(true);
    expect(withFeature.toString('latin1')).not.toContain('packfile-uris');
    // A client that opts in, sent to the node without the feature: today's answer too.
    const optedIn = await post(plain.url, 'team/express', v2Fetch(wants, ['packfile-uris http,https']));
    expect(optedIn.equals(without)).toBe(true);
  }, 120_000);

  it('never sends a pack holding objects the clone would not get', async () => {
    const dir = await tempDir('pfu-force');
    const work = join(dir, 'work');
    await gitOk(['init', '-q', '-b', 'main', work], { home });
    await gitOk(['commit', '-q', '--allow-empty', '-m', 'first'], { cwd: work, home });
    const first = (await gitOk(['rev-parse', 'HEAD'], { cwd: work, home })).trim();
    await gitOk(['push', '-q', `${server.authUrl}/team/force.git`, 'main'], { cwd: work, home });
    // main moves to an unrelated history: the first push's pack holds only what no ref reaches.
    await gitOk(['checkout', '-q', '--orphan', 'other'], { cwd: work, home });
    await gitOk(['commit', '-q', '--allow-empty', '-m', 'second'], { cwd: work, home });
    await gitOk(['push', '-q', '--force', `${server.authUrl}/team/force.git`, 'other:main'], {
      cwd: work,
      home,
    });
    const clones = await cloneBoth('team/force', dir);
    expect(await stateOf(clones.uris)).toEqual(await stateOf(clones.normal));
    expect(await hasObject(clones.uris, home, first)).toBe(false);
  }, 120_000);

  it('sends a clone of one branch the annotated tags git follows, and no others', async () => {
    const dir = await tempDir('pfu-tags');
    const work = join(dir, 'work');
    const url = `${server.authUrl}/team/tags.git`;
    const commit = async (message: string) =>
      gitOk(['commit', '-q', '--allow-empty', '-m', message], { cwd: work, home });
    await gitOk(['init', '-q', '-b', 'main', work], { home });
    await commit('one');
    await commit('two');
    await gitOk(['push', '-q', url, 'main'], { cwd: work, home });
    // Each in a push of its own: the tag of main's history, then a branch with a tag of its own.
    await gitOk(['tag', '-a', '-m', 'on main', 'v1', 'HEAD~1'], { cwd: work, home });
    await gitOk(['push', '-q', url, 'v1'], { cwd: work, home });
    await gitOk(['checkout', '-q', '-b', 'other'], { cwd: work, home });
    await commit('three');
    await gitOk(['tag', '-a', '-m', 'on other', 'v2'], { cwd: work, home });
    await gitOk(['push', '-q', url, 'other', 'v2'], { cwd: work, home });
    const one = ['clone', '--quiet', '--bare', '--single-branch', '--branch', 'main', `${url}`];
    const normal = join(dir, 'normal.git');
    const uris = join(dir, 'uris.git');
    await gitOk([...one, normal], { home });
    await gitOk([...OPT_IN, ...one, uris], { home });
    expect(await stateOf(uris)).toEqual(await stateOf(normal));
    expect(await gitOk(['tag'], { cwd: uris, home })).toBe('v1\n');
    // It came by URIs: main's pack and the tag's, and the (empty) inline pack.
    expect(await packsOf(uris)).toHaveLength(3);
  }, 120_000);

  it('answers as today when no stored pack holds only what the clone needs', async () => {
    const wants = await wantsOf('team/express');
    // One branch of the fixture: the one pushed pack also holds the other branches' objects.
    const one = [wants[0] as string];
    const request = v2Fetch(one, ['packfile-uris http,https']);
    await post(plain.url, 'team/express', request); // the first answer is git's; the next are kept
    const answer = await post(server.url, 'team/express', request);
    expect(urisOf(answer)).toEqual([]);
    expect(answer.equals(await post(plain.url, 'team/express', request))).toBe(true);
  }, 120_000);

  it('refuses bad links with a clear 4xx and changes nothing', async () => {
    const wants = await wantsOf('team/express');
    const [good] = urisOf(await post(server.url, 'team/express', v2Fetch(wants, ['packfile-uris http'])));
    expect(good).toBeDefined();
    const uri = new URL(good?.uri as string);
    const before = await storeFiles();
    // The link works, without credentials.
    const ok = await get(uri.href);
    expect(ok.status).toBe(200);
    expect(ok.body.subarray(-20).toString('hex')).toBe(good?.hash);

    const key = Buffer.from(
      (await readFile(join(dataDir, 'store', 'objects', 'auth', 'url-signing-key'), 'utf8')).trim(),
      'hex',
    );
    const pack = /\/(pack-[0-9a-f]{40})\.pack$/.exec(uri.pathname)?.[1] as string;
    const seq = Number(/uri-packs\/(\d+)\//.exec(uri.pathname)?.[1]);
    const signed = async (name: string, at: number, now = Date.now()) => {
      const s = await new UrlSigner({ key: async () => key, now: () => now }).sign(
        `uri-pack\nteam/express\n${at}\n${name}`,
        60,
      );
      return `${server.url}/team/express.git/uri-packs/${at}/${name}.pack?expires=${s.expires}&signature=${s.signature}`;
    };
    const tampered = new URL(uri.href);
    tampered.searchParams.set('signature', '0'.repeat(64));
    const cases: [string, string, number, RegExp][] = [
      ['a bad signature', tampered.href, 403, /signature/],
      ['an expired link', await signed(pack, seq, Date.now() - 3_600_000), 403, /expired/],
      ['no signature', `${uri.origin}${uri.pathname}`, 400, /signed/],
      ['a pack the log does not name', await signed(`pack-${'1'.repeat(40)}`, seq), 404, /no pack/],
      ['a state after the newest', await signed(pack, seq + 1000), 404, /no pack/],
    ];
    for (const [what, url, status, message] of cases) {
      const answer = await get(url);
      expect({ what, status: answer.status }).toEqual({ what, status });
      expect(answer.body.toString()).toMatch(message);
    }
    expect((await get(uri.href, { method: 'POST' })).status).toBe(405);
    expect(await storeFiles()).toEqual(before);
  }, 120_000);

  it('names the newest checkpoint’s pack once there is one', async () => {
    await server.app.checkpointer.make('team/express');
    const dir = await tempDir('pfu-checkpoint');
    const clones = await cloneBoth('team/express', dir);
    expect(await stateOf(clones.uris)).toEqual(await stateOf(clones.normal));
    expect(await packsOf(clones.uris)).toHaveLength(2);
  }, 120_000);
});

/** The plan files of the newest generation of `repo` in the cache, with their times of change. */
async function newestPlans(repo: string): Promise<Map<string, number>> {
  const repoDir = join(dataDir, 'cache', 'repos', `${repo}.git`);
  const [incarnation] = (await readdir(repoDir)).filter((n) => n.startsWith('i-'));
  const gens = join(repoDir, incarnation as string, 'gens');
  const newest = (await readdir(gens)).sort().at(-1) as string;
  const packs = join(gens, newest, 'narwal-packs');
  const plans = new Map<string, number>();
  for (const name of await readdir(packs).catch(() => [] as string[]))
    if (name.endsWith('.uris.json') || name.endsWith('.uris.pack'))
      plans.set(name, (await stat(join(packs, name))).mtimeMs);
  return plans;
}

describe('plans made ahead', () => {
  it('makes a pushed state’s plans once clones asked for URIs, and its first clones use them', async () => {
    const dir = await tempDir('pfu-ahead');
    const work = join(dir, 'work');
    const url = `${server.authUrl}/team/ahead.git`;
    await gitOk(['init', '-q', '-b', 'main', work], { cwd: dir, home });
    const commit = async (n: number) => {
      await writeFile(join(work, `f${n}.txt`), `file ${n}\n`.repeat(100 * n));
      await gitOk(['add', '.'], { cwd: work, home });
      await gitOk(['commit', '-q', '-m', `c${n}`], { cwd: work, home });
    };
    await commit(1);
    await gitOk(['tag', '-a', '-m', 'v1', 'v1'], { cwd: work, home });
    await commit(2);
    // A ref that `git clone` does not ask for and `git clone --bare` does: two plans.
    await gitOk(['update-ref', 'refs/pull/1/head', 'HEAD~1'], { cwd: work, home });
    await gitOk(['push', '-q', url, 'main', 'v1', 'refs/pull/1/head'], { cwd: work, home });
    await server.app.idle();
    // No client asked for URIs yet: nothing is made ahead.
    expect(await newestPlans('team/ahead')).toEqual(new Map());
    const first = await cloneBoth('team/ahead', join(dir, 'first'));
    expect(await stateOf(first.uris)).toEqual(await stateOf(first.normal));

    await commit(3);
    await gitOk(['push', '-q', url, 'main'], { cwd: work, home });
    await server.app.idle();
    const ahead = await newestPlans('team/ahead');
    expect([...ahead.keys()].filter((name) => name.endsWith('.uris.json'))).toHaveLength(2);
    // The first clones of the new state, bare and not, are answered from those plans: no other
    // plan is made, none is made again, and each ends as a normal clone does.
    const bare = await cloneBoth('team/ahead', join(dir, 'next'));
    expect(await stateOf(bare.uris)).toEqual(await stateOf(bare.normal));
    // Each push's pack by its URI, and the inline pack.
    const uriPacks = (await storedPacks('team/ahead')).length + 1;
    expect(uriPacks).toBe(3);
    expect(await packsOf(bare.uris)).toHaveLength(uriPacks);
    const checkout = join(dir, 'checkout');
    await gitOk([...OPT_IN, 'clone', '--quiet', url, checkout], { home });
    await fsckClean(checkout, home);
    expect(await packsOf(join(checkout, '.git'))).toHaveLength(uriPacks);
    expect(await newestPlans('team/ahead')).toEqual(ahead);
  }, 120_000);
});

/** The `bundle.<id>.uri` values of a bundle list, after checking its version and mode. */
function bundleUris(answer: Buffer): string[] {
  const lines: string[] = [];
  let i = 0;
  while (i < answer.length) {
    const length = Number.parseInt(answer.subarray(i, i + 4).toString(), 16);
    if (length === 0) break;
    lines.push(
      answer
        .subarray(i + 4, i + length)
        .toString()
        .replace(/\n$/, ''),
    );
    i += length;
  }
  expect(i).toBe(answer.length - 4);
  expect(lines.slice(0, 2)).toEqual(['bundle.version=1', 'bundle.mode=all']);
  return lines.slice(2).map((line) => {
    const match = /^bundle\.[A-Za-z0-9-]+\.uri=(.*)$/.exec(line);
    expect(match).not.toBeNull();
    return match?.[1] as string;
  });
}

const BUNDLE_URI_REQUEST = Buffer.concat([
  encodePktLine('command=bundle-uri\n'),
  encodePktLine('object-format=sha1\n'),
  DELIM_PKT,
  FLUSH_PKT,
]);

describe('bundle-uri', () => {
  it('is offered, lists the stored pack as a bundle, and git clone --bundle-uri ends with a normal clone', async () => {
    const headers = {
      authorization: `Basic ${Buffer.from('admin:test-admin-token').toString('base64')}`,
      'git-protocol': 'version=2',
    };
    const offered = await get(`${server.url}/team/force.git/info/refs?service=git-upload-pack`, { headers });
    expect(offered.body.toString()).toMatch(/000fbundle-uri\n0000$/);
    const [uri, ...more] = bundleUris(await post(server.url, 'team/force', BUNDLE_URI_REQUEST));
    expect(more).toEqual([]);
    expect(uri).toMatch(
      /\/team\/force\.git\/uri-bundles\/\d+\/pack-[0-9a-f]{40}\.bundle\?expires=\d+&signature=[0-9a-f]{64}$/,
    );
    const dir = await tempDir('bundle-uri');
    await gitOk(['clone', '--quiet', '--bare', `${server.authUrl}/team/force.git`, join(dir, 'normal.git')], {
      home,
    });
    await gitOk(
      [
        'clone',
        '--quiet',
        '--bare',
        `--bundle-uri=${uri}`,
        `${server.authUrl}/team/force.git`,
        join(dir, 'bundle.git'),
      ],
      {
        home,
      },
    );
    const bundled = await stateOf(join(dir, 'bundle.git'));
    const normal = await stateOf(join(dir, 'normal.git'));
    expect(bundled.objects).toEqual(normal.objects);
    // The bundle's refs are kept under refs/bundles/; the clone's own refs are the normal clone's.
    const own = (refs: string) =>
      refs
        .split('\n')
        .filter((l) => !l.includes('refs/bundles/'))
        .join('\n');
    expect(own(bundled.refs)).toEqual(normal.refs);
    const pack = /(pack-[0-9a-f]{40})\.bundle/.exec(uri as string)?.[1];
    expect(await packsOf(join(dir, 'bundle.git'))).toContain(`${pack}.pack`);
    // A link to the pack does not open the bundle, nor one with a bad signature.
    const tampered = new URL(uri as string);
    tampered.searchParams.set('signature', '1'.repeat(64));
    expect((await get(tampered.href)).status).toBe(403);
    const asPack = (uri as string).replace('/uri-bundles/', '/uri-packs/').replace('.bundle?', '.pack?');
    expect((await get(asPack)).status).toBe(403);
  }, 120_000);

  it('lists no bundle when no one stored pack holds exactly what the refs reach', async () => {
    const dir = await tempDir('bundle-none');
    const work = join(dir, 'work');
    await gitOk(['init', '-q', '-b', 'main', work], { home });
    // The second push changes a line of a large file: git sends it as a delta against the blob
    // the server has (a thin pack), which the server stores completed.
    const text = Array.from({ length: 2000 }, (_, i) => `line ${i} of a file large enough to delta\n`);
    for (const [message, lines] of [
      ['one', text],
      ['two', ['changed\n', ...text.slice(1)]],
    ] as const) {
      await writeFile(join(work, 'big.txt'), lines.join(''));
      await gitOk(['add', 'big.txt'], { cwd: work, home });
      await gitOk(['commit', '-q', '-m', message], { cwd: work, home });
      await gitOk(['push', '-q', `${server.authUrl}/team/two.git`, 'main'], { cwd: work, home });
    }
    await gitOk(['clone', '--quiet', '--bare', `${server.authUrl}/team/two.git`, join(dir, 'warm.git')], {
      home,
    });
    expect(bundleUris(await post(server.url, 'team/two', BUNDLE_URI_REQUEST))).toEqual([]);
    // A packfile-uris clone takes both pushes' packs and ends as the normal clone did.
    await gitOk(
      [...OPT_IN, 'clone', '--quiet', '--bare', `${server.authUrl}/team/two.git`, join(dir, 'uris.git')],
      {
        home,
      },
    );
    expect(await stateOf(join(dir, 'uris.git'))).toEqual(await stateOf(join(dir, 'warm.git')));
    expect(await packsOf(join(dir, 'uris.git'))).toHaveLength(3);
  }, 120_000);
});
