/**
 * The log as a product, end to end with real git: who moved a ref, the refs after any entry
 * (through the CLI, the JSON API and a clone of `REPO.git@SEQ`), diffs with the commits between,
 * and rewinds that publish a new entry and delete nothing.
 */
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { App } from '../../lib/app.js';
import { commitFile, git, gitOk, makeHome, workRepo } from '../helpers/gitClient.js';
import { narwalCli } from '../helpers/narwalCli.js';
import { ADMIN_TOKEN, type RunningNarwal, startInProcess, tempDataDir } from '../helpers/narwalServer.js';

const REPO = 'team/hist';
let server: RunningNarwal & { app: App };
let dataDir: string;
let home: string;
let work: string;
/** The refs (ls-remote) right after each push, and the index seq then (checkpoints may follow). */
const snapshots: { seq: number; refs: Map<string, string> }[] = [];
const commits = { c1: '', c2: '', c3: '' };

const cli = (...args: string[]) => narwalCli(args, { dataDir });
const auth = `Basic ${Buffer.from(`x:${ADMIN_TOKEN}`).toString('base64')}`;
const api = (path: string, init: RequestInit = {}) =>
  fetch(`${server.url}/api/v1${path}`, { ...init, headers: { authorization: auth, ...init.headers } });

async function lsRemote(url: string): Promise<Map<string, string>> {
  const out = await gitOk(['ls-remote', url], { home });
  const refs = new Map<string, string>();
  for (const line of out.trim().split('\n')) {
    const [oid, name] = line.split('\t');
    if (oid && name && name !== 'HEAD' && !name.endsWith('^{}')) refs.set(name, oid);
  }
  return refs;
}

async function push(...args: string[]): Promise<void> {
  await gitOk(['push', '-q', `${server.authUrl}/${REPO}.git`, ...args], { cwd: work, home });
  await server.app.idle();
  // The push's entry is the newest that is not a checkpoint (one may have followed it).
  const loaded = await server.app.wal.readIndexFully(REPO);
  const items = loaded ? await server.app.wal.itemsAfter(loaded.index, 0) : [];
  const seq = items.filter((item) => item.kind !== 'checkpoint').at(-1)?.seq ?? 0;
  snapshots.push({ seq, refs: await lsRemote(`${server.authUrl}/${REPO}.git`) });
}

/** What the refs were after entry `seq`, from what clients saw right after each push. */
function expectedAt(seq: number): Map<string, string> {
  let refs = new Map<string, string>();
  for (const s of snapshots) if (s.seq <= seq) refs = s.refs;
  return refs;
}

const seqOfPush = (n: number) => (snapshots[n] as { seq: number }).seq;

beforeAll(async () => {
  dataDir = await tempDataDir();
  // Checkpoints every few entries, so states are found through checkpoints as well as replays.
  server = await startInProcess({ dataDir, env: { NARWAL_CHECKPOINT_EVERY: '3' } });
  home = await makeHome();
  work = await workRepo(home, 0, 'hist');
  commits.c1 = await commitFile(work, home, 'a.txt', 'one\n', 'first <b>bold</b> subject');
  await push('main'); // push 0
  commits.c2 = await commitFile(work, home, 'a.txt', 'two\n', 'second');
  await push('main'); // 1
  await gitOk(['checkout', '-q', '-b', 'feature'], { cwd: work, home });
  commits.c3 = await commitFile(work, home, 'b.txt', 'feature\n', 'feature work');
  await push('feature'); // 2
  await gitOk(['tag', '-a', '-m', 'release one', 'v1', commits.c2], { cwd: work, home });
  await push('v1'); // 3
  await push('-f', `${commits.c1}:refs/heads/main`); // 4: a forced move back
  await push(':feature'); // 5: deletion
}, 120_000);

afterAll(async () => {
  await server?.stop();
});

