/**
 * The in-process pack reader against git's own answers: every object of real packs (whole objects,
 * offset deltas, reference deltas of a thin pack fixed by index-pack, tags of tags), compared with
 * `git cat-file`; and what it leaves to git (packs past the limits, objects outside the packs).
 */
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GitBudget } from '../../../lib/git/GitBudget.js';
import { GitRunner, type GitSpawnOptions } from '../../../lib/git/GitRunner.js';
import { applyDelta, PackObjects } from '../../../lib/git/packObjects.js';
import { peelTags } from '../../../lib/git/peelTags.js';
import { ReceivedObjects } from '../../../lib/git/receivedObjects.js';
import { gitSync } from '../../helpers/gitClient.js';

let root: string;
const git = gitSync;

/** A GitRunner that counts the git processes it starts. */
class CountingRunner extends GitRunner {
  spawned: string[] = [];
  override spawn(args: readonly string[], options: GitSpawnOptions) {
    this.spawned.push(args.join(' '));
    return super.spawn(args, options);
  }
}
const runner = () => new CountingRunner({ budget: new GitBudget(4, 0), home: root });

/** Every object of `repo`: name, type, size and contents, as `git cat-file --batch-all-objects` tells. */
function gitObjects(repo: string): Map<string, { type: string; size: number; body: Buffer }> {
  const out = git(repo, ['cat-file', '--batch-all-objects', '--batch']);
  const objects = new Map<string, { type: string; size: number; body: Buffer }>();
  for (let at = 0; at < out.length; ) {
    const eol = out.indexOf(10, at);
    const [oid = '', type = '', size = ''] = out.toString('utf8', at, eol).split(' ');
    const body = out.subarray(eol + 1, eol + 1 + Number(size));
    objects.set(oid, { type, size: Number(size), body });
    at = eol + 1 + Number(size) + 1;
  }
  return objects;
}

async function packFiles(repo: string): Promise<{ packPath: string; idxPath: string }[]> {
  const dir = join(repo, '.git', 'objects', 'pack');
  return (await readdir(dir))
    .filter((n) => n.endsWith('.pack'))
    .map((n) => ({ packPath: join(dir, n), idxPath: join(dir, n.replace(/\.pack$/, '.idx')) }));
}

/** How many entries of the repository's packs are deltas (verify-pack's lines with a depth). */
function deltaCount(repo: string, idxPath: string): number {
  return git(repo, ['verify-pack', '-v', idxPath])
    .toString('utf8')
    .split('\n')
    .filter((l) => /^[0-9a-f]{40} \w+ +\d+ \d+ \d+ \d+ [0-9a-f]{40}$/.test(l)).length;
}

/** Text files that differ a little between commits, so that git stores most of them as deltas. */
function version(i: number, n: number): string {
  const lines = Array.from(
    { length: 400 },
    (_, k) => `line ${k} of file ${n}: ${k % 7 === 0 ? i : 'same'}\n`,
  );
  return lines.join('');
}

let repo: string;

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'narwal-pack-objects-'));
  repo = join(root, 'repo');
  git(root, ['init', '-q', '-b', 'main', repo]);
  for (let i = 0; i < 6; i++) {
    for (let n = 0; n < 4; n++) await writeFile(join(repo, `f${n}.txt`), version(i, n));
    await writeFile(join(repo, 'small'), `small ${i}\n`);
    git(repo, ['add', '-A']);
    git(repo, ['commit', '-qm', `commit ${i}`]);
  }
  git(repo, ['tag', '-a', '-m', 'first tag', 'v1']);
  git(repo, ['tag', '-a', '-m', 'a tag of a tag', 'v1-outer', 'v1']);
  git(repo, ['tag', 'light']);
  git(repo, ['repack', '-adfq', '--depth=50', '--window=50']);
});

afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

