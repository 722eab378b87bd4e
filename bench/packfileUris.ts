/**
 * Full clones with protocol v2 `packfile-uris` on the Lambda stand-in (test/helpers/aws/): a real
 * `git clone` that accepts http URIs, through API Gateway and the git function, on the embedded
 * store. The stored packs come from the URIs the answer names, which narwal serves from its pool
 * (where its own transfers go, as for Git LFS; on S3 they would be presigned GETs), so what the
 * function carries is the capability advertisement, `ls-refs` and the answer with the URIs and
 * the inline pack. Measured per clone: the bytes the function sent (headers included) against
 * all the pack bytes the clone received, and the function's time (from each invocation's start
 * to the end of its answer, summed over the clone's requests; a cold start, the sandbox's init
 * phase, is counted apart as Lambda reports it). The first clone of the repository chooses the
 * packs and makes the inline pack and is reported apart; the rest are answered from it. Then one
 * commit is pushed to the pool, whose prewarm makes the new state's plans ahead (lib/transfer/
 * plansAhead.ts: the repository's clones asked for URIs), and the first clone of that state is
 * reported apart too, with the time the prewarm spent on the plans.
 *
 * Two repositories: the express fixture, and one ten times its pack's size (random file contents
 * written by fast-import, so the pack cannot be smaller than its contents).
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { mkdir, readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { Writable } from 'node:stream';
import { type Logger, silentLogger } from '../lib/log.js';
import { startLambdaStack, startPool } from '../test/helpers/aws/lambdaStack.js';
import { ADMIN_TOKEN } from '../test/helpers/narwalServer.js';
import { BUNDLE } from './fixtures.js';
import { git, gitOk } from './gitClient.js';
import { mean } from './stats.js';

export interface UrisClone {
  /** Bytes the git function sent for the clone's requests. */
  readonly functionBytes: number;
  /** The function's time over the clone's requests (their invocations' durations). */
  readonly functionMs: number;
  /** Cold starts the clone's requests waited for (sandboxes' init phases), which Lambda reports apart. */
  readonly initMs: number;
  /** Pack bytes the clone received in all (URIs and inline). */
  readonly packBytes: number;
  readonly wallMs: number;
  /** The function's invocations of the clone: request, bytes sent, time, cold start waited for. */
  readonly calls: {
    readonly request: string;
    readonly bytes: number;
    readonly ms: number;
    readonly initMs: number;
  }[];
}

export interface UrisRepoResult {
  readonly name: string;
  /** The first clone of the state: it chose the packs and made the inline pack. */
  readonly first: UrisClone;
  readonly clones: UrisClone[];
  /**
   * The first clone of the state a push made next, and the time the pool's prewarm spent making
   * that state's plans before it (absent in results from before plans were made ahead).
   */
  readonly afterPush?: UrisClone & { readonly aheadMs: number | null };
}

export interface UrisBenchResult {
  readonly repos: UrisRepoResult[];
}

