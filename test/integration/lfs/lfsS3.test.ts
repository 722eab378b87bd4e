/**
 * Git LFS on S3 (a local Ceph RGW 16): git-lfs moves the bytes to and from the bucket through
 * presigned URLs, never through narwal. RGW 16 stores a PUT whatever its x-amz-checksum-sha256
 * says, so narwal takes uploads at keys of their own and lists an object as present only once the
 * verify action has hashed it; an upload of other bytes is refused there and discarded.
 */
import { createHash, randomBytes } from 'node:crypto';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { CreateBucketCommand, S3Client } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { App } from '../../../lib/app.js';
import { lfsPrefix } from '../../../lib/wal/keys.js';
import { gitOk } from '../../helpers/gitClient.js';
import { fileSha256, makeLfsHome, useToken, withToken, writeRandomFile } from '../../helpers/lfsClient.js';
import { ADMIN_TOKEN, type RunningNarwal, startInProcess } from '../../helpers/narwalServer.js';
import { type RgwEndpoint, startRgw } from '../../helpers/rgw.js';

const LFS_JSON = 'application/vnd.git-lfs+json';
const REPO = 's3/lfs';

let rgw: RgwEndpoint | undefined;
let server: RunningNarwal & { app: App };
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
  server = await startInProcess({
    env: {
      NARWAL_STORE: 's3',
      NARWAL_S3_BUCKET: bucket,
      NARWAL_S3_ENDPOINT: rgw.endpoint,
      NARWAL_S3_PREFIX: 'narwal/',
      AWS_REGION: 'us-east-1',
    },
  });
  home = await makeLfsHome();
}, 300_000);

afterAll(async () => {
  await server?.stop();
  await rgw?.stop();
  if (home) await rm(home, { recursive: true, force: true });
});

const basic = `Basic ${Buffer.from(`lfs:${ADMIN_TOKEN}`).toString('base64')}`;
const sha256 = (data: Buffer) => createHash('sha256').update(data).digest('hex');

interface Answer {
  objects: {
    oid: string;
    actions?: Record<string, { href: string; header?: Record<string, string>; expires_in: number }>;
    error?: { code: number; message: string };
  }[];
}

async function batch(operation: string, objects: { oid: string; size: number }[]): Promise<Answer> {
  const res = await fetch(`${server.url}/${REPO}.git/info/lfs/objects/batch`, {
    method: 'POST',
    headers: { 'content-type': LFS_JSON, authorization: basic },
    body: JSON.stringify({ operation, objects }),
  });
  expect(res.status).toBe(200);
  return (await res.json()) as Answer;
}

describe('git lfs on S3 (Ceph RGW)', () => {
  it('sends git-lfs to the bucket with presigned URLs, and lists an upload once its hash was checked', async () => {
    const work = join(home, 'work');
    await gitOk(['init', '-q', '-b', 'main', work], { home });
    await useToken(work, home, ADMIN_TOKEN);
    await gitOk(['lfs', 'track', '*.bin'], { cwd: work, home });
    // Over one multipart part, so the check after the upload streams it into place in parts.
    const big = await writeRandomFile(join(work, 'big.bin'), 20 * 1024 * 1024 + 3);
    const small = await writeRandomFile(join(work, 'small.bin'), 3000);
    await gitOk(['add', '.'], { cwd: work, home });
    await gitOk(['commit', '-q', '-m', 'binaries'], { cwd: work, home });

    // Before the push: where the batch API sends the upload, and where its check is.
    const before = await batch('upload', [{ oid: small, size: 3000 }]);
    const actions = before.objects[0]?.actions;
    expect(actions?.upload?.href.startsWith(`${rgw?.endpoint}/`)).toBe(true);
    expect(actions?.upload?.href).toMatch(/X-Amz-Signature=/);
    expect(actions?.upload?.header).toEqual({ 'if-none-match': '*' });
    expect(actions?.upload?.expires_in).toBeGreaterThan(3000);
    expect(actions?.verify?.href).toMatch(
      new RegExp(`^${server.url}/${REPO}\\.git/info/lfs/verify\\?upload=[0-9a-f]{32}$`),
    );

    const url = `${server.url}/${REPO}.git`;
    await gitOk(['push', '-q', url, 'main'], { cwd: work, home });
    // Stored under the oids, and nothing left under incoming/.
    const keys = (await server.app.store.list(lfsPrefix(REPO))).keys;
    expect([...keys].sort()).toEqual(
      [`${lfsPrefix(REPO)}objects/${big}`, `${lfsPrefix(REPO)}objects/${small}`].sort(),
    );

    const after = await batch('download', [
      { oid: big, size: 20 * 1024 * 1024 + 3 },
      { oid: small, size: 3000 },
    ]);
    for (const object of after.objects)
      expect(object.actions?.download?.href.startsWith(`${rgw?.endpoint}/`)).toBe(true);

    const clone = join(home, 'clone');
    await gitOk(['clone', '-q', url, clone], { home, env: withToken(ADMIN_TOKEN) });
    expect(await fileSha256(join(clone, 'big.bin'))).toBe(big);
    expect(await fileSha256(join(clone, 'small.bin'))).toBe(small);
    await rm(join(work, 'big.bin'));
    await rm(join(clone, 'big.bin'));
  }, 300_000);

  it('refuses at the verify an upload whose bytes are not its oid, and stores nothing', async () => {
    const data = randomBytes(5000);
    const oid = sha256(data);
    const answer = await batch('upload', [{ oid, size: data.length }]);
    const actions = answer.objects[0]?.actions;
    const upload = actions?.upload;
    const verify = actions?.verify;
    if (upload === undefined || verify === undefined)
      throw new Error(`no actions: ${JSON.stringify(answer)}`);
    // RGW 16 takes other bytes of the signed length: its checksum header is not checked there.
    const put = await fetch(upload.href, { method: 'PUT', headers: upload.header, body: randomBytes(5000) });
    expect(put.status).toBe(200);
    const res = await fetch(verify.href, {
      method: 'POST',
      headers: { ...verify.header, 'content-type': LFS_JSON },
      body: JSON.stringify({ oid, size: data.length }),
    });
    expect(res.status).toBe(422);
    expect(res.headers.get('content-type')).toBe(LFS_JSON);
    expect(((await res.json()) as { message: string }).message).toMatch(/was not .*SHA-256.*discarded/);
    const download = await batch('download', [{ oid, size: data.length }]);
    expect(download.objects[0]?.error?.code).toBe(404);
    const keys = (await server.app.store.list(lfsPrefix(REPO))).keys;
    expect(keys.filter((k) => k.includes(oid))).toEqual([]);
    // The same object uploaded right afterwards is taken.
    const again = await batch('upload', [{ oid, size: data.length }]);
    const second = again.objects[0]?.actions;
    if (second?.upload === undefined || second.verify === undefined) throw new Error('no actions');
    expect(
      (await fetch(second.upload.href, { method: 'PUT', headers: second.upload.header, body: data })).status,
    ).toBe(200);
    const verified = await fetch(second.verify.href, {
      method: 'POST',
      headers: { ...second.verify.header, 'content-type': LFS_JSON },
      body: JSON.stringify({ oid, size: data.length }),
    });
    expect(verified.status).toBe(200);
    expect(
      (await batch('download', [{ oid, size: data.length }])).objects[0]?.actions?.download,
    ).toBeDefined();
  }, 120_000);
});
