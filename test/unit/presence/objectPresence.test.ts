import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ObjectPresenceStore } from '../../../lib/presence/ObjectPresenceStore.js';
import { PresenceUnavailable } from '../../../lib/presence/PresenceStore.js';
import { StoreUnavailable } from '../../../lib/store/errors.js';
import { FsObjectStore } from '../../../lib/store/FsObjectStore.js';
import type { ObjectStore } from '../../../lib/store/ObjectStore.js';
import { describePresenceConformance } from '../../helpers/presenceConformance.js';

describePresenceConformance('objects on the filesystem store', async (now) => {
  const root = await mkdtemp(join(tmpdir(), 'narwal-presence-'));
  return {
    store: new ObjectPresenceStore({ store: new FsObjectStore(root), now }),
    cleanup: () => rm(root, { recursive: true, force: true }),
  };
});

describe('ObjectPresenceStore', () => {
  let root: string;
  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), 'narwal-presence-unit-'));
  });
  afterAll(async () => {
    await rm(root, { recursive: true, force: true });
  });

  it('files records under its prefix as hex of the key and id', async () => {
    const dir = join(root, 'layout');
    const presence = new ObjectPresenceStore({ store: new FsObjectStore(dir), prefix: 'p/' });
    await presence.tryCreate({ key: 'k', id: 'a/b', owner: 'o', expiresAt: Date.now() + 60_000 });
    expect(await readdir(join(dir, 'objects', 'p'))).toEqual(['6b.k']);
    expect(await readdir(join(dir, 'objects', 'p', '6b.k'))).toEqual(['612f62.r']);
  });

  it('files an id of a read lease under one name, so releasing it leaves nothing behind', async () => {
    const dir = join(root, 'leases');
    const presence = new ObjectPresenceStore({ store: new FsObjectStore(dir, { keepEmptyDirs: true }) });
    const key = 'repo#team/project';
    for (let i = 0; i < 5; i++) {
      // The shape of leases.ts's ids: lease#<generation>#<uuid>.
      const id = `lease#00000000000${i}-da98c0085f65#${randomUUID()}`;
      expect(await presence.tryCreate({ key, id, owner: 'o', expiresAt: Date.now() + 60_000 })).toBe(true);
      await presence.release(key, id, 'o');
    }
    const partition = join(dir, 'objects', 'presence', `${Buffer.from(key).toString('hex')}.k`);
    expect(await readdir(partition)).toEqual([]);
    // An id longer than one name still works, in a directory of its own.
    const long = `lease#${'x'.repeat(200)}`;
    expect(await presence.tryCreate({ key, id: long, owner: 'o', expiresAt: Date.now() + 60_000 })).toBe(
      true,
    );
    expect((await presence.get(key, long))?.owner).toBe('o');
    expect((await presence.list(key, 'lease#')).map((r) => r.id)).toEqual([long]);
  });

  it('removes the empty directories older versions left in a partition when it lists it', async () => {
    const dir = join(root, 'leftovers');
    const presence = new ObjectPresenceStore({ store: new FsObjectStore(dir, { keepEmptyDirs: true }) });
    const key = 'repo#old/project';
    const partition = join(dir, 'objects', 'presence', `${Buffer.from(key).toString('hex')}.k`);
    // What a release left behind when a lease's id took two 128-character segments.
    const left = Array.from({ length: 3 }, (_, i) => join(partition, `${'6c'.repeat(63)}3${i}`));
    for (const d of left) await mkdir(d, { recursive: true });
    await mkdir(join(left[0] ?? '', 'deeper'));
    const id = `lease#000000000009-da98c0085f65#${randomUUID()}`;
    await presence.tryCreate({ key, id, owner: 'o', expiresAt: Date.now() + 60_000 });
    expect((await presence.list(key, 'lease#')).map((r) => r.id)).toEqual([id]);
    expect(await readdir(partition)).toHaveLength(1);
    // The partition itself stays, and records come and go in it as before.
    await presence.release(key, id, 'o');
    expect(await presence.list(key)).toEqual([]);
    expect(await readdir(partition)).toEqual([]);
    expect(await presence.tryCreate({ key, id: 'writer', owner: 'o', expiresAt: Date.now() + 60_000 })).toBe(
      true,
    );
  });

  it('refuses a key or id that is not well-formed Unicode instead of letting it collide', async () => {
    const presence = new ObjectPresenceStore({ store: new FsObjectStore(join(root, 'surrogates')) });
    const record = { key: 'k', id: 'x\ud800', owner: 'o', expiresAt: Date.now() + 60_000 };
    await expect(presence.tryCreate(record)).rejects.toThrow(TypeError);
    await expect(presence.get('k\udfff', 'id')).rejects.toThrow(TypeError);
  });

  it('turns StoreUnavailable into PresenceUnavailable with the cause', async () => {
    const failure = new StoreUnavailable('presence/x', 'S3 SlowDown, HTTP 503');
    const broken: ObjectStore = {
      get: () => Promise.reject(failure),
      getStream: () => Promise.reject(failure),
      head: () => Promise.reject(failure),
      stat: () => Promise.reject(failure),
      put: () => Promise.reject(failure),
      putStream: () => Promise.reject(failure),
      list: () => Promise.reject(failure),
      delete: () => Promise.reject(failure),
      renew: () => Promise.reject(failure),
    };
    const presence = new ObjectPresenceStore({ store: broken });
    const record = { key: 'k', id: 'writer', owner: 'o', expiresAt: Date.now() + 60_000 };
    for (const attempt of [
      () => presence.tryCreate(record),
      () => presence.renew('k', 'writer', 'o', Date.now()),
      () => presence.release('k', 'writer', 'o'),
      () => presence.get('k', 'writer'),
      () => presence.list('k'),
    ]) {
      const error = await attempt().then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(PresenceUnavailable);
      expect((error as PresenceUnavailable).cause).toBe(failure);
    }
  });
});

