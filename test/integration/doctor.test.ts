/**
 * `narwal doctor`: every check passes on the embedded store and the local presence records (and,
 * in s3Store/dynamoPresence tests, on Ceph RGW and DynamoDB Local), and a real S3 look-alike that
 * ignores conditional writes (s3rver) is refused with exit status 1 and the reason.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { S3Client } from '@aws-sdk/client-s3';
import S3rver from 's3rver';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkPresence, checkStore } from '../../lib/doctor/checkBackends.js';
import { ObjectPresenceStore } from '../../lib/presence/ObjectPresenceStore.js';
import { FsObjectStore } from '../../lib/store/FsObjectStore.js';
import { S3ObjectStore } from '../../lib/store/S3ObjectStore.js';
import { narwalCli } from '../helpers/narwalCli.js';
import { tempDataDir } from '../helpers/narwalServer.js';

const BUCKET = 'doctor-probe';
let s3rver: S3rver;
let s3rverDir: string;
let endpoint: string;

beforeAll(async () => {
  s3rverDir = await mkdtemp(join(tmpdir(), 'narwal-s3rver-'));
  s3rver = new S3rver({
    address: '127.0.0.1',
    port: 0,
    silent: true,
    directory: s3rverDir,
    configureBuckets: [{ name: BUCKET }],
  });
  const { port } = await s3rver.run();
  endpoint = `http://127.0.0.1:${port}`;
});
afterAll(async () => {
  await s3rver?.close();
  await rm(s3rverDir, { recursive: true, force: true });
});

describe('narwal doctor', () => {
  it('passes every check on the embedded store and local presence, leaving nothing behind', async () => {
    const dir = await tempDataDir();
    try {
      const store = new FsObjectStore(join(dir, 'store'));
      const storeChecks = await checkStore(store);
      expect(storeChecks.filter((c) => !c.ok)).toEqual([]);
      expect((await store.list('')).keys).toEqual([]);
      const presence = new ObjectPresenceStore({ store: new FsObjectStore(join(dir, 'presence')) });
      expect((await checkPresence(presence)).filter((c) => !c.ok)).toEqual([]);
      const cli = await narwalCli(['doctor'], { dataDir: dir });
      expect(cli.code, cli.stderr).toBe(0);
      expect(cli.stdout).toContain('every check passed');
      expect(cli.stdout).not.toContain('FAIL');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('refuses s3rver, which accepts conditional puts and then overwrites', async () => {
    const client = new S3Client({
      endpoint,
      region: 'us-east-1',
      forcePathStyle: true,
      credentials: { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' },
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED',
    });
    try {
      const checks = await checkStore(new S3ObjectStore({ client, bucket: BUCKET }));
      const failed = checks.filter((c) => !c.ok).map((c) => c.name);
      expect(failed).toContain('a second create-only put of the same key is refused');
      expect(failed).toContain('a put with a stale etag (If-Match) is refused');
    } finally {
      client.destroy();
    }
    const dir = await tempDataDir();
    try {
      const cli = await narwalCli(['doctor', '--store-only'], {
        dataDir: dir,
        env: {
          NARWAL_STORE: 's3',
          NARWAL_S3_BUCKET: BUCKET,
          NARWAL_S3_ENDPOINT: endpoint,
          NARWAL_S3_FORCE_PATH_STYLE: '1',
          AWS_ACCESS_KEY_ID: 'S3RVER',
          AWS_SECRET_ACCESS_KEY: 'S3RVER',
          AWS_REGION: 'us-east-1',
        },
      });
      expect(cli.code).toBe(1);
      expect(cli.stdout).toMatch(
        /FAIL a second create-only put of the same key is refused: .*does not honour conditional writes/,
      );
      expect(cli.stderr).toContain('narwal must not run on this backend');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
