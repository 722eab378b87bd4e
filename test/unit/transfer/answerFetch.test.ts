/**
 * The fetch's four ways, each on its own, with real git on a real repository and a fake of the
 * cache behind the transfers' narrow port (fakeCache.ts): what each answers, which git processes
 * it needs (a git with no slots refuses any), and that every lease it takes is given back.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { promisify } from 'node:util';
import { beforeAll, describe, expect, it } from 'vitest';
import { ensurePackCacheHook, installPackCacheHook } from '../../../lib/git/packCacheHook.js';
import { silentLogger } from '../../../lib/log.js';
import { type PktLine, PktLineReader } from '../../../lib/protocol/pktLine.js';
import { repeatableFetchOf } from '../../../lib/protocol/repeatableFetch.js';
import { answerCold } from '../../../lib/transfer/answerCold.js';
import { answerFetch, type FetchDeps } from '../../../lib/transfer/answerFetch.js';
import { answerWithPackCache, packAnswerKey } from '../../../lib/transfer/answerWithPackCache.js';
import { ClonePacking } from '../../../lib/transfer/clonePack.js';
import { CacheChanged, GitRefused } from '../../../lib/transfer/errors.js';
import { answerLsRefs } from '../../../lib/transfer/lsRefs.js';
import { StateAnswers } from '../../../lib/transfer/StateAnswers.js';
import { streamUploadPack } from '../../../lib/transfer/streamUploadPack.js';
import { Busy } from '../../../lib/util/Busy.js';
import {
  copyOf,
  FakeCache,
  type Fixture,
  fixture,
  gitWith,
  loadedIndex,
  recordingLogger,
} from './fakeCache.js';

const run = promisify(execFile);
const pkt = (line: string) => (line.length + 4).toString(16).padStart(4, '0') + line;
const request = (...parts: string[]) => Buffer.from(parts.join(''), 'latin1');

/** `git clone` over protocol v0: wants main, no haves, done. */
const v0Clone = (oid: string) =>
  request(
    pkt(`want ${oid} multi_ack_detailed side-band-64k thin-pack ofs-delta agent=git/2.39.5\n`),
    '0000',
    pkt('done\n'),
  );
/** `git ls-remote` over protocol v2. */
const v2LsRefs = request(
  pkt('command=ls-refs\n'),
  pkt('agent=git/2.39.5\n'),
  '0001',
  pkt('peel\n'),
  pkt('ref-prefix refs/heads/\n'),
  '0000',
);
/**
 * The same with a capability line git accepts (`server-option` with no value) but narwal leaves
 * to git (protocol/lsRefsAnswer.ts): git answers it.
 */
const v2LsRefsForGit = request(
  pkt('command=ls-refs\n'),
  pkt('agent=git/2.39.5\n'),
  pkt('server-option\n'),
  '0001',
  pkt('peel\n'),
  pkt('ref-prefix refs/heads/\n'),
  '0000',
);

interface Answer {
  /** The packets before the sideband, as text. */
  readonly lines: string[];
  /** Band 1 (the pack), band 2 (progress) and band 3 (a fatal error). */
  readonly pack: Buffer;
  readonly progress: string;
  readonly error: string;
}

async function read(answer: Readable | Buffer): Promise<Answer> {
  const reader = new PktLineReader();
  if (Buffer.isBuffer(answer)) reader.push(answer);
  else for await (const chunk of answer) reader.push(chunk as Buffer);
  const lines: string[] = [];
  const bands: Buffer[][] = [[], [], [], []];
  let sideband = false;
  for (let p: PktLine | undefined = reader.next(); p !== undefined; p = reader.next()) {
    if (p.kind !== 'data') continue;
    const band = p.payload[0];
    if (
      sideband ||
      (band !== undefined && band >= 1 && band <= 3 && !/^[A-Za-z]/.test(p.payload.toString('latin1')))
    ) {
      sideband = true;
      bands[band as number]?.push(p.payload.subarray(1));
    } else lines.push(p.payload.toString('utf8'));
  }
  const text = (band: number) => Buffer.concat(bands[band] ?? []).toString('utf8');
  return { lines, pack: Buffer.concat(bands[1] ?? []), progress: text(2), error: text(3) };
}