describe('ObjectPresenceStore across processes', () => {
  let work: string;
  let bundle: string;

  beforeAll(async () => {
    work = await mkdtemp(join(tmpdir(), 'narwal-presence-procs-'));
    bundle = join(work, 'presence.mjs');
    // The children run plain JavaScript: bundle the adapter and the filesystem store they use.
    await build({
      stdin: {
        contents: [
          `export { ObjectPresenceStore } from './lib/presence/ObjectPresenceStore.ts';`,
          `export { FsObjectStore } from './lib/store/FsObjectStore.ts';`,
        ].join('\n'),
        resolveDir: fileURLToPath(new URL('../../..', import.meta.url)),
        loader: 'ts',
      },
      bundle: true,
      platform: 'node',
      target: 'node20',
      format: 'esm',
      outfile: bundle,
      logLevel: 'warning',
    });
    // Each child loads the bundle, says "ready", waits for "go" on stdin so that all of them
    // start at once, calls tryCreate once and prints the answer.
    await writeFile(
      join(work, 'racer.mjs'),
      `import { createInterface } from 'node:readline';
const [bundle, root, key, id, owner, nowMs] = process.argv.slice(2);
const { ObjectPresenceStore, FsObjectStore } = await import(bundle);
const now = Number(nowMs);
const presence = new ObjectPresenceStore({ store: new FsObjectStore(root), now: () => now });
const lines = createInterface({ input: process.stdin });
console.log('ready');
for await (const line of lines) {
  if (line !== 'go') continue;
  const won = await presence.tryCreate({ key, id, owner, expiresAt: now + 60_000 });
  console.log(won ? 'won' : 'lost');
  break;
}
lines.close();
`,
    );
  }, 60_000);

  afterAll(async () => {
    await rm(work, { recursive: true, force: true });
  });

  /** Starts `count` racer processes, releases them together and collects who won. */
  async function race(root: string, key: string, nowMs: number, count: number): Promise<string[]> {
    const children = Array.from({ length: count }, (_, i) =>
      spawn(
        process.execPath,
        [join(work, 'racer.mjs'), bundle, root, key, 'writer', `process-${i}`, String(nowMs)],
        {
          stdio: ['pipe', 'pipe', 'inherit'],
        },
      ),
    );
    const outputs = children.map((child) => {
      const lines = createInterface({ input: child.stdout });
      const iterator = lines[Symbol.asyncIterator]();
      const exit = new Promise<number | null>((done) => child.once('exit', (code) => done(code)));
      return { child, next: async () => (await iterator.next()).value as string | undefined, exit };
    });
    try {
      for (const o of outputs) expect(await o.next()).toBe('ready');
      for (const o of outputs) o.child.stdin.end('go\n');
      const answers = await Promise.all(outputs.map((o) => o.next()));
      for (const o of outputs) expect(await o.exit).toBe(0);
      return answers.flatMap((answer, i) => (answer === 'won' ? [`process-${i}`] : []));
    } finally {
      for (const { child } of outputs) if (child.exitCode === null && child.pid) child.kill('SIGKILL');
    }
  }

  it('lets exactly one of 8 processes create a record, and one of 8 replace it once expired', async () => {
    const root = join(work, 'shared');
    const now = Date.now();
    const winners = await race(root, 'repo#team/app', now, 8);
    expect(winners).toHaveLength(1);
    const reader = new ObjectPresenceStore({ store: new FsObjectStore(root), now: () => now });
    expect((await reader.get('repo#team/app', 'writer'))?.owner).toBe(winners[0]);

    const later = now + 60_001; // the first winner's record has expired
    const second = await race(root, 'repo#team/app', later, 8);
    expect(second).toHaveLength(1);
    const laterReader = new ObjectPresenceStore({ store: new FsObjectStore(root), now: () => later });
    expect((await laterReader.get('repo#team/app', 'writer'))?.owner).toBe(second[0]);
  }, 60_000);
});
