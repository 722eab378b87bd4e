/**
 * Routing of long transfers with the real git CLI: a "Lambda" endpoint (API Gateway harness and
 * the git function, Lambda's 6 MB limits enforced) that redirects at info/refs, and a pool (a
 * `narwal serve`-style server on the same store and cache). Small transfers stay on Lambda;
 * large clones and large pushes follow the redirect, path and query preserved.
 */
import { randomBytes } from 'node:crypto';
import { readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Logger } from '../../lib/log.js';
import {
  type FunctionKind,
  type LambdaStack,
  type Pool,
  startLambdaStack,
  startPool,
} from '../helpers/aws/lambdaStack.js';
import { commitFile, git, gitOk, makeHome, workRepo } from '../helpers/gitClient.js';
import { ADMIN_TOKEN, tempDataDir } from '../helpers/narwalServer.js';

interface Decision {
  readonly repo: string;
  readonly service: string;
  readonly target: string;
  readonly reason: string;
}

function decisionLogger(): Logger & { decisions: Decision[] } {
  const decisions: Decision[] = [];
  return {
    decisions,
    info: (message, fields) => {
      if (message === 'transfer route') decisions.push(fields as unknown as Decision);
    },
    warn: () => {},
    error: () => {},
  };
}

// Credentials from a helper, as users keep them: git asks it again for the pool's URL after the
// redirect (credentials written into the URL are not sent to another host).
const HELPER = `!f() { echo username=admin; echo password=${ADMIN_TOKEN}; }; f`;

interface Case {
  readonly kind: FunctionKind;
  /** What the gateway does with a request without Content-Length (a chunked push). */
  readonly chunked: 'buffer' | 'refuse';
}

const CASES: Case[] = [
  { kind: 'streamed', chunked: 'buffer' },
  { kind: 'buffered', chunked: 'buffer' },
  { kind: 'streamed', chunked: 'refuse' },
];

