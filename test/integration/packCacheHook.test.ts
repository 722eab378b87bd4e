/**
 * The pack cache hook (lib/git/packCacheHook.ts) run by the real `sh`, with a stand-in `git` on
 * PATH that counts its runs: the pack of a fetch with no haves (a full clone, or a shallow or
 * filtered fetch) is made once and then served from the file, even to identical requests arriving
 * while it is being made; a fetch with haves packs every time; a
 * failed pack is never kept; a lock its holder no longer keeps fresh (dead, frozen) does not hold
 * anyone up for long.
 */
import { spawn } from 'node:child_process';
import { chmod, mkdir, mkdtemp, readdir, readFile, rm, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  CLONE_SUFFIX,
  installPackCacheHook,
  PACK_CACHE_DIR,
  STALE_SECONDS,
  WAIT_SECONDS,
} from '../../lib/git/packCacheHook.js';

let dir: string;
let hook: string;
let bin: string;
// As upload-pack writes it: the wants, `--not`, the haves (none), an empty line.
const FULL = `${'a'.repeat(40)}\n${'b'.repeat(40)}\n--not\n\n`;

// Stands in for `git pack-objects`: counts its runs, echoes its input, fails when told to, and
// deletes a directory first when told to (the cache, deleted while a pack is being made).
const FAKE_GIT = `#!/bin/sh
echo run >> "$FAKE_RUNS"
[ -n "$FAKE_SLEEP" ] && sleep "$FAKE_SLEEP"
[ -n "$FAKE_RM" ] && rm -rf "$FAKE_RM"
printf 'PACK %s\\n' "$*"
cat
[ -n "$FAKE_BYTES" ] && head -c "$FAKE_BYTES" /dev/zero
exit "\${FAKE_EXIT:-0}"
`;

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'narwal-packcache-'));
  hook = await installPackCacheHook(join(dir, 'hooks'));
  bin = join(dir, 'bin');
  await mkdir(bin);
  await writeFile(join(bin, 'git'), FAKE_GIT);
  await chmod(join(bin, 'git'), 0o755);
  await mkdir(join(dir, 'repo'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** Runs the hook as upload-pack does: `HOOK git [GIT-OPTIONS] pack-objects ARGS`. */
function runHook(
  args: string[],
  stdin: string,
  env: Record<string, string> = {},
  gitOptions: string[] = [],
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(hook, ['git', ...gitOptions, 'pack-objects', ...args], {
      cwd: join(dir, 'repo'),
      env: { ...process.env, PATH: `${bin}:${process.env.PATH}`, FAKE_RUNS: join(dir, 'runs'), ...env },
    });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on('data', (chunk: Buffer) => out.push(chunk));
    child.stderr.on('data', (chunk: Buffer) => err.push(chunk));
    child.on('error', reject);
    child.on('close', (code) =>
      resolve({ code, stdout: Buffer.concat(out).toString(), stderr: Buffer.concat(err).toString() }),
    );
    child.stdin.end(stdin);
  });
}

const runs = async () =>
  (await readFile(join(dir, 'runs'), 'utf8').catch(() => '')).split('\n').filter(Boolean).length;
const cached = async () =>
  (await readdir(join(dir, 'repo', PACK_CACHE_DIR)).catch(() => [] as string[])).filter((n) =>
    n.endsWith('.pack'),
  );
const leftovers = async () =>
  (await readdir(join(dir, 'repo', PACK_CACHE_DIR)).catch(() => [] as string[])).filter(
    (n) => !n.endsWith('.pack'),
  );