describe('state at any entry', () => {
  it('gives the refs after every entry, checkpoint or not, the same through the API as clients saw', async () => {
    const last = (await server.app.wal.readIndexFully(REPO))?.index;
    expect(last?.checkpoint).not.toBeNull();
    for (let seq = 0; seq <= (last?.seq ?? 0); seq++) {
      const body = (await (await api(`/repos/${REPO}/-/refs?at=${seq}`)).json()) as {
        refs: Record<string, string | { oid: string }>;
      };
      const got = new Map(Object.entries(body.refs).map(([k, v]) => [k, typeof v === 'string' ? v : v.oid]));
      expect(got, `state after entry ${seq}`).toEqual(expectedAt(seq));
    }
  });

  it('prints them with narwal show, and refuses an entry that does not exist', async () => {
    const shown = await cli('show', REPO, String(seqOfPush(2)));
    expect(shown.code).toBe(0);
    expect(shown.stdout).toContain(`${commits.c2} refs/heads/main`);
    expect(shown.stdout).toContain(`${commits.c3} refs/heads/feature`);
    const missing = await cli('show', REPO, '9999');
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain('has no entry 9999');
  });

  it('clones the state after an entry with REPO.git@SEQ, and refuses to push there', async () => {
    const seq = seqOfPush(2);
    const dir = await mkdtemp(join(tmpdir(), 'narwal-past-'));
    await gitOk(['clone', '-q', `${server.authUrl}/${REPO}.git@${seq}`, dir], { home });
    expect((await gitOk(['rev-parse', 'HEAD'], { cwd: dir, home })).trim()).toBe(commits.c2);
    expect((await gitOk(['rev-parse', 'origin/feature'], { cwd: dir, home })).trim()).toBe(commits.c3);
    await gitOk(['fsck', '--no-progress'], { cwd: dir, home });
    expect(await lsRemote(`${server.authUrl}/${REPO}.git@${seq}`)).toEqual(expectedAt(seq));
    // Protocol v0 as well as v2.
    const v0 = await gitOk(
      ['-c', 'protocol.version=0', 'ls-remote', `${server.authUrl}/${REPO}.git@${seqOfPush(0)}`],
      {
        home,
      },
    );
    expect(v0).toContain(`${commits.c1}\trefs/heads/main`);
    expect(v0).not.toContain('feature');

    await commitFile(dir, home, 'c.txt', 'past\n');
    const pushed = await git(['push', 'origin', 'HEAD:refs/heads/main'], { cwd: dir, home });
    expect(pushed.code).not.toBe(0);
    expect(pushed.stderr).toContain('is read-only');
    const future = await git(['ls-remote', `${server.authUrl}/${REPO}.git@9999`], { home });
    expect(future.code).not.toBe(0);
    expect(future.stderr).toContain('has no entry 9999');
  });
});