/** The objects of a pack, as git's own index-pack reads them. */
async function objectsIn(pack: Buffer): Promise<string[]> {
  const dir = await mkdtemp(join(tmpdir(), 'narwal-pack-'));
  try {
    await writeFile(join(dir, 'p.pack'), pack);
    await run('git', ['index-pack', join(dir, 'p.pack')]);
    const { stdout } = await run('sh', ['-c', `git show-index < ${join(dir, 'p.idx')}`]);
    return stdout
      .trim()
      .split('\n')
      .map((line) => line.split(' ')[1] ?? '');
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

const noHooks = { packObjectsHook: null, ensureHooks: async () => {} };
/** Identical repeatable fetches of this node, for those that wait on one another. */
const packing = {
  clonePacking: new ClonePacking({ maxWaitMs: 5_000 }),
  packAnswers: new StateAnswers({ maxBytes: 1 << 20 }),
};
const as = { protocol: undefined, owner: 'token:t' };

let f: Fixture;
beforeAll(async () => {
  f = await fixture();
});

describe('answerLsRefs', () => {
  const refsOf = (fx: Fixture) => new Map([['refs/heads/main', { oid: fx.main }]]);

  it('writes the answer from the state’s refs, with no git and no lease, then answers from memory', async () => {
    const cache = new FakeCache(f.bare, { complete: false, refs: refsOf(f) });
    const refAnswers = new StateAnswers({ maxBytes: 1 << 20 });
    const target = cache.target(loadedIndex());
    const noGit = { ...noHooks, git: gitWith(f.home, 0), cache, refAnswers };
    const first = await answerLsRefs(noGit, target, v2LsRefs, { protocol: 'version=2', owner: 't' });
    expect(first.toString()).toContain(`${f.main} refs/heads/main`);
    expect(await answerLsRefs(noGit, target, v2LsRefs, { protocol: 'version=2', owner: 't' })).toEqual(first);
    expect(refAnswers.size).toBe(1);
    expect(cache.leased).toBe(0);
  });

  it('asks git on the generation, once, what it does not write itself', async () => {
    const cache = new FakeCache(f.bare, { complete: false, refs: refsOf(f) });
    const refAnswers = new StateAnswers({ maxBytes: 1 << 20 });
    const target = cache.target(loadedIndex());
    const first = await answerLsRefs(
      { ...noHooks, git: gitWith(f.home), cache, refAnswers },
      target,
      v2LsRefsForGit,
      { protocol: 'version=2', owner: 't' },
    );
    expect(first.toString()).toContain(`${f.main} refs/heads/main`);
    // No git at all the second time (no slots), and no lease.
    const again = await answerLsRefs(
      { ...noHooks, git: gitWith(f.home, 0), cache, refAnswers },
      target,
      v2LsRefsForGit,
      { protocol: 'version=2', owner: 't' },
    );
    expect(again).toEqual(first);
    expect(cache.leased).toBe(1);
    await expect.poll(() => cache.held).toBe(0);
  });

  it('refuses an answer about a generation whose refs vanished while git listed them', async () => {
    const dir = await copyOf(f);
    await rm(join(dir, 'packed-refs'));
    const cache = new FakeCache(dir, { complete: false });
    const refAnswers = new StateAnswers({ maxBytes: 1 << 20 });
    await expect(
      answerLsRefs(
        { ...noHooks, git: gitWith(f.home), cache, refAnswers },
        cache.target(loadedIndex()),
        v2LsRefsForGit,
        { protocol: 'version=2', owner: 't' },
      ),
    ).rejects.toBeInstanceOf(CacheChanged);
    expect(refAnswers.size).toBe(0);
    await expect.poll(() => cache.held).toBe(0);
  });
});

describe('streamUploadPack', () => {
  it('streams git’s answer to a clone and gives the lease back once git is done', async () => {
    const cache = new FakeCache(f.bare, { complete: true });
    const generation = await cache.leaseRefs();
    const answer = await read(
      await streamUploadPack(
        { ...noHooks, git: gitWith(f.home) },
        generation,
        Readable.from([v0Clone(f.main)]),
        as,
      ),
    );
    expect(answer.lines).toEqual(['NAK\n']);
    expect(await objectsIn(answer.pack)).toContain(f.main);
    await expect.poll(() => cache.held).toBe(0);
  });

  it('turns a request git refuses without answering into GitRefused, with git’s reason', async () => {
    const cache = new FakeCache(f.bare, { complete: true });
    const refused = streamUploadPack(
      { ...noHooks, git: gitWith(f.home) },
      await cache.leaseRefs(),
      Readable.from([Buffer.from('zzzz not a pkt-line')]),
      as,
    );
    await expect(refused).rejects.toBeInstanceOf(GitRefused);
    await expect(refused).rejects.toThrow(/^narwal: git upload-pack refused the request: fatal: /);
    await expect.poll(() => cache.held).toBe(0);
  });

  it('fails with the request body’s own error, and stops git', async () => {
    const cache = new FakeCache(f.bare, { complete: true });
    const body = new Readable({ read() {} });
    body.push(pkt(`want ${f.main} side-band-64k\n`));
    setTimeout(() => body.destroy(new Error('the client went away')), 50);
    await expect(
      streamUploadPack({ ...noHooks, git: gitWith(f.home) }, await cache.leaseRefs(), body, as),
    ).rejects.toThrow('the client went away');
    await expect.poll(() => cache.held).toBe(0);
  });
});

describe('answerWithPackCache', () => {
  it('packs the first full clone with git and answers the next identical one from its file, without git', async () => {
    const dir = await copyOf(f);
    const hooks = await mkdtemp(join(tmpdir(), 'narwal-hooks-'));
    const hook = await installPackCacheHook(hooks);
    const withHook = { packObjectsHook: hook, ensureHooks: () => ensurePackCacheHook(hook) };
    const cache = new FakeCache(dir, { complete: true });
    const clonePacking = new ClonePacking({ maxWaitMs: 10_000 });
    // Nothing kept in memory: the second answer is read from the kept file.
    const packAnswers = new StateAnswers({ maxBytes: 1 << 20, maxAnswerBytes: 0 });
    const bytes = v0Clone(f.main);
    const clone = repeatableFetchOf(bytes, false);
    const env = { NARWAL_CLONE_KEY: clone?.key ?? '' };
    const target = cache.target(loadedIndex());
    const first = await read(
      await answerWithPackCache(
        { ...withHook, git: gitWith(f.home), cache, clonePacking, packAnswers },
        target,
        bytes,
        clone,
        {
          ...as,
          env,
        },
      ),
    );
    await expect.poll(() => cache.held).toBe(0);
    const second = await read(
      await answerWithPackCache(
        { ...withHook, git: gitWith(f.home, 0), cache, clonePacking, packAnswers },
        target,
        bytes,
        clone,
        {
          ...as,
          env,
        },
      ),
    );
    expect(second.lines).toEqual(['NAK\n']);
    expect(second.pack).toEqual(first.pack);
    expect(await objectsIn(second.pack)).toContain(f.main);
    await expect.poll(() => cache.held).toBe(0);
  });
});

/** actions/checkout's request (protocol v2, `--depth=1`, no progress): no haves, `done`. */
const v2Depth = (oid: string) =>
  request(
    pkt('command=fetch\n'),
    pkt('agent=git/2.39.5\n'),
    pkt('object-format=sha1\n'),
    '0001',
    pkt('thin-pack\n'),
    pkt('no-progress\n'),
    pkt('ofs-delta\n'),
    pkt('deepen 1\n'),
    pkt(`want ${oid}\n`),
    pkt('done\n'),
    '0000',
  );

describe('answerWithPackCache, a shallow fetch', () => {
  /** The second request of a v0 `fetch --depth=1` over HTTP: the wants again, then `done`. */
  const v0Depth = (oid: string) =>
    request(
      pkt(
        `want ${oid} multi_ack_detailed no-done side-band-64k thin-pack no-progress ofs-delta agent=git/2.39.5\n`,
      ),
      pkt('deepen 1\n'),
      '0000',
      pkt('done\n'),
    );
  /** The answer's bytes up to the pack's first sideband packet. */
  const beforePack = async (answer: Readable | Buffer) => {
    const bytes = Buffer.isBuffer(answer) ? answer : Buffer.concat(await answer.toArray());
    const at = bytes.indexOf(Buffer.from('\x01PACK', 'latin1'));
    return bytes.subarray(0, at - 4).toString('latin1');
  };

  for (const [version, body, expected] of [
    ['v2', v2Depth, (oid: string) => `0011shallow-info\n0034shallow ${oid}0001000dpackfile\n`],
    ['v0', v0Depth, (oid: string) => `0034shallow ${oid}00000008NAK\n`],
  ] as const) {
    it(`replays the shallow boundary git sent before the pack, byte for byte, without git (${version})`, async () => {
      const dir = await copyOf(f);
      const hooks = await mkdtemp(join(tmpdir(), 'narwal-hooks-'));
      const hook = await installPackCacheHook(hooks);
      const withHook = { packObjectsHook: hook, ensureHooks: () => ensurePackCacheHook(hook) };
      const cache = new FakeCache(dir, { complete: true });
      const clonePacking = new ClonePacking({ maxWaitMs: 10_000 });
      const packAnswers = new StateAnswers({ maxBytes: 1 << 20 });
      const bytes = body(f.main);
      const fetch = repeatableFetchOf(bytes, version === 'v2');
      expect(fetch?.full).toBe(false);
      const options = {
        ...as,
        protocol: version === 'v2' ? 'version=2' : undefined,
        env: { NARWAL_CLONE_KEY: fetch?.key ?? '' },
      };
      const target = cache.target(loadedIndex());
      // With no git slots (`slots` 0), any git process would be refused.
      const answer = (state: typeof target, slots = 8) =>
        answerWithPackCache(
          { ...withHook, git: gitWith(f.home, slots), cache, clonePacking, packAnswers },
          state,
          bytes,
          fetch,
          options,
        );
      const first = await answer(target);
      const firstBytes = Buffer.concat(await (first as Readable).toArray());
      expect(await beforePack(firstBytes)).toBe(expected(f.main));
      await expect.poll(() => cache.held).toBe(0);
      const second = await answer(target, 0);
      // Small: read whole from the kept files once, and kept in memory.
      expect(Buffer.isBuffer(second)).toBe(true);
      const secondBytes = second as Buffer;
      expect(await beforePack(secondBytes)).toBe(expected(f.main));
      expect((await read(secondBytes)).pack).toEqual((await read(firstBytes)).pack);
      await expect.poll(() => cache.held).toBe(0);
      expect(packAnswers.size).toBe(1);
      // Another state asking the same question is answered on its own generation (the fake's is
      // the same directory, with the same kept files), and kept under a key of its own.
      const other = await answer(cache.target(loadedIndex(8)), 0);
      expect(other).not.toBe(second);
      expect(packAnswers.size).toBe(2);
      // The third identical fetch is answered from memory, even with the generation gone.
      await rm(dir, { recursive: true, force: true });
      const third = await answer(target, 0);
      expect(third).toBe(second);
      await expect.poll(() => cache.held).toBe(0);
    });
  }
});

describe('answerFetch, a CI checkout storm', () => {
  it('keys an answer kept in memory by its framing as well as by the pack it holds', () => {
    const state = { repo: 'team/app', created: '2026-12-04T00:00:00.000Z', name: 'g2' };
    const shape = (version: 'v0' | 'v2', sidebandData: number, linesSuffix: string | null) => ({
      key: 'k'.repeat(64),
      version,
      preamble: version === 'v2' ? 'packfile\n' : 'NAK\n',
      sidebandData,
      linesSuffix,
    });
    const keys = [
      packAnswerKey(state, shape('v2', 65515, null)),
      packAnswerKey(state, shape('v0', 65515, null)),
      packAnswerKey(state, shape('v0', 995, null)),
      packAnswerKey(state, shape('v2', 65515, '.v2.shallow')),
      packAnswerKey({ ...state, name: 'g3' }, shape('v2', 65515, null)),
      packAnswerKey({ ...state, created: '2026-12-05T00:00:00.000Z' }, shape('v2', 65515, null)),
    ];
    expect(new Set(keys).size).toBe(keys.length);
    expect(packAnswerKey(state, shape('v2', 65515, null))).toBe(keys[0]);
  });

  /** A pack cache over a fresh copy of the fixture, counting looks at the cache and upload-packs. */
  const counted = async () => {
    const cache = new FakeCache(await copyOf(f), { complete: true });
    const hook = await installPackCacheHook(await mkdtemp(join(tmpdir(), 'narwal-hooks-')));
    const runner = gitWith(f.home);
    const seen = { looked: 0, uploadPacks: 0 };
    let started = () => {};
    const packing = new Promise<void>((resolve) => {
      started = resolve;
    });
    const deps: FetchDeps = {
      packObjectsHook: hook,
      ensureHooks: () => ensurePackCacheHook(hook),
      git: {
        spawn: (args, options) => {
          if (args.includes('upload-pack')) {
            seen.uploadPacks++;
            started();
          }
          return runner.spawn(args, options);
        },
        check: (args, options) => runner.check(args, options),
        checkScript: (script, options) => runner.checkScript(script, options),
      },
      cache: {
        target: (loaded) => cache.target(loaded),
        targetAt: (loaded, seq) => cache.targetAt(loaded, seq),
        isComplete: () => {
          seen.looked++;
          return cache.isComplete();
        },
        leaseRefs: () => cache.leaseRefs(),
        leaseComplete: (target, progress) => cache.leaseComplete(target, progress),
      },
      refAnswers: new StateAnswers({ maxBytes: 1 << 20 }),
      clonePacking: new ClonePacking({ maxWaitMs: 10_000 }),
      packAnswers: new StateAnswers({ maxBytes: 1 << 20 }),
      logger: silentLogger,
      clientMessage: () => undefined,
    };
    const job = async (git: FetchDeps['git'] = deps.git, loaded = loadedIndex()) => {
      const answer = await answerFetch(
        { ...deps, git },
        {
          loaded,
          body: Readable.from([v2Depth(f.main)]),
          protocol: 'version=2',
          owner: 't',
          memory: { add: () => {} },
          requestId: 'r',
        },
      );
      return Buffer.isBuffer(answer) ? answer : Buffer.concat(await answer.toArray());
    };
    return { cache, seen, packing, job };
  };

  it('answers the same question about the same state from memory, without looking at the cache', async () => {
    const { cache, seen, job } = await counted();
    const first = await job();
    await expect.poll(() => cache.held).toBe(0);
    const second = await job(gitWith(f.home, 0));
    expect(seen.looked).toBe(2);
    expect((await read(second)).pack).toEqual((await read(first)).pack);
    await expect.poll(() => cache.held).toBe(0);
    for (let i = 0; i < 5; i++) expect((await job(gitWith(f.home, 0))).equals(second)).toBe(true);
    expect(seen.looked).toBe(2);
    expect(cache.leased).toBe(2);
    // The next state (a push moved the repository on) is not answered with the old state's bytes.
    await job(gitWith(f.home), loadedIndex(3));
    expect(seen.looked).toBe(3);
  });

  it('answers identical checkouts that arrive while git packs the first from its answer in memory, with no lease', async () => {
    const { cache, seen, packing, job } = await counted();
    const first = job();
    await packing;
    // Seven more while git packs the first: none may start git, look at the cache or lease.
    const followers = Array.from({ length: 7 }, () => job(gitWith(f.home, 0)));
    const [answered, ...waited] = await Promise.all([first, ...followers]);
    expect(seen).toEqual({ looked: 1, uploadPacks: 1 });
    expect(cache.leased).toBe(1);
    const pack = (await read(answered as Buffer)).pack;
    for (const answer of waited) {
      expect(answer.equals(waited[0] as Buffer)).toBe(true);
      expect((await read(answer)).pack).toEqual(pack);
    }
    await expect.poll(() => cache.held).toBe(0);
  });

  it('gives a storm arriving all at once one answer: the first to ask answers for them all', async () => {
    const { cache, seen, job } = await counted();
    const storm = await Promise.all(Array.from({ length: 8 }, () => job()));
    expect(seen).toEqual({ looked: 1, uploadPacks: 1 });
    expect(cache.leased).toBe(1);
    const pack = (await read(storm[0] as Buffer)).pack;
    for (const answer of storm.slice(1)) expect((await read(answer)).pack).toEqual(pack);
    await expect.poll(() => cache.held).toBe(0);
  });
});

describe('answerCold', () => {
  const cold = (dir: string) => {
    const cache = new FakeCache(dir, { complete: false });
    cache.prepare = async (progress) => {
      progress('narwal: replaying 1/2 entries');
      progress('narwal: replaying 2/2 entries, done.', true);
    };
    return cache;
  };

  it('gives identical clones that arrive while the generation is prepared one upload-pack', async () => {
    const cache = new FakeCache(await copyOf(f), { complete: false });
    let prepared = () => {};
    const preparing = new Promise<void>((resolve) => {
      prepared = resolve;
    });
    cache.prepare = () => preparing;
    const runner = gitWith(f.home);
    let uploadPacks = 0;
    const deps = {
      git: {
        spawn: (args: readonly string[], options: Parameters<typeof runner.spawn>[1]) => {
          if (args.includes('upload-pack')) uploadPacks++;
          return runner.spawn(args, options);
        },
      },
      packObjectsHook: await installPackCacheHook(await mkdtemp(join(tmpdir(), 'narwal-hooks-'))),
      ensureHooks: async () => {},
      cache,
      logger: silentLogger,
      clientMessage: () => undefined,
      clonePacking: new ClonePacking({ maxWaitMs: 5_000 }),
      packAnswers: new StateAnswers({ maxBytes: 1 << 20 }),
    };
    // `git clone` in protocol v2: every ref wanted, no haves, done; its answer starts with `packfile`.
    const clone = request(
      pkt('command=fetch\n'),
      pkt('agent=git/2.39.5\n'),
      '0001',
      pkt('ofs-delta\n'),
      pkt(`want ${f.main}\n`),
      pkt('done\n'),
      '0000',
    );
    const fetch = repeatableFetchOf(clone, true);
    expect(fetch?.full).toBe(true);
    const options = {
      protocol: 'version=2',
      owner: 't',
      v2: true,
      requestId: 'r',
      fetch,
      env: { NARWAL_CLONE_KEY: fetch?.key ?? '' },
    };
    const target = cache.target(loadedIndex());
    const answers = [1, 2, 3].map(() => answerCold(deps, target, clone, options));
    prepared();
    const [first, ...others] = await Promise.all(answers.map(async (answer) => read(await answer)));
    expect(uploadPacks).toBe(1);
    expect(await objectsIn((first as Answer).pack)).toContain(f.main);
    for (const other of others) expect(other.pack).toEqual((first as Answer).pack);
    await expect.poll(() => cache.held).toBe(0);
  });

  it('answers at once with the bytes git will start with, reports the preparation, then relays git', async () => {
    const cache = cold(f.bare);
    const logger = recordingLogger();
    const answer = await read(
      await answerCold(
        { ...noHooks, ...packing, git: gitWith(f.home), cache, logger, clientMessage: () => undefined },
        cache.target(loadedIndex()),
        v0Clone(f.main),
        { ...as, v2: false, requestId: 'r1' },
      ),
    );
    expect(answer.lines).toEqual(['NAK\n']);
    expect(answer.progress).toContain(
      'narwal: replaying 1/2 entries\rnarwal: replaying 2/2 entries, done.\n',
    );
    expect(answer.error).toBe('');
    expect(await objectsIn(answer.pack)).toContain(f.main);
    expect(cache.completed).toBe(1);
    expect(logger.lines).toEqual([]);
    await expect.poll(() => cache.held).toBe(0);
  });

  it('reports a failed preparation on band 3: a limit in its own words, anything else as retryable', async () => {
    for (const [thrown, expected] of [
      [new Busy('narwal: server busy (8 git processes running); retry in a moment'), 'narwal: server busy'],
      [new Error('disk full'), 'narwal: the repository could not be prepared; retry the fetch (request r2)'],
    ] as const) {
      const cache = cold(f.bare);
      cache.prepare = async () => {
        throw thrown;
      };
      const logger = recordingLogger();
      const answer = await read(
        await answerCold(
          {
            ...noHooks,
            ...packing,
            git: gitWith(f.home),
            cache,
            logger,
            clientMessage: (error) => (error instanceof Busy ? error.message : undefined),
          },
          cache.target(loadedIndex()),
          v0Clone(f.main),
          { ...as, v2: false, requestId: 'r2' },
        ),
      );
      expect(answer.lines).toEqual(['NAK\n']);
      expect(answer.error).toContain(expected);
      expect(answer.pack.length).toBe(0);
      expect(logger.lines).toMatchObject([
        {
          level: 'warn',
          message: 'fetch failed while preparing the repository',
          fields: { repo: 'team/app', error: { message: thrown.message } },
        },
      ]);
      expect(cache.leased).toBe(0);
    }
  });

  it('waits for the generation when git’s first bytes cannot be known (the client has objects)', async () => {
    const cache = cold(f.bare);
    const withHave = request(
      pkt(`want ${f.main} side-band-64k\n`),
      '0000',
      pkt(`have ${f.main}\n`),
      pkt('done\n'),
    );
    const answer = await read(
      await answerCold(
        {
          ...noHooks,
          ...packing,
          git: gitWith(f.home),
          cache,
          logger: silentLogger,
          clientMessage: () => undefined,
        },
        cache.target(loadedIndex()),
        withHave,
        { ...as, v2: false, requestId: 'r3' },
      ),
    );
    expect(answer.progress).not.toContain('narwal:');
    expect(answer.lines[0]).toMatch(/^ACK /);
    expect(cache.completed).toBe(1);
    await expect.poll(() => cache.held).toBe(0);
  });
});

describe('answerFetch', () => {
  const deps = (cache: FakeCache, slots = 8): FetchDeps => ({
    ...noHooks,
    git: gitWith(f.home, slots),
    cache,
    refAnswers: new StateAnswers({ maxBytes: 1 << 20 }),
    clonePacking: new ClonePacking({ maxWaitMs: 1000 }),
    packAnswers: new StateAnswers({ maxBytes: 1 << 20 }),
    logger: silentLogger,
    clientMessage: () => undefined,
  });
  const fetch = (cache: FakeCache, body: Buffer, protocol?: string) =>
    answerFetch(deps(cache), {
      loaded: loadedIndex(),
      body: Readable.from([body]),
      protocol,
      owner: 't',
      memory: { add: () => {} },
      requestId: 'r',
    });

  it('answers a v2 ls-refs from the state’s refs, never completing the generation', async () => {
    const cache = new FakeCache(f.bare, {
      complete: false,
      refs: new Map([['refs/heads/main', { oid: f.main }]]),
    });
    const answer = await fetch(cache, v2LsRefs, 'version=2');
    expect(answer.toString()).toContain('refs/heads/main');
    expect(cache.completed).toBe(0);
  });

  it('streams upload-pack on a complete generation, and prepares a cold one first', async () => {
    for (const complete of [true, false]) {
      const cache = new FakeCache(f.bare, { complete });
      const answer = await read(await fetch(cache, v0Clone(f.main)));
      expect(await objectsIn(answer.pack)).toContain(f.main);
      expect(cache.completed).toBe(complete ? 0 : 1);
      await expect.poll(() => cache.held).toBe(0);
    }
  });

  it('charges every request byte it reads to the memory account', async () => {
    const cache = new FakeCache(f.bare, { complete: false });
    let charged = 0;
    await answerFetch(deps(cache), {
      loaded: loadedIndex(),
      body: Readable.from([v2LsRefs]),
      protocol: 'version=2',
      owner: 't',
      memory: {
        add: (bytes) => {
          charged += bytes;
        },
      },
      requestId: 'r',
    });
    expect(charged).toBe(v2LsRefs.length);
  });
});
