/**
 * Git LFS through narwal's embedded store with Debian's git-lfs 3.3: `git lfs track`, a push of a
 * 200 MB binary and 500 small ones (their bytes uploaded by git-lfs's pre-push hook through the
 * batch API), a clone that smudges them back, and `git lfs pull --include` after a clone that
 * skipped smudging. The server is a real `narwal serve` process, so its peak memory can be read:
 * an object is streamed to disk, never held whole.
 */
import { readFile, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { lfsObjectKey } from '../../../lib/wal/keys.js';
import { gitOk } from '../../helpers/gitClient.js';
import {
  fileSha256,
  makeLfsHome,
  pointerText,
  useToken,
  withToken,
  writeRandomFile,
} from '../../helpers/lfsClient.js';
import { ADMIN_TOKEN, type RunningNarwal, startProcess, tempDataDir } from '../../helpers/narwalServer.js';

const BIG = 200 * 1024 * 1024;
const SMALL = 500;

let server: RunningNarwal & { pid(): number };
let dataDir: string;
let home: string;
const dirs: string[] = [];

beforeAll(async () => {
  dataDir = await tempDataDir();
  server = await startProcess({ dataDir });
  home = await makeLfsHome();
}, 120_000);

afterAll(async () => {
  await server?.stop();
  for (const dir of [...dirs, home, dataDir]) if (dir) await rm(dir, { recursive: true, force: true });
});

/** The server's peak resident memory so far (VmHWM), in bytes. */
async function peakMemory(pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  const kb = /VmHWM:\s+(\d+) kB/.exec(status)?.[1];
  if (kb === undefined) throw new Error('no VmHWM');
  return Number(kb) * 1024;
}

const storePath = (repo: string, oid: string) =>
  join(dataDir, 'store', 'objects', ...lfsObjectKey(repo, oid).split('/'));

describe('git lfs on the embedded store', () => {
  it('takes a 200 MB file and 500 small ones from git lfs, and clone and pull --include give them back', async () => {
    const run = (args: string[], cwd: string, env?: Record<string, string>) =>
      gitOk(args, { cwd, home, ...(env ? { env } : {}) });
    const work = join(home, 'work');
    dirs.push(work);
    await gitOk(['init', '-q', '-b', 'main', work], { home });
    await useToken(work, home, ADMIN_TOKEN);
    await run(['lfs', 'track', '*.bin'], work);
    const big = await writeRandomFile(join(work, 'big.bin'), BIG);
    const small: { name: string; oid: string; size: number }[] = [];
    for (let i = 0; i < SMALL; i++) {
      const name = `small/${String(i).padStart(3, '0')}.bin`;
      const size = 100 + ((i * 37) % 4000);
      small.push({ name, oid: await writeRandomFile(join(work, name), size), size });
    }
    await run(['add', '.'], work);
    await run(['commit', '-q', '-m', 'binaries'], work);
    // What git stores is the pointer, not the bytes.
    expect(await run(['show', 'HEAD:big.bin'], work)).toBe(pointerText(big, BIG));
    const baseline = await peakMemory(server.pid());
    const url = `${server.url}/lfs/app.git`;
    await run(['push', '-q', url, 'main'], work);

    // Every object is in the store under its oid, with its size.
    expect((await stat(storePath('lfs/app', big))).size).toBe(BIG);
    for (const s of small) expect((await stat(storePath('lfs/app', s.oid))).size).toBe(s.size);
    // The 200 MB went through the server without being held in memory.
    expect((await peakMemory(server.pid())) - baseline).toBeLessThan(100 * 1024 * 1024);

    // A clone smudges every file back.
    const clone = join(home, 'clone');
    dirs.push(clone);
    await gitOk(['clone', '-q', url, clone], { home, env: withToken(ADMIN_TOKEN) });
    expect(await fileSha256(join(clone, 'big.bin'))).toBe(big);
    for (const s of small) expect(await fileSha256(join(clone, s.name))).toBe(s.oid);

    // A clone without smudging has pointers; pull --include brings only what it names.
    const lazy = join(home, 'lazy');
    dirs.push(lazy);
    await gitOk(['clone', '-q', url, lazy], {
      home,
      env: { ...withToken(ADMIN_TOKEN), GIT_LFS_SKIP_SMUDGE: '1' },
    });
    await useToken(lazy, home, ADMIN_TOKEN);
    expect(await readFile(join(lazy, 'big.bin'), 'utf8')).toBe(pointerText(big, BIG));
    await run(['lfs', 'pull', '--include', 'small/00*.bin'], lazy);
    for (const s of small.slice(0, 10)) expect(await fileSha256(join(lazy, s.name))).toBe(s.oid);
    const untouched = small[10];
    if (untouched === undefined) throw new Error('no small file 10');
    expect(await readFile(join(lazy, untouched.name), 'utf8')).toBe(
      pointerText(untouched.oid, untouched.size),
    );
    expect(await readFile(join(lazy, 'big.bin'), 'utf8')).toBe(pointerText(big, BIG));
    await run(['lfs', 'pull', '--include', 'big.bin'], lazy);
    expect(await fileSha256(join(lazy, 'big.bin'))).toBe(big);
  }, 600_000);
});
