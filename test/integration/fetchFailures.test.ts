/**
 * Fetches that fail on narwal's side, told to real git clients in words they print: upload-pack
 * stopping after its answer has begun (killed, its repository deleted under it, a disk error),
 * and a fetch's POST failing before any answer (git shows nothing of a failed POST's body). After
 * each, the next fetch gets everything. narwal runs here with a process spawner that cuts
 * upload-pack's output at a chosen point of a fetch's answer (a node script between git and
 * narwal, exiting 1 as git does on a fatal error), or refuses to start it.
 */
import { mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { App } from '../../lib/app.js';
import { directSpawner, type ProcessSpawner } from '../../lib/git/ProcessSpawner.js';
import { commitFile, git, gitOk, makeHome, workRepo } from '../helpers/gitClient.js';
import { type RunningNarwal, startInProcess } from '../helpers/narwalServer.js';

type Cut = 'off' | 'acks' | 'band1' | 'mid' | 'refuse' | 'vanish' | 'replace';

/**
 * Passes git's packets through until the cut (`acks`: after v2's `acknowledgments` line; `band1`:
 * after the first pack data packet; `mid`: halfway into it), then says so on stderr and exits 1.
 * An answer without the cut point passes whole.
 */
const CUTTER = `
const mode = process.argv[1];
let buf = Buffer.alloc(0);
let cut = false;
const stop = (upTo) => {
  cut = true;
  process.stdout.write(buf.subarray(0, upTo), () => {
    process.stderr.write('fatal: cut by the test\\n');
    process.exit(1);
  });
};
process.stdin.on('data', (chunk) => {
  if (cut) return;
  buf = Buffer.concat([buf, chunk]);
  let at = 0;
  while (buf.length - at >= 4) {
    const length = parseInt(buf.toString('latin1', at, at + 4), 16);
    const size = length < 4 ? 4 : length;
    if (mode === 'mid' && length > 6 && buf.length - at > 4 && buf[at + 4] === 1)
      return stop(at + 4 + Math.floor((length - 4) / 2));
    if (buf.length - at < size) break;
    const payload = buf.subarray(at + 4, at + size);
    at += size;
    if ((mode === 'acks' && payload.toString() === 'acknowledgments\\n') || (mode === 'band1' && payload[0] === 1))
      return stop(at);
  }
  process.stdout.write(buf.subarray(0, at));
  buf = buf.subarray(at);
});
process.stdin.on('end', () => { if (!cut) process.stdout.write(buf); });
`;

let cut: Cut = 'off';
/**
 * upload-pack's output through CUTTER while `cut` names a point; for a POST, not started at all
 * while it is `refuse`, started in a generation just deleted while it is `vanish` (and made again
 * empty while it is `replace`); every other process as it is.
 */
const cutting: ProcessSpawner = {
  spawn: (command, args, options) => {
    if (cut === 'off' || !args.includes('upload-pack')) return directSpawner.spawn(command, args, options);
    // A fetch's POST only: v0's advertisement (a GET, whose body git shows) starts as it is.
    if (cut === 'refuse' && !args.includes('--advertise-refs'))
      return Promise.reject(new Error('the test refuses to start upload-pack'));
    if (cut === 'refuse') return directSpawner.spawn(command, args, options);
    // The generation upload-pack is given (its last argument) deleted just before it starts.
    if (cut === 'vanish' && !args.includes('--advertise-refs'))
      return rm(args.at(-1) as string, { recursive: true, force: true }).then(() =>
        directSpawner.spawn(command, args, options),
      );
    if (cut === 'vanish') return directSpawner.spawn(command, args, options);
    // Deleted, and an empty directory in its place (as another request's build starts it again).
    if (cut === 'replace' && !args.includes('--advertise-refs')) {
      const dir = args.at(-1) as string;
      return rm(dir, { recursive: true, force: true })
        .then(() => mkdir(dir))
        .then(() => directSpawner.spawn(command, args, options));
    }
    if (cut === 'replace') return directSpawner.spawn(command, args, options);
    return directSpawner.spawn(
      'sh',
      ['-c', `"$0" "$@" | "${process.execPath}" -e "$NARWAL_TEST_CUTTER" ${cut}`, command, ...args],
      { ...options, env: { ...options.env, NARWAL_TEST_CUTTER: CUTTER } },
    );
  },
  close: () => {},
};

let server: RunningNarwal & { app: App };
let home: string;

beforeAll(async () => {
  server = await startInProcess({ spawner: cutting });
  home = await makeHome();
});
afterAll(async () => {
  await server?.stop();
});

const STOPPED = 'narwal: git upload-pack stopped before its answer was whole (';

/** A clone one push behind its repository, and the commit its next fetch should bring. */
interface Behind {
  readonly clone: string;
  readonly want: string;
}

/**
 * A repository at `repo` cloned at its first push, then pushed to again: the clone's next fetch
 * has haves, so it always goes to git.
 */
async function behindByOne(repo: string): Promise<Behind> {
  const url = `${server.authUrl}/${repo}.git`;
  const work = await workRepo(home, 2);
  await gitOk(['push', '-q', url, 'main'], { cwd: work, home });
  const clone = `${work}-clone`;
  await gitOk(['clone', '-q', url, clone], { home });
  const want = await commitFile(work, home, 'more.txt', 'more\n'.repeat(2000));
  await gitOk(['push', '-q', url, 'main'], { cwd: work, home });
  return { clone, want };
}

/** The clone's fetch while upload-pack is treated as `as` says: it fails and brings nothing. */
async function failedFetch(behind: Behind, version: string, as: Cut): Promise<string> {
  const { clone, want } = behind;
  cut = as;
  const out = await git(['-c', `protocol.version=${version}`, 'fetch', 'origin'], {
    cwd: clone,
    home,
  }).finally(() => {
    cut = 'off';
  });
  expect(out.code).not.toBe(0);
  expect((await gitOk(['rev-parse', 'origin/main'], { cwd: clone, home })).trim()).not.toBe(want);
  return out.stderr;
}

/** The next fetch, as usual, brings `want`, and the clone is whole. */
async function fetchesAfter(behind: Behind, version: string): Promise<void> {
  const { clone, want } = behind;
  await gitOk(['-c', `protocol.version=${version}`, 'fetch', 'origin'], { cwd: clone, home });
  expect((await gitOk(['rev-parse', 'origin/main'], { cwd: clone, home })).trim()).toBe(want);
  await gitOk(['fsck', '--no-dangling'], { cwd: clone, home });
}

describe('an answer git cut short', () => {
  for (const [version, point, shows] of [
    ['2', 'band1', `remote: ${STOPPED}`],
    ['2', 'mid', `remote: ${STOPPED}`],
    ['2', 'acks', `fatal: remote error: ${STOPPED}`],
    ['0', 'band1', `remote: ${STOPPED}`],
  ] as const) {
    it(`is reported to a protocol v${version} fetch cut at ${point}, and the next fetch gets everything`, async () => {
      const behind = await behindByOne(`cut/v${version}-${point}`);
      const stderr = await failedFetch(behind, version, point);
      expect(stderr).toContain(shows);
      expect(stderr).toContain('retry the fetch');
      await fetchesAfter(behind, version);
    });
  }

  it('is reported to a clone that found the cache cold, after the progress sent while preparing it', async () => {
    const url = `${server.authUrl}/cut/cold-clone.git`;
    const work = await workRepo(home, 3);
    await gitOk(['push', '-q', url, 'main'], { cwd: work, home });
    await server.app.idle();
    await rm(join(server.dataDir, 'cache', 'repos'), { recursive: true, force: true });
    cut = 'band1';
    const failed = await git(['-c', 'protocol.version=2', 'clone', url, `${work}-cold`], { home }).finally(
      () => {
        cut = 'off';
      },
    );
    expect(failed.code).not.toBe(0);
    expect(failed.stderr).toContain(`remote: ${STOPPED}`);
    await gitOk(['-c', 'protocol.version=2', 'clone', '-q', url, `${work}-again`], { home });
    await gitOk(['fsck', '--no-dangling'], { cwd: `${work}-again`, home });
  });
});

describe('a fetch whose POST fails before any answer', () => {
  for (const version of ['2', '0']) {
    it(`is told why by an ERR packet that protocol v${version} git prints, and the next fetch works`, async () => {
      const behind = await behindByOne(`refused/v${version}`);
      const stderr = await failedFetch(behind, version, 'refuse');
      expect(stderr).toMatch(/fatal: remote error: narwal: internal error \(request [0-9a-z-]+\)/);
      expect(stderr).not.toContain('RPC failed');
      await fetchesAfter(behind, version);
    });
  }
});

describe('a fetch whose generation is deleted under it', () => {
  for (const version of ['2', '0']) {
    it(`is told to retry (protocol v${version}), not that its request was wrong, and no path is shown`, async () => {
      const behind = await behindByOne(`vanished/v${version}`);
      const stderr = await failedFetch(behind, version, 'vanish');
      expect(stderr).toContain(
        "fatal: remote error: narwal: the server's cache of the repository changed during the fetch; retry the fetch",
      );
      expect(stderr).not.toContain(server.dataDir);
      await fetchesAfter(behind, version);
    });

    it(`is told to retry (protocol v${version}) when the directory is back but empty, and no path is shown`, async () => {
      const behind = await behindByOne(`replaced/v${version}`);
      const stderr = await failedFetch(behind, version, 'replace');
      expect(stderr).toContain(
        "fatal: remote error: narwal: the server's cache of the repository changed during the fetch; retry the fetch",
      );
      expect(stderr).not.toContain(server.dataDir);
      await fetchesAfter(behind, version);
    });
  }
});