describe.each(CASES)(
  'routing through the $kind git function, chunked requests: $chunked',
  ({ kind, chunked }) => {
    let dataDir: string;
    let pool: Pool;
    let stack: LambdaStack;
    let home: string;
    let work: string;
    const logger = decisionLogger();
    const run = (args: string[], cwd?: string, extra: string[] = []) =>
      git(['-c', `credential.helper=${HELPER}`, ...extra, ...args], { home, ...(cwd ? { cwd } : {}) });
    const ok = async (args: string[], cwd?: string, extra: string[] = []) => {
      const out = await run(args, cwd, extra);
      if (out.code !== 0) throw new Error(`git ${args.join(' ')} failed:\n${out.stderr}`);
      return out;
    };
    const lambdaPosts = (path: string) =>
      stack.api.invocations.filter((i) => i.method === 'POST' && i.path === path).length;
    const poolPosts = (path: string) =>
      pool.requests.filter((r) => r.method === 'POST' && r.path === path).length;
    const repoUrl = () => `${stack.api.url}/team/app.git`;

    beforeAll(async () => {
      dataDir = await tempDataDir();
      pool = await startPool({ dataDir, logger });
      stack = await startLambdaStack({
        dataDir,
        kind,
        logger,
        chunkedRequests: chunked,
        env: {
          NARWAL_POOL_URL: pool.url,
          ...(chunked === 'refuse' ? { NARWAL_CHUNKED_PUSHES: 'pool' } : {}),
        },
      });
      home = await makeHome();
      work = await workRepo(home, 1, 'route');
    });
    afterAll(async () => {
      await stack?.stop();
      await pool?.stop();
      await rm(dataDir, { recursive: true, force: true });
    });

    it('sends the first push into a new repository to the pool', async () => {
      await ok(['push', repoUrl(), 'main'], work);
      expect(poolPosts('/team/app.git/git-receive-pack')).toBeGreaterThan(0);
      expect(lambdaPosts('/team/app.git/git-receive-pack')).toBe(0);
      const redirect = stack.api.invocations.find((i) => i.path === '/team/app.git/info/refs');
      expect(redirect?.status).toBe(307);
      expect(logger.decisions.at(-1)).toMatchObject({
        repo: 'team/app',
        service: 'git-receive-pack',
        target: 'pool',
        reason: 'push to an empty repository',
      });
    });

    it('keeps a small push and a small clone on Lambda', async () => {
      await commitFile(work, home, 'second.txt', 'second\n');
      await ok(['push', repoUrl(), 'main'], work);
      expect(lambdaPosts('/team/app.git/git-receive-pack')).toBeGreaterThan(0);
      const clone = join(home, 'small-clone');
      await ok(['clone', '-q', repoUrl(), clone]);
      expect(await readFile(join(clone, 'second.txt'), 'utf8')).toBe('second\n');
      expect(lambdaPosts('/team/app.git/git-upload-pack')).toBeGreaterThan(0);
      expect(poolPosts('/team/app.git/git-upload-pack')).toBe(0);
      expect(logger.decisions.at(-1)).toMatchObject({ target: 'lambda', service: 'git-upload-pack' });
      expect(logger.decisions.at(-1)?.reason).toMatch(/^estimated pack of \d+ bytes$/);
    });

    it('cannot foresee a large push after small ones: it is refused with nothing changed, and goes to the pool', async () => {
      await writeFile(join(work, 'large.bin'), randomBytes(5 * 1024 * 1024));
      await gitOk(['add', 'large.bin'], { cwd: work, home });
      await gitOk(['commit', '-q', '-m', 'large'], { cwd: work, home });
      const head = (await run(['ls-remote', repoUrl(), 'refs/heads/main'])).stdout;
      const refusalsBefore = stack.api.refusals.length;
      const refused = await run(['push', repoUrl(), 'main'], work);
      expect(refused.code).not.toBe(0);
      expect(refused.stderr).toMatch(/HTTP 413/);
      const gatewayReasons = stack.api.refusals.slice(refusalsBefore).map((r) => r.reason);
      expect((await run(['ls-remote', repoUrl(), 'refs/heads/main'])).stdout).toBe(head);
      const before = poolPosts('/team/app.git/git-receive-pack');
      if (chunked === 'buffer') {
        // The gateway took the chunked request whole; Lambda refused the event.
        expect(gatewayReasons).toContainEqual(expect.stringMatching(/over the Lambda request limit/));
        await ok(['push', repoUrl(), 'main'], work, ['-c', 'http.extraHeader=X-Narwal-Route: pool']);
        expect(logger.decisions.at(-1)).toMatchObject({
          target: 'pool',
          reason: 'the client asked for the pool',
        });
      } else {
        // The function refused git's probe, before the body the gateway would refuse was sent, and
        // the same push sent again goes to the pool.
        expect(
          stack.api.invocations.filter((i) => i.path === '/team/app.git/git-receive-pack').at(-1)?.status,
        ).toBe(413);
        expect(
          stack.api.refusals.filter((r) => r.reason === 'a request body without Content-Length'),
        ).toEqual([]);
        await ok(['push', repoUrl(), 'main'], work);
        expect(logger.decisions.at(-1)).toMatchObject({
          target: 'pool',
          reason: 'a push too large for one request was refused lately',
        });
      }
      expect(poolPosts('/team/app.git/git-receive-pack')).toBeGreaterThan(before);
    });

    it('sends the pushes after a large one to the pool', async () => {
      await commitFile(work, home, 'after.txt', 'after\n');
      const before = poolPosts('/team/app.git/git-receive-pack');
      await ok(['push', repoUrl(), 'main'], work);
      expect(poolPosts('/team/app.git/git-receive-pack')).toBeGreaterThan(before);
      expect(logger.decisions.at(-1)?.reason).toMatch(/^a recent push of \d+ bytes exceeds 1048576$/);
    });

    it('sends a clone too large for a Lambda response to the pool, and it arrives whole', async () => {
      const before = lambdaPosts('/team/app.git/git-upload-pack');
      const clone = join(home, 'large-clone');
      await ok(['clone', '-q', repoUrl(), clone]);
      expect(lambdaPosts('/team/app.git/git-upload-pack')).toBe(before);
      expect(poolPosts('/team/app.git/git-upload-pack')).toBeGreaterThan(0);
      expect(
        Buffer.compare(await readFile(join(clone, 'large.bin')), await readFile(join(work, 'large.bin'))),
      ).toBe(0);
      expect(logger.decisions.at(-1)?.reason).toMatch(/^estimated pack of \d+ bytes exceeds 4194304$/);
    });

    it('sends a large import into a new repository to the pool without being asked', async () => {
      const importWork = await workRepo(home, 1, 'import');
      await writeFile(join(importWork, 'history.bin'), randomBytes(6 * 1024 * 1024));
      await gitOk(['add', 'history.bin'], { cwd: importWork, home });
      await gitOk(['commit', '-q', '-m', 'import'], { cwd: importWork, home });
      await ok(['push', `${stack.api.url}/team/import.git`, 'main'], importWork);
      expect(poolPosts('/team/import.git/git-receive-pack')).toBeGreaterThan(0);
      expect(stack.api.refusals.filter((r) => r.path.startsWith('/team/import.git'))).toEqual([]);
    });

    it('refuses an X-Narwal-Route it does not know, at info/refs', async () => {
      const out = await run(['ls-remote', repoUrl()], undefined, [
        '-c',
        'http.extraHeader=X-Narwal-Route: sideways',
      ]);
      expect(out.code).not.toBe(0);
      expect(out.stderr).toContain('narwal: the X-Narwal-Route header accepts only "pool"');
    });
  },
);
