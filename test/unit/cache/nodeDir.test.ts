import { mkdir, mkdtemp, readdir, readFile, rm, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ALIVE, CLOCK_MARGIN_MS, claimNodeDir, type NodeDir } from '../../../lib/cache/nodeDir.js';

const TTL = 60_000;
let root = '';
const claimed: NodeDir[] = [];
afterEach(async () => {
  await Promise.all(claimed.splice(0).map((n) => n.remove()));
  if (root) await rm(root, { recursive: true, force: true });
});

/** A clock the test moves: timers of the nodes (every TTL/3 of real time) never fire in a test. */
function clock(start = Date.now()) {
  let at = start;
  return { now: () => at, advance: (ms: number) => (at += ms) };
}

async function claim(now: () => number): Promise<NodeDir> {
  const node = await claimNodeDir({ cacheRoot: root, ttlMs: TTL, now });
  claimed.push(node);
  return node;
}

const nodeOf = (scratch: string) => dirname(scratch);
const names = async () => (await readdir(join(root, 'nodes'))).sort();

describe('claimNodeDir', () => {
  it('keeps the directory of a live node whatever pid its name carries', async () => {
    root = await mkdtemp(join(tmpdir(), 'narwal-nodedir-'));
    // pid 2^22 + 1 is above Linux's pid_max: no process here has it, but the node lives elsewhere
    // (another PID namespace) and its record says so.
    const elsewhere = join(root, 'nodes', `${2 ** 22 + 1}-00ff00ff`);
    await mkdir(elsewhere, { recursive: true });
    await writeFile(join(elsewhere, ALIVE), JSON.stringify({ expiresAt: Date.now() + TTL }));
    const node = await claim(Date.now);
    const own = nodeOf(await node.scratch())
      .split('/')
      .pop();
    expect(await names()).toEqual([`${2 ** 22 + 1}-00ff00ff`, own].sort());
  });

  it('removes directories whose record expired, even one named after PID 1, and no live one', async () => {
    root = await mkdtemp(join(tmpdir(), 'narwal-nodedir-'));
    const time = clock();
    // A node that was PID 1 in its namespace, gone an hour ago; one from an older version with
    // no record, untouched for an hour; one with a half-written record, as old.
    const pid1 = join(root, 'nodes', '1-abcd1234');
    await mkdir(pid1, { recursive: true });
    await writeFile(join(pid1, ALIVE), JSON.stringify({ expiresAt: time.now() - 3_600_000 }));
    const older = join(root, 'nodes', `${process.pid}-00ff00ff`);
    await mkdir(older, { recursive: true });
    await writeFile(join(older, 'owner.json'), '{"pi');
    const half = join(root, 'nodes', 'n0123-0');
    await mkdir(half, { recursive: true });
    await writeFile(join(half, ALIVE), '{"expiresAt":');
    const hourAgo = new Date(time.now() - 3_600_000);
    for (const dir of [older, half]) await utimes(dir, hourAgo, hourAgo);
    const live = await claim(time.now);
    expect(await names()).toEqual([
      nodeOf(await live.scratch())
        .split('/')
        .pop(),
    ]);
  });

  it('leaves a record alone until it has been expired longer than the clock margin', async () => {
    root = await mkdtemp(join(tmpdir(), 'narwal-nodedir-'));
    const time = clock();
    const frozen = await claim(time.now);
    const frozenDir = nodeOf(await frozen.scratch());
    const other = await claim(time.now);
    time.advance(TTL + CLOCK_MARGIN_MS - 1);
    expect(await other.sweep()).toBe(0);
    time.advance(2);
    expect(await other.sweep()).toBe(1);
    expect(await names()).not.toContain(frozenDir.split('/').pop());
  });

  it('claims a new directory after its record expired, and never revives the old record', async () => {
    root = await mkdtemp(join(tmpdir(), 'narwal-nodedir-'));
    const time = clock();
    const node = await claim(time.now);
    const first = await node.scratch();
    const record = await readFile(join(nodeOf(first), ALIVE), 'utf8');
    // Frozen past its expiry: no timer ran meanwhile.
    time.advance(TTL + 1);
    const second = await node.scratch();
    expect(nodeOf(second)).not.toBe(nodeOf(first));
    expect(await readFile(join(nodeOf(first), ALIVE), 'utf8')).toBe(record);
    // Another node's sweep removes the old one once the margin has passed, not the new one.
    time.advance(CLOCK_MARGIN_MS + 1);
    const other = await claim(time.now);
    await node.scratch();
    expect(await other.sweep()).toBe(0);
    expect(await names()).not.toContain(nodeOf(first).split('/').pop());
    expect(await names()).toContain(nodeOf(second).split('/').pop());
  });

  it('renews on use when its timer has not run, keeping the same directory', async () => {
    root = await mkdtemp(join(tmpdir(), 'narwal-nodedir-'));
    const time = clock();
    const node = await claim(time.now);
    const first = await node.scratch();
    time.advance(TTL - 1);
    expect(await node.scratch()).toBe(first);
    const { expiresAt } = JSON.parse(await readFile(join(nodeOf(first), ALIVE), 'utf8')) as {
      expiresAt: number;
    };
    expect(expiresAt).toBe(time.now() + TTL);
  });

  it('makes its directory and record again when they were deleted under it', async () => {
    root = await mkdtemp(join(tmpdir(), 'narwal-nodedir-'));
    const node = await claim(Date.now);
    const scratch = await node.scratch();
    await rm(join(root, 'nodes'), { recursive: true, force: true });
    expect(await node.scratch()).toBe(scratch);
    await writeFile(join(scratch, 'probe'), 'x');
    const { expiresAt } = JSON.parse(await readFile(join(nodeOf(scratch), ALIVE), 'utf8')) as {
      expiresAt: number;
    };
    expect(expiresAt).toBeGreaterThan(Date.now());
  });

  it('removes every directory it had when it is removed', async () => {
    root = await mkdtemp(join(tmpdir(), 'narwal-nodedir-'));
    const time = clock();
    const node = await claimNodeDir({ cacheRoot: root, ttlMs: TTL, now: time.now });
    await node.scratch();
    time.advance(TTL + 1);
    await node.scratch();
    expect(await names()).toHaveLength(2);
    await node.remove();
    expect(await names()).toEqual([]);
  });
});

describe('a node starting while the shared cache is deleted under it', () => {
  it('claims its directory all the same', async () => {
    root = await mkdtemp(join(tmpdir(), 'narwal-nodedir-'));
    // Another node (or an operator) deletes the cache over and over while nodes start.
    let deleting = true;
    const deleter = (async () => {
      while (deleting) {
        // rm itself may trip over files made while it deletes (ENOTEMPTY): it tries again.
        await rm(join(root, 'nodes'), { recursive: true, force: true }).catch(() => {});
        await new Promise((done) => setImmediate(done));
      }
    })();
    const failures: string[] = [];
    try {
      for (let i = 0; i < 200; i++) {
        await claim(Date.now).then(
          (node) => node.scratch(),
          (error: Error) => failures.push(error.message),
        );
      }
    } finally {
      deleting = false;
      await deleter;
    }
    expect(failures).toEqual([]);
  });
});