describe('who moved a ref', () => {
  it('lists every move, newest first, with who, client and old -> new', async () => {
    const res = await api(`/repos/${REPO}/-/who?ref=refs/heads/main`);
    const body = (await res.json()) as {
      moves: { seq: number; old: string; new: string; who: { token: string; agent?: string } }[];
    };
    expect(body.moves.map((m) => [m.old, m.new])).toEqual([
      [commits.c2, commits.c1],
      [commits.c1, commits.c2],
      ['0'.repeat(40), commits.c1],
    ]);
    expect(body.moves.map((m) => m.seq)).toEqual([seqOfPush(4), seqOfPush(1), seqOfPush(0)]);
    expect(body.moves[0]?.who.token).toBe('admin');
    expect(body.moves[0]?.who.agent).toMatch(/^git\//);
    const printed = await cli('who', REPO, 'refs/heads/main');
    expect(printed.stdout.trim().split('\n')).toHaveLength(3);
    expect(printed.stdout.split('\n')[0]).toContain(
      `${commits.c2.slice(0, 10)} -> ${commits.c1.slice(0, 10)}`,
    );
  });
});

describe('diff', () => {
  it('shows refs added, removed and moved, with the commits between and forced moves marked', async () => {
    const from = seqOfPush(2);
    const to = seqOfPush(5);
    const body = (await (await api(`/repos/${REPO}/-/diff?from=${from}&to=${to}`)).json()) as {
      added: { ref: string }[];
      removed: { ref: string }[];
      moved: { ref: string }[];
      details: { ref: string; fastForward: boolean; removedCount: number; addedCount: number }[];
    };
    expect(body.added.map((c) => c.ref)).toEqual(['refs/tags/v1']);
    expect(body.removed.map((c) => c.ref)).toEqual(['refs/heads/feature']);
    expect(body.moved.map((c) => c.ref)).toEqual(['refs/heads/main']);
    expect(body.details).toEqual([
      expect.objectContaining({ ref: 'refs/heads/main', fastForward: false, removedCount: 1, addedCount: 0 }),
    ]);
    const forward = await cli('diff', REPO, String(seqOfPush(0)), String(seqOfPush(1)));
    expect(forward.code).toBe(0);
    expect(forward.stdout).toContain('(fast-forward)');
    expect(forward.stdout).toContain(`${commits.c2.slice(0, 10)} second`);
  });
});

describe('rewind', () => {
  it('prints exactly what a dry run would change and writes nothing', async () => {
    const before = await server.app.wal.readIndexFully(REPO);
    const dry = await cli('rewind', REPO, String(seqOfPush(2)), '--dry-run');
    expect(dry.code).toBe(0);
    expect(dry.stdout).toContain(`refs/heads/main ${commits.c1.slice(0, 10)} -> ${commits.c2.slice(0, 10)}`);
    expect(dry.stdout).toContain(`refs/heads/feature (none) -> ${commits.c3.slice(0, 10)}`);
    expect(dry.stdout).toContain('refs/tags/v1');
    expect(dry.stdout).toContain('dry run: nothing written');
    expect((await server.app.wal.readIndexFully(REPO))?.etag).toBe(before?.etag);
  });

  it('publishes a new entry restoring the matching refs, marked as a rewind', async () => {
    const to = seqOfPush(2);
    const done = await cli('rewind', REPO, String(to), '--refs', 'refs/heads/*');
    expect(done.code).toBe(0);
    const seq = Number(/published as entry (\d+)/.exec(done.stdout)?.[1]);
    const refs = await lsRemote(`${server.authUrl}/${REPO}.git`);
    expect(refs.get('refs/heads/main')).toBe(commits.c2);
    expect(refs.get('refs/heads/feature')).toBe(commits.c3);
    // Outside the pattern: untouched (the tag stays).
    expect(refs.has('refs/tags/v1')).toBe(true);
    const entry = (await (await api(`/repos/${REPO}/-/entries/${seq}`)).json()) as {
      kind: string;
      rewind: { to: number; refs: string };
    };
    expect(entry.kind).toBe('rewind');
    expect(entry.rewind).toEqual({ to, refs: 'refs/heads/*' });
    // The rewound-over state is still there: nothing was deleted.
    expect(await lsRemote(`${server.authUrl}/${REPO}.git@${seqOfPush(5)}`)).toEqual(expectedAt(seqOfPush(5)));
    const dir = await mkdtemp(join(tmpdir(), 'narwal-rewound-'));
    await gitOk(['clone', '-q', `${server.authUrl}/${REPO}.git`, dir], { home });
    expect((await gitOk(['rev-parse', 'origin/feature'], { cwd: dir, home })).trim()).toBe(commits.c3);
    const again = await cli('rewind', REPO, String(to), '--refs', 'refs/heads/*');
    expect(again.stdout).toContain('nothing to do');
  });
});

describe('the JSON API', () => {
  it('pages the log newest first', async () => {
    const last = (await server.app.wal.readIndexFully(REPO))?.index.seq ?? 0;
    const first = (await (await api(`/repos/${REPO}/-/log?limit=2`)).json()) as {
      items: { seq: number }[];
      next: number;
      last: number;
    };
    expect(first.items.map((i) => i.seq)).toEqual([last, last - 1]);
    expect(first.last).toBe(last);
    const second = (await (await api(`/repos/${REPO}/-/log?limit=2&before=${first.next}`)).json()) as {
      items: { seq: number }[];
    };
    expect(second.items.map((i) => i.seq)).toEqual([last - 2, last - 3]);
    const repos = (await (await api('/repos')).json()) as { repos: { name: string; seq: number }[] };
    expect(repos.repos).toEqual([expect.objectContaining({ name: REPO, seq: last })]);
  });

  it('answers bad requests with a JSON error and changes nothing', async () => {
    const before = await server.app.wal.readIndexFully(REPO);
    const cases: [string, RequestInit, number, string][] = [
      [`/repos/${REPO}/-/refs?at=x`, {}, 400, 'must be an entry number'],
      [`/repos/${REPO}/-/entries/9999`, {}, 404, 'has no entry 9999'],
      [`/repos/${REPO}/-/who`, {}, 400, 'give the ref'],
      [`/repos/${REPO}/-/nothing`, {}, 404, 'no such API'],
      ['/repos/team/none/-/log', {}, 404, 'not found'],
      ['/repos/team/.hidden/-/log', {}, 400, 'invalid repository name'],
      [`/repos/${REPO}/-/rewind`, {}, 405, 'use POST'],
      [`/repos/${REPO}/-/rewind`, { method: 'POST', body: 'to=1' }, 415, 'application/json'],
      [`/repos/${REPO}/-/rewind`, jsonPost({ to: 1, refs: 'refs/[x' }), 400, 'invalid ref pattern'],
      [`/repos/${REPO}/-/rewind`, jsonPost({ to: 1, expect: 1 }), 409, 'the log moved since the preview'],
      [`/repos/${REPO}/-/rewind`, jsonPost({ to: 9999 }), 404, 'has no entry'],
      [`/repos/${REPO}/-/rewind`, jsonPost('[1]'), 400, 'JSON object'],
      [
        `/repos/${REPO}/-/rewind`,
        {
          ...jsonPost({ to: 1 }),
          headers: { 'content-type': 'application/json', origin: 'https://evil.example' },
        },
        403,
        'cross-site',
      ],
    ];
    for (const [path, init, status, message] of cases) {
      const res = await api(path, init);
      expect(res.status, path).toBe(status);
      expect(res.headers.get('content-type')).toContain('application/json');
      expect(((await res.json()) as { error: string }).error, path).toContain(message);
    }
    expect((await server.app.wal.readIndexFully(REPO))?.etag).toBe(before?.etag);
  });

  it('rewinds with a dry run first, then as previewed', async () => {
    const at = (await server.app.wal.readIndexFully(REPO))?.index.seq ?? 0;
    const dry = (await (
      await api(`/repos/${REPO}/-/rewind`, jsonPost({ to: seqOfPush(5), dryRun: true }))
    ).json()) as {
      plan: { at: number; commands: { ref: string }[] };
      seq: number | null;
    };
    expect(dry.seq).toBeNull();
    expect(dry.plan.at).toBe(at);
    expect(dry.plan.commands.map((c) => c.ref)).toEqual(['refs/heads/feature', 'refs/heads/main']);
    const res = await api(`/repos/${REPO}/-/rewind`, jsonPost({ to: seqOfPush(5), expect: dry.plan.at }));
    expect(res.status).toBe(200);
    const done = (await res.json()) as { seq: number };
    expect(done.seq).toBeGreaterThan(at);
    expect(await lsRemote(`${server.authUrl}/${REPO}.git`)).toEqual(expectedAt(seqOfPush(5)));
  });
});

function jsonPost(body: unknown): RequestInit {
  return {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  };
}

describe('a rewind round trip', () => {
  it('pushes A, B, C, rewinds to A: clones show A, the log has four entries, the dry run wrote nothing', async () => {
    const local = await startInProcess({ env: { NARWAL_CHECKPOINT_EVERY: '1000' } });
    try {
      const dir = await workRepo(home, 0, 'abc');
      const url = `${local.authUrl}/team/abc.git`;
      const a = await commitFile(dir, home, 'f.txt', 'A\n', 'A');
      await gitOk(['push', '-q', url, 'main'], { cwd: dir, home });
      await commitFile(dir, home, 'f.txt', 'B\n', 'B');
      await gitOk(['push', '-q', url, 'main'], { cwd: dir, home });
      await commitFile(dir, home, 'f.txt', 'C\n', 'C');
      await gitOk(['push', '-q', url, 'main'], { cwd: dir, home });
      await local.app.idle();

      const objects = async () => {
        let count = 0;
        let startAfter: string | undefined;
        do {
          const page = await local.app.store.list('', startAfter ? { startAfter } : {});
          count += page.keys.length;
          startAfter = page.next;
        } while (startAfter);
        return count;
      };
      const before = await objects();
      const dry = await narwalCli(['rewind', 'team/abc', '1', '--dry-run'], { dataDir: local.dataDir });
      expect(dry.stdout).toContain('would update 1 ref(s)');
      expect(await objects()).toBe(before);

      const done = await narwalCli(['rewind', 'team/abc', '1'], { dataDir: local.dataDir });
      expect(done.stdout).toContain('published as entry 4');
      const clone = await mkdtemp(join(tmpdir(), 'narwal-abc-'));
      await gitOk(['clone', '-q', url, clone], { home });
      expect((await gitOk(['rev-parse', 'HEAD'], { cwd: clone, home })).trim()).toBe(a);

      const log = (await (
        await fetch(`${local.url}/api/v1/repos/team/abc/-/log`, { headers: { authorization: auth } })
      ).json()) as { items: { seq: number; kind?: string; rewind?: { to: number } }[] };
      expect(log.items.map((i) => i.seq)).toEqual([4, 3, 2, 1]);
      expect(log.items[0]).toMatchObject({ kind: 'rewind', rewind: { to: 1 } });
    } finally {
      await local.stop();
    }
  });
});