export async function packfileUrisBench(options: {
  workDir: string;
  home: string;
  clones: number;
  log: (line: string) => void;
}): Promise<UrisBenchResult> {
  const dataDir = join(options.workDir, 'uris');
  await mkdir(dataDir, { recursive: true });
  // The pool's prewarm says how long it spent making a new state's plans ahead.
  const aheadMs: number[] = [];
  const poolLogger: Logger = {
    ...silentLogger,
    info: (message, fields) => {
      if (message === 'packfile-uri plans made ahead' && typeof fields?.ms === 'number')
        aheadMs.push(fields.ms);
    },
  };
  const pool = await startPool({ dataDir, logger: poolLogger });
  // Clones stay on the function whatever their size; only the URIs go to the pool.
  const stack = await startLambdaStack({
    dataDir,
    kind: 'streamed',
    logger: silentLogger,
    env: {
      NARWAL_POOL_URL: pool.url,
      NARWAL_ROUTE_CLONE_BYTES: String(Number.MAX_SAFE_INTEGER),
      NARWAL_QUIET: 'true',
    },
  });
  const withToken = (url: string) => url.replace('http://', `http://admin:${ADMIN_TOKEN}@`);
  try {
    const repos: UrisRepoResult[] = [];
    const fixture = join(options.workDir, 'uris-fixture.git');
    await gitOk(['clone', '--quiet', '--bare', BUNDLE, fixture], { home: options.home });
    const fixtureBytes = await packBytes(fixture);
    const large = join(options.workDir, 'uris-large.git');
    await randomRepo(large, fixtureBytes * 10, options.home);
    for (const [name, source] of [
      ['express fixture', fixture],
      ['10x the fixture', large],
    ] as const) {
      const repo = `bench/uris-${repos.length}`;
      await gitOk(['push', '--quiet', '--mirror', `${withToken(pool.url)}/${repo}.git`], {
        cwd: source,
        home: options.home,
      });
      // A normal clone from the pool makes the generation complete, as any earlier clone would.
      await gitOk(
        ['clone', '--quiet', '--bare', `${withToken(pool.url)}/${repo}.git`, join(dataDir, `${repo}-warm`)],
        {
          home: options.home,
        },
      );
      const clone = async (i: number): Promise<UrisClone> => {
        const before = stack.api.invocations.length;
        const dir = join(dataDir, `${repo}-${i}.git`);
        const out = await git(
          [
            '-c',
            'protocol.version=2',
            '-c',
            'fetch.uriprotocols=http',
            'clone',
            '--quiet',
            '--bare',
            `${withToken(stack.api.url)}/${repo}.git`,
            dir,
          ],
          { home: options.home },
        );
        if (out.code !== 0) throw new Error(`the packfile-uris clone failed:\n${out.stderr}`);
        const calls = stack.api.invocations.slice(before);
        return {
          functionBytes: calls.reduce((sum, c) => sum + c.responseBytes, 0),
          functionMs: calls.reduce((sum, c) => sum + c.ms, 0),
          initMs: calls.reduce((sum, c) => sum + c.initMs, 0),
          packBytes: await packBytes(dir),
          wallMs: out.ms,
          calls: calls.map((c) => ({
            request: `${c.method} ${c.path.replace(/^.*\.git\//, '')}`,
            bytes: c.responseBytes,
            ms: Math.round(c.ms * 10) / 10,
            initMs: Math.round(c.initMs * 10) / 10,
          })),
        };
      };
      const first = await clone(0);
      const clones: UrisClone[] = [];
      for (let i = 1; i <= options.clones; i++) clones.push(await clone(i));
      // A push of one commit, as a team's next push; the pool's prewarm then runs to its end.
      const made = aheadMs.length;
      await pushNext(source, `${withToken(pool.url)}/${repo}.git`, options.home);
      await pool.app.idle();
      const next = await clone(options.clones + 1);
      const afterPush = { ...next, aheadMs: aheadMs.length > made ? (aheadMs.at(-1) as number) : null };
      options.log(
        `  ${name}: ${mean(clones.map((c) => c.functionBytes)).toFixed(0)} bytes and ${mean(clones.map((c) => c.functionMs)).toFixed(0)} ms of the function per clone of ${clones[0]?.packBytes} pack bytes (the first: ${first.functionBytes} bytes, ${first.functionMs.toFixed(0)} ms, and ${first.initMs.toFixed(0)} ms of cold start)`,
      );
      options.log(
        `  ${name} after a push: ${afterPush.functionBytes} bytes, ${afterPush.functionMs.toFixed(0)} ms of the function for the first clone of the new state (${afterPush.initMs.toFixed(0)} ms of cold start; plans made ahead in ${afterPush.aheadMs ?? '-'} ms)`,
      );
      repos.push({ name, first, clones, afterPush });
    }
    return { repos };
  } finally {
    await stack.stop();
    await pool.stop();
  }
}

/** Pushes one new commit (on the tree of a branch of `source`) to a new branch `uris-next` of `url`. */
async function pushNext(source: string, url: string, home: string): Promise<void> {
  const tip = (
    await gitOk(['for-each-ref', '--count=1', '--format=%(objectname)', 'refs/heads/'], { cwd: source, home })
  ).stdout.trim();
  const commit = (
    await gitOk(
      [
        '-c',
        'user.name=bench',
        '-c',
        'user.email=bench@narwal',
        'commit-tree',
        `${tip}^{tree}`,
        '-p',
        tip,
        '-m',
        'next',
      ],
      { cwd: source, home },
    )
  ).stdout.trim();
  await gitOk(['push', '--quiet', url, `${commit}:refs/heads/uris-next`], { cwd: source, home });
}

/** Bytes of the packs of a repository. */
async function packBytes(dir: string): Promise<number> {
  const packs = join(dir, 'objects', 'pack');
  let total = 0;
  for (const name of await readdir(packs))
    if (name.endsWith('.pack')) total += (await stat(join(packs, name))).size;
  return total;
}

/**
 * A repository of about `bytes` of pack: commits of ten files of random text each (base64, so
 * zlib keeps about three quarters of it), written by fast-import. Its input is written as it is
 * made, never held whole: a bench process holding hundreds of megabytes makes every process the
 * in-process function starts slower to fork, which is not the function's cost.
 */
async function randomRepo(dir: string, bytes: number, home: string): Promise<void> {
  // fast-import's own pack: it tries no deltas, which random contents would not have.
  await gitOk(['init', '--quiet', '--bare', dir], { home });
  const fileBytes = 8192;
  const files = Math.ceil(bytes / (fileBytes * 0.76));
  const p = spawn('git', ['fast-import', '--quiet'], { cwd: dir, stdio: ['pipe', 'ignore', 'inherit'] });
  const done = new Promise<void>((resolve, reject) => {
    p.once('error', reject);
    p.once('close', (code) =>
      code === 0 ? resolve() : reject(new Error(`git fast-import failed (${code})`)),
    );
  });
  const stdin = p.stdin as Writable;
  for (let i = 0, commit = 0; i < files; commit++) {
    const body = `commit ${commit}\n`;
    let text = `commit refs/heads/main\ncommitter bench <bench@narwal> ${1_600_000_000 + commit} +0000\ndata ${body.length}\n${body}`;
    for (let f = 0; f < 10 && i < files; f++, i++) {
      const data = randomBytes((fileBytes * 3) / 4).toString('base64');
      text += `M 100644 inline d${commit % 50}/f${f}.txt\ndata ${data.length}\n${data}\n`;
    }
    if (!stdin.write(`${text}\n`)) await once(stdin, 'drain');
  }
  stdin.end();
  await done;
}
