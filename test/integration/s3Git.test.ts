/**
 * The whole AWS shape on a real S3 implementation: the git function behind the API Gateway
 * harness and the pool, both on one bucket of a local Ceph RADOS Gateway (which, unlike npm S3
 * fakes, honours conditional writes), sharing one cache directory as they share EFS.
 */
import { randomBytes } from 'node:crypto';
import { readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { CreateBucketCommand, S3Client } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { silentLogger } from '../../lib/log.js';
import { type LambdaStack, type Pool, startLambdaStack, startPool } from '../helpers/aws/lambdaStack.js';
import { commitFile, git, gitOk, makeHome, workRepo } from '../helpers/gitClient.js';
import { ADMIN_TOKEN, tempDataDir } from '../helpers/narwalServer.js';
import { type RgwEndpoint, startRgw } from '../helpers/rgw.js';

const HELPER = `!f() { echo username=admin; echo password=${ADMIN_TOKEN}; }; f`;

let rgw: RgwEndpoint | undefined;
let dataDir: string;
let pool: Pool;
let stack: LambdaStack;
let home: string;

beforeAll(async () => {
  rgw = await startRgw();
  const bucket = `narwal-${randomBytes(4).toString('hex')}`;
  const admin = new S3Client({
    endpoint: rgw.endpoint,
    region: 'us-east-1',
    forcePathStyle: true,
    credentials: { accessKeyId: rgw.accessKeyId, secretAccessKey: rgw.secretAccessKey },
  });
  await admin.send(new CreateBucketCommand({ Bucket: bucket }));
  admin.destroy();
  // The app's S3 client takes its credentials from the environment, as on Lambda.
  process.env.AWS_ACCESS_KEY_ID = rgw.accessKeyId;
  process.env.AWS_SECRET_ACCESS_KEY = rgw.secretAccessKey;
  const env = {
    NARWAL_STORE: 's3',
    NARWAL_S3_BUCKET: bucket,
    NARWAL_S3_ENDPOINT: rgw.endpoint,
    NARWAL_S3_PREFIX: 'narwal',
    AWS_REGION: 'us-east-1',
  };
  dataDir = await tempDataDir();
  pool = await startPool({ dataDir, logger: silentLogger, env });
  stack = await startLambdaStack({
    dataDir,
    kind: 'streamed',
    logger: silentLogger,
    env: { ...env, NARWAL_POOL_URL: pool.url },
  });
  home = await makeHome();
}, 300_000);

afterAll(async () => {
  await stack?.stop();
  await pool?.stop();
  await rgw?.stop();
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
});

const run = (args: string[], cwd?: string) =>
  gitOk(['-c', `credential.helper=${HELPER}`, ...args], { home, ...(cwd ? { cwd } : {}) });

describe('git through the git function and the pool on Ceph RGW', () => {
  it('imports through the pool, then pushes and clones through Lambda', async () => {
    const work = await workRepo(home, 3, 's3');
    const url = `${stack.api.url}/s3/app.git`;
    await run(['push', url, 'main'], work);
    expect(pool.requests.some((r) => r.method === 'POST' && r.path === '/s3/app.git/git-receive-pack')).toBe(
      true,
    );
    const head = await commitFile(work, home, 'lambda.txt', 'through lambda\n');
    await run(['push', url, 'main'], work);
    expect(
      stack.api.invocations.some((i) => i.method === 'POST' && i.path === '/s3/app.git/git-receive-pack'),
    ).toBe(true);
    const clone = join(home, 's3-clone');
    await run(['clone', '-q', url, clone]);
    expect((await gitOk(['rev-parse', 'HEAD'], { cwd: clone, home })).trim()).toBe(head);
  });

  it('lands simultaneous pushes to distinct branches, every one', async () => {
    const url = `${stack.api.url}/s3/app.git`;
    const clones = await Promise.all(
      Array.from({ length: 8 }, async (_, i) => {
        const dir = join(home, `branch-${i}`);
        await run(['clone', '-q', url, dir]);
        await commitFile(dir, home, `b${i}.txt`, `${i}\n`);
        return dir;
      }),
    );
    const results = await Promise.all(
      clones.map((dir, i) =>
        git(['-c', `credential.helper=${HELPER}`, 'push', url, `HEAD:refs/heads/b${i}`], { cwd: dir, home }),
      ),
    );
    expect(results.map((r) => r.code)).toEqual(clones.map(() => 0));
    const refs = await run(['ls-remote', url]);
    for (let i = 0; i < clones.length; i++) expect(refs).toContain(`refs/heads/b${i}`);
  });

  it('sends a clone too large for Lambda to the pool, which reads the same bucket', async () => {
    const work = join(home, 's3-clone');
    await writeFile(join(work, 'large.bin'), randomBytes(5 * 1024 * 1024));
    await gitOk(['add', 'large.bin'], { cwd: work, home });
    await gitOk(['commit', '-q', '-m', 'large'], { cwd: work, home });
    await run(
      ['-c', 'http.extraHeader=X-Narwal-Route: pool', 'push', `${stack.api.url}/s3/app.git`, 'main'],
      work,
    );
    const clone = join(home, 's3-large');
    await run(['clone', '-q', `${stack.api.url}/s3/app.git`, clone]);
    expect(pool.requests.some((r) => r.method === 'POST' && r.path === '/s3/app.git/git-upload-pack')).toBe(
      true,
    );
    expect(
      Buffer.compare(await readFile(join(clone, 'large.bin')), await readFile(join(work, 'large.bin'))),
    ).toBe(0);
  });

  it('sends the stored pack of a packfile-uris clone as a presigned URL of the bucket', async () => {
    const work = await workRepo(home, 3, 's3-uris');
    const url = `${stack.api.url}/s3/uris.git`;
    await run(['push', url, 'main'], work);
    const normal = join(home, 's3-uris-normal');
    await run(['clone', '-q', '--bare', url, normal]);
    const uris = join(home, 's3-uris-clone');
    await run([
      '-c',
      'protocol.version=2',
      '-c',
      'fetch.uriprotocols=http',
      'clone',
      '-q',
      '--bare',
      url,
      uris,
    ]);
    const objects = async (dir: string) => {
      await gitOk(['fsck', '--strict', '--no-dangling'], { cwd: dir, home });
      const list = await gitOk(['cat-file', '--batch-all-objects', '--batch-check'], { cwd: dir, home });
      return { list, refs: await gitOk(['for-each-ref'], { cwd: dir, home }) };
    };
    expect(await objects(uris)).toEqual(await objects(normal));
    // Two packs: the one fetched from the bucket and the (empty) inline one; narwal served neither URI.
    const packs = (await readdir(join(uris, 'objects', 'pack'))).filter((n) => n.endsWith('.pack'));
    expect(packs).toHaveLength(2);
    const served = [...pool.requests.map((r) => r.path), ...stack.api.invocations.map((i) => i.path)];
    expect(served.filter((path) => path.includes('/uri-packs/'))).toEqual([]);
  });
});