describe('PackObjects', () => {
  it('answers the type, size and contents of every object of a pack with deltas as git does', async () => {
    const [files] = await packFiles(repo);
    if (!files) throw new Error('no pack');
    expect(deltaCount(repo, files.idxPath)).toBeGreaterThan(10);
    const packed = await PackObjects.read([files]);
    if (!packed) throw new Error('pack not read');
    const expected = gitObjects(repo);
    expect(packed.oids().sort()).toEqual([...expected.keys()].sort());
    for (const [oid, object] of expected) {
      expect(packed.info(oid), oid).toEqual({ type: object.type, size: object.size });
      expect(packed.contents(oid)?.equals(object.body), oid).toBe(true);
    }
  });

  it('reads reference deltas against the bases index-pack appended to a thin pack', async () => {
    const receiver = join(root, 'receiver');
    const sender = join(root, 'sender');
    git(root, ['clone', '-q', '--bare', '--no-local', repo, receiver]);
    git(root, ['clone', '-q', '--no-local', repo, sender]);
    // A new commit whose files are deltas of the receiver's objects, sent as a thin pack.
    for (let n = 0; n < 4; n++) await writeFile(join(sender, `f${n}.txt`), version(99, n));
    git(sender, ['commit', '-qam', 'thin']);
    const thin = git(sender, ['pack-objects', '--thin', '--stdout', '--revs', '-q'], 'HEAD\n^HEAD~1\n');
    const lock = git(receiver, ['index-pack', '--stdin', '--fix-thin', '--strict'], thin).toString('utf8');
    const name = /^pack\s+([0-9a-f]{40})/.exec(lock)?.[1];
    const base = join(receiver, 'objects', 'pack', `pack-${name}`);
    const files = { packPath: `${base}.pack`, idxPath: `${base}.idx` };
    expect(deltaCount(receiver, files.idxPath)).toBeGreaterThan(0);
    const packed = await PackObjects.read([files]);
    if (!packed) throw new Error('pack not read');
    const all = gitObjects(receiver);
    expect(packed.oids().length).toBeGreaterThan(4);
    for (const oid of packed.oids()) {
      const object = all.get(oid);
      expect(packed.info(oid), oid).toEqual({ type: object?.type, size: object?.size });
      expect(packed.contents(oid)?.equals(object?.body ?? Buffer.alloc(0)), oid).toBe(true);
    }
  });

  it('leaves packs larger than its limit, and contents past its inflate cap, to the caller', async () => {
    const [files] = await packFiles(repo);
    if (!files) throw new Error('no pack');
    expect(await PackObjects.read([files], { maxPackBytes: 100, maxInflatedBytes: 1 << 20 })).toBeNull();
    const capped = await PackObjects.read([files], { maxPackBytes: 1 << 30, maxInflatedBytes: 1000 });
    const big = [...gitObjects(repo)].find(([, o]) => o.size > 5000);
    if (!capped || !big) throw new Error('fixture');
    expect(capped.info(big[0])).toEqual({ type: big[1].type, size: big[1].size });
    expect(capped.contents(big[0])).toBeUndefined();
    expect(capped.info('0'.repeat(40))).toBeUndefined();
  });
});

describe('ReceivedObjects', () => {
  it('answers from the packs without starting git when they hold every object asked about', async () => {
    const git = runner();
    const objects = await ReceivedObjects.open(git, join(repo, '.git'), await packFiles(repo));
    const expected = gitObjects(repo);
    const oids = await objects.received();
    const infos = await objects.infos(oids);
    const bodies = await objects.contents(oids.filter((o) => (expected.get(o)?.size ?? 0) < 1024));
    expect(infos.size).toBe(expected.size);
    expect(bodies.size).toBeGreaterThan(10);
    for (const [oid, body] of bodies)
      expect(body.equals(expected.get(oid)?.body ?? Buffer.alloc(0))).toBe(true);
    expect(git.spawned).toEqual([]);
  });

  it('asks git, once per question, about what its packs cannot answer, with the same answers', async () => {
    const git = runner();
    const objects = await ReceivedObjects.open(git, join(repo, '.git'), await packFiles(repo), {
      maxPackBytes: 100,
      maxInflatedBytes: 0,
    });
    const expected = gitObjects(repo);
    const oids = await objects.received();
    expect(oids.sort()).toEqual([...expected.keys()].sort());
    const infos = await objects.infos([...oids, 'f'.repeat(40)]);
    const bodies = await objects.contents(oids);
    for (const [oid, object] of expected) {
      expect(infos.get(oid)).toEqual({ type: object.type, size: object.size });
      expect(bodies.get(oid)?.equals(object.body)).toBe(true);
    }
    expect(infos.has('f'.repeat(40))).toBe(false);
    expect(git.spawned.map((a) => a.split(' ')[1])).toEqual(['--batch-check=%(objectname)', '--batch']);
  });
});

describe('peelTags', () => {
  const rev = (name: string) => git(repo, ['rev-parse', name]).toString('utf8').trim();

  it('peels annotated tags, tags of tags among them, and leaves other objects out', async () => {
    for (const limits of [undefined, { maxPackBytes: 100, maxInflatedBytes: 0 }]) {
      const git = runner();
      const objects = await ReceivedObjects.open(git, join(repo, '.git'), await packFiles(repo), limits);
      const peeled = await peelTags(objects, [rev('v1'), rev('v1-outer'), rev('light'), rev('HEAD^{tree}')]);
      expect(peeled).toEqual(
        new Map([
          [rev('v1'), rev('v1^{}')],
          [rev('v1-outer'), rev('v1^{}')],
        ]),
      );
      expect(git.spawned.length > 0).toBe(limits !== undefined);
    }
  });
});

describe('applyDelta', () => {
  it('refuses deltas that do not fit their base or their stated size', () => {
    const base = Buffer.from('hello world');
    // base size 11, result 5, copy 5 bytes from offset 6 -> "world"
    expect(applyDelta(base, Buffer.from([11, 5, 0x91, 6, 5])).toString()).toBe('world');
    expect(() => applyDelta(base, Buffer.from([12, 5, 0x91, 6, 5]))).toThrow(/base/);
    expect(() => applyDelta(base, Buffer.from([11, 5, 0x91, 8, 5]))).toThrow(/out of range/);
    expect(() => applyDelta(base, Buffer.from([11, 6, 0x91, 6, 5]))).toThrow(/rebuilt 5/);
    expect(() => applyDelta(base, Buffer.from([11, 5, 0]))).toThrow(/reserved/);
  });
});