describe('pack cache hook', () => {
  it('packs a full clone once and serves the same bytes from the file afterwards', async () => {
    const first = await runHook(['--revs', '--stdout'], FULL);
    const second = await runHook(['--revs', '--stdout'], FULL);
    expect(first).toEqual({ code: 0, stdout: `PACK pack-objects --revs --stdout\n${FULL}`, stderr: '' });
    expect(second).toEqual(first);
    expect(await runs()).toBe(1);
    expect(await cached()).toHaveLength(1);
    expect(await leftovers()).toEqual([]);
    // Other arguments are another pack.
    await runHook(['--revs', '--stdout', '--include-tag'], FULL);
    expect(await runs()).toBe(2);
    expect(await cached()).toHaveLength(2);
  });

  it('makes identical clones that arrive while it packs wait for that one pack', async () => {
    const all = await Promise.all(
      Array.from({ length: 6 }, () => runHook(['--revs', '--stdout'], FULL, { FAKE_SLEEP: '0.5' })),
    );
    expect(await runs()).toBe(1);
    for (const one of all) expect(one).toEqual(all[0]);
    expect(all[0]?.code).toBe(0);
  });

  it('packs every fetch with haves, shallow or filtered or not, and keeps none of them', async () => {
    const withHaves = `${'a'.repeat(40)}\n--not\n${'c'.repeat(40)}\n\n`;
    const shallowWithHaves = `--shallow ${'d'.repeat(40)}\n${'a'.repeat(40)}\n--not\n${'c'.repeat(40)}\n\n`;
    for (let i = 0; i < 2; i++) {
      // Read once into the shell and given on from there: the same bytes as upload-pack wrote.
      expect((await runHook(['--revs', '--stdout'], withHaves)).stdout).toBe(
        `PACK pack-objects --revs --stdout\n${withHaves}`,
      );
      await runHook(['--revs', '--stdout', '--filter=blob:none'], withHaves);
      await runHook(['--revs', '--stdout', '--shallow'], shallowWithHaves, {}, ['--shallow-file', '']);
    }
    expect(await runs()).toBe(6);
    expect(await cached()).toEqual([]);
    expect(await leftovers()).toEqual([]);
  });

  it('keeps the pack of a shallow or filtered fetch with no haves, apart from a full clone', async () => {
    // As upload-pack runs it for `fetch --depth=1`: git's own `--shallow-file ""` before
    // pack-objects, and the boundary commits before the wants.
    const shallow = `--shallow ${'d'.repeat(40)}\n${'a'.repeat(40)}\n--not\n\n`;
    const depth = () => runHook(['--revs', '--stdout', '--shallow'], shallow, {}, ['--shallow-file', '']);
    const filtered = () => runHook(['--revs', '--stdout', '--filter=blob:none'], FULL);
    for (let i = 0; i < 2; i++) {
      expect(await depth()).toEqual({
        code: 0,
        stdout: `PACK --shallow-file  pack-objects --revs --stdout --shallow\n${shallow}`,
        stderr: '',
      });
      expect((await filtered()).stdout).toBe(`PACK pack-objects --revs --stdout --filter=blob:none\n${FULL}`);
      await runHook(['--revs', '--stdout'], FULL);
    }
    expect(await runs()).toBe(3);
    expect(await cached()).toHaveLength(3);
    expect(await leftovers()).toEqual([]);
    // Given narwal's name for the request, the hook names the pack by it (no hash of its input to
    // compute), links it under \`<name>.clone\` for narwal, and serves the next fetch of that name.
    const key = 'e'.repeat(64);
    const named = () =>
      runHook(['--revs', '--stdout', '--shallow'], shallow, { NARWAL_CLONE_KEY: key }, [
        '--shallow-file',
        '',
      ]);
    const expected = {
      code: 0,
      stdout: `PACK --shallow-file  pack-objects --revs --stdout --shallow\n${shallow}`,
      stderr: '',
    };
    expect(await named()).toEqual(expected);
    expect(await named()).toEqual(expected);
    expect(await runs()).toBe(4);
    expect(await cached()).toContain(`${key}.pack`);
    expect(await readFile(join(dir, 'repo', PACK_CACHE_DIR, `${key}${CLONE_SUFFIX}`), 'utf8')).toBe(
      expected.stdout,
    );
    // A name that is not narwal's (not lowercase hex) is ignored: the input names the pack.
    await runHook(['--revs', '--stdout', '--shallow'], shallow, { NARWAL_CLONE_KEY: '../x' }, [
      '--shallow-file',
      '',
    ]);
    expect(await runs()).toBe(4);
  });

  it('keeps the pack before the first fetch has read it, so a slow client holds up no one', async () => {
    // The first fetch's client reads nothing (a CI job on a busy machine, indexing slowly), and
    // the pack is larger than a pipe holds.
    const first = spawn(hook, ['git', 'pack-objects', '--revs', '--stdout'], {
      cwd: join(dir, 'repo'),
      env: {
        ...process.env,
        PATH: `${bin}:${process.env.PATH}`,
        FAKE_RUNS: join(dir, 'runs'),
        FAKE_BYTES: String(4 * 1024 * 1024),
      },
    });
    const firstDone = new Promise<number | null>((done) => first.on('close', done));
    first.stdout.pause();
    first.stdin.end(FULL);
    try {
      while ((await cached()).length === 0) await sleep(20);
      const second = await runHook(['--revs', '--stdout'], FULL, { FAKE_BYTES: String(4 * 1024 * 1024) });
      expect(second.code).toBe(0);
      expect(second.stdout.length).toBe(
        `PACK pack-objects --revs --stdout\n${FULL}`.length + 4 * 1024 * 1024,
      );
      expect(await runs()).toBe(1);
    } finally {
      first.stdout.resume();
    }
    expect(await firstDone).toBe(0);
  });

  it('keeps no pack when pack-objects fails, and passes its exit status on', async () => {
    const failed = await runHook(['--revs', '--stdout'], FULL, { FAKE_EXIT: '3' });
    expect(failed.code).toBe(3);
    expect(await cached()).toEqual([]);
    expect(await leftovers()).toEqual([]);
    expect((await runHook(['--revs', '--stdout'], FULL)).code).toBe(0);
    expect(await runs()).toBe(2);
    expect(await cached()).toHaveLength(1);
  });

  it('answers a fetch whose cache is deleted while it packs, with nothing said on the sideband', async () => {
    const cache = join(dir, 'repo', PACK_CACHE_DIR);
    const answer = await runHook(['--revs', '--stdout'], FULL, { FAKE_RM: cache });
    expect(answer).toEqual({ code: 0, stdout: `PACK pack-objects --revs --stdout\n${FULL}`, stderr: '' });
    expect(await cached()).toEqual([]);
    // The next identical fetch makes the cache again and keeps its pack.
    expect((await runHook(['--revs', '--stdout'], FULL)).code).toBe(0);
    expect(await cached()).toHaveLength(1);
    expect(await runs()).toBe(2);
  });

  it('packs without the cache when it is deleted while the fetch waits for an identical one', async () => {
    // Learn the key, then leave a fresh lock as a holder still packing would: without a cache to
    // wait in, the fetch must not wait for that lock to go stale (nor then for WAIT_SECONDS).
    await runHook(['--revs', '--stdout'], FULL);
    const [pack] = await cached();
    if (!pack) throw new Error('no cached pack');
    const cache = join(dir, 'repo', PACK_CACHE_DIR);
    await rm(join(cache, pack));
    await writeFile(join(cache, `${pack.slice(0, -'.pack'.length)}.lock`), '1\n');
    const waiting = runHook(['--revs', '--stdout'], FULL);
    await sleep(300);
    await rm(cache, { recursive: true, force: true });
    expect(await waiting).toEqual({
      code: 0,
      stdout: `PACK pack-objects --revs --stdout\n${FULL}`,
      stderr: '',
    });
    expect(await runs()).toBe(2);
  });

  it('takes over a lock its holder no longer keeps fresh (dead, or in a PID namespace of its own)', async () => {
    expect(WAIT_SECONDS * 1000).toBeGreaterThan(60_000);
    // Learn the key from a first run, then leave a lock for it that nobody has touched for a while,
    // naming a pid that means nothing here.
    await runHook(['--revs', '--stdout'], FULL);
    const [pack] = await cached();
    if (!pack) throw new Error('no cached pack');
    const key = pack.slice(0, -'.pack'.length);
    await rm(join(dir, 'repo', PACK_CACHE_DIR, pack));
    const lock = join(dir, 'repo', PACK_CACHE_DIR, `${key}.lock`);
    await writeFile(lock, '1\n');
    const past = new Date(Date.now() - (STALE_SECONDS + 1) * 1000);
    await utimes(lock, past, past);
    // (A holder that keeps its lock fresh would be waited for up to WAIT_SECONDS, past this test's timeout.)
    const again = await runHook(['--revs', '--stdout'], FULL);
    expect(again.code).toBe(0);
    expect(await runs()).toBe(2);
    expect(await cached()).toEqual([pack]);
  });

  it('stops waiting for a holder frozen while it packs, and both clones get the pack', async () => {
    // The holder and everything it started in a process group of its own, to be stopped as one.
    const holder = spawn(hook, ['git', 'pack-objects', '--revs', '--stdout'], {
      cwd: join(dir, 'repo'),
      env: {
        ...process.env,
        PATH: `${bin}:${process.env.PATH}`,
        FAKE_RUNS: join(dir, 'runs'),
        FAKE_SLEEP: '2',
      },
      detached: true,
    });
    const held: Buffer[] = [];
    holder.stdout.on('data', (chunk: Buffer) => held.push(chunk));
    const holderDone = new Promise<number | null>((done) => holder.on('close', done));
    holder.stdin.end(FULL);
    const locked = async () =>
      (await readdir(join(dir, 'repo', PACK_CACHE_DIR)).catch(() => [] as string[])).some((n) =>
        n.endsWith('.lock'),
      );
    while (!(await locked())) await sleep(20);
    const group = holder.pid ?? 0;
    process.kill(-group, 'SIGSTOP');
    try {
      // Served while the holder is still stopped.
      const waiter = await runHook(['--revs', '--stdout'], FULL);
      expect(waiter).toEqual({ code: 0, stdout: `PACK pack-objects --revs --stdout\n${FULL}`, stderr: '' });
    } finally {
      process.kill(-group, 'SIGCONT');
    }
    expect(await holderDone).toBe(0);
    expect(Buffer.concat(held).toString()).toBe(`PACK pack-objects --revs --stdout\n${FULL}`);
    expect(await cached()).toHaveLength(1);
  });
});
