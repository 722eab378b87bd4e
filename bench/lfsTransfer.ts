/**
 * Git LFS through narwal (issue 19's two benchmarks):
 * - a 200 MB object uploaded and downloaded through narwal's embedded store, against `cp` of the
 *   same file on the same disk. Bytes are moved by curl, as git-lfs would move them (a PUT of the
 *   file to the upload action, a GET of the download action), so the client costs little and the
 *   figure is narwal's: the HTTP hop, hashing while it writes, and the store's fsync. `cp` is
 *   measured plain (the target's reference) and followed by `sync FILE`, since narwal makes an
 *   object durable before it answers. The same curl transfers to a bare node:http server that
 *   writes the body to a file and flushes it / serves the file (no hashing, no checks) measure
 *   what the HTTP hop alone costs on this machine: a floor for any server in Node. Two more floors
 *   are timed in the same run: SHA-256 of the whole object in this process (node's crypto, the hash
 *   narwal computes on every upload; its reads not counted), and curl copying the file to a file with no server at all
 *   (`file://`), the client's own part of every transfer.
 * - the batch call for 1,000 objects on a store with L ms added to every operation (standing in
 *   for S3): download of 1,000 stored objects, upload of the same (nothing to send), and upload of
 *   1,000 the store lacks.
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, open, rm, stat, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { promisify } from 'node:util';
import { mapLimit } from '../lib/util/mapLimit.js';
import { writeRandomFile } from '../test/helpers/lfsClient.js';
import { gitOk } from './gitClient.js';
import { type BenchServer, startNarwal } from './servers.js';
import { median } from './stats.js';

const run = promisify(execFile);
const REPO = 'bench/lfs';
const LFS_JSON = 'application/vnd.git-lfs+json';

export interface LfsTransferResult {
  readonly bytes: number;
  /** Wall times in ms, one per run. */
  readonly cpMs: number[];
  readonly cpSyncMs: number[];
  /** SHA-256 of the object in this process, its reads left out: the hashing an upload cannot skip. */
  readonly hashMs: number[];
  /** curl copying the file to a file by itself (`file://`): the client's own part. */
  readonly curlMs: number[];
  readonly uploadMs: number[];
  readonly downloadMs: number[];
  /** The bare node:http server's upload (written with fsync) and download. */
  readonly floorUploadMs: number[];
  readonly floorDownloadMs: number[];
}

export interface LfsBatchResult {
  readonly objects: number;
  readonly latencyMs: number;
  /** Wall times in ms of one batch call, one per run. */
  readonly downloadMs: number[];
  readonly uploadPresentMs: number[];
  readonly uploadMissingMs: number[];
}

export interface LfsBenchResult {
  readonly transfer: LfsTransferResult;
  readonly batch: LfsBatchResult;
}

interface Action {
  readonly href: string;
  readonly header?: Record<string, string>;
}

interface BatchAnswer {
  readonly objects: { oid: string; size: number; actions?: Record<string, Action>; error?: unknown }[];
}

export async function lfsBench(options: {
  workDir: string;
  home: string;
  token: string;
  cli: string;
  latencyMs: number;
  env: Readonly<Record<string, string>>;
  bytes: number;
  objects: number;
  runs: number;
  log: (line: string) => void;
}): Promise<LfsBenchResult> {
  const dir = join(options.workDir, 'lfs');
  const dataDir = join(dir, 'narwal');
  await mkdir(dir, { recursive: true });
  const auth = { authorization: `Basic ${Buffer.from(`admin:${options.token}`).toString('base64')}` };
  const fast = await startNarwal({ dataDir, token: options.token, cli: options.cli, env: options.env });
  let transfer: LfsTransferResult;
  const present: { oid: string; size: number }[] = [];
  try {
    await createRepo(fast, options.home, dir);
    transfer = await transfers(fast, auth, dir, dataDir, options);
    options.log(
      `  ${mb(options.bytes)}: cp ${median(transfer.cpMs).toFixed(0)} ms (with fsync ${median(transfer.cpSyncMs).toFixed(0)} ms), SHA-256 ${median(transfer.hashMs).toFixed(0)} ms, curl alone ${median(transfer.curlMs).toFixed(0)} ms, upload ${median(transfer.uploadMs).toFixed(0)} ms, download ${median(transfer.downloadMs).toFixed(0)} ms; bare node:http ${median(transfer.floorUploadMs).toFixed(0)} ms up, ${median(transfer.floorDownloadMs).toFixed(0)} ms down`,
    );
    // The objects the batch asks about, stored through the server with no added latency.
    for (let i = 0; i < options.objects; i++) {
      const body = Buffer.from(`object ${i}\n`);
      present.push({ oid: createHash('sha256').update(body).digest('hex'), size: body.length });
    }
    const answer = await batchCall(fast, auth, 'upload', present);
    await mapLimit([...answer.objects.entries()], 16, async ([i, o]) => {
      const upload = o.actions?.upload;
      if (!upload) return;
      const put = await fetch(upload.href, {
        method: 'PUT',
        headers: { ...upload.header, 'content-type': 'application/octet-stream' },
        body: Buffer.from(`object ${i}\n`),
      });
      if (!put.ok) throw new Error(`upload of object ${i}: ${put.status} ${await put.text()}`);
    });
  } finally {
    await fast.stop();
  }
  const slow = await startNarwal({
    dataDir,
    token: options.token,
    cli: options.cli,
    latencyMs: options.latencyMs,
    env: options.env,
  });
  try {
    const missing = (r: number) =>
      present.map((_, i) => {
        const body = Buffer.from(`missing ${r} ${i}\n`);
        return { oid: createHash('sha256').update(body).digest('hex'), size: body.length };
      });
    const batch: LfsBatchResult = {
      objects: options.objects,
      latencyMs: options.latencyMs,
      downloadMs: [],
      uploadPresentMs: [],
      uploadMissingMs: [],
    };
    // A first call warms the server (token, index), as a client's earlier requests would.
    await batchCall(slow, auth, 'download', present.slice(0, 1));
    for (let r = 0; r < options.runs; r++) {
      batch.downloadMs.push(await timed(() => batchCall(slow, auth, 'download', present)));
      batch.uploadPresentMs.push(await timed(() => batchCall(slow, auth, 'upload', present)));
      batch.uploadMissingMs.push(await timed(() => batchCall(slow, auth, 'upload', missing(r))));
    }
    options.log(
      `  batch of ${options.objects} at ${options.latencyMs} ms: download ${median(batch.downloadMs).toFixed(0)} ms, upload (stored) ${median(batch.uploadPresentMs).toFixed(0)} ms, upload (missing) ${median(batch.uploadMissingMs).toFixed(0)} ms`,
    );
    return { transfer, batch };
  } finally {
    await slow.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

/** The repository, made by a push of one commit (a download needs it to exist). */
async function createRepo(server: BenchServer, home: string, dir: string): Promise<void> {
  const work = join(dir, 'work');
  await gitOk(['init', '-q', work], { home });
  await writeFile(join(work, 'README'), 'lfs bench\n');
  await gitOk(['add', 'README'], { home, cwd: work });
  await gitOk(['-c', 'user.name=b', '-c', 'user.email=b@b', 'commit', '-q', '-m', 'init'], {
    home,
    cwd: work,
  });
  await gitOk(['push', '-q', server.repoUrl(`${REPO}.git`), 'HEAD:refs/heads/main'], { home, cwd: work });
}

async function transfers(
  server: BenchServer,
  auth: Record<string, string>,
  dir: string,
  dataDir: string,
  options: { bytes: number; runs: number },
): Promise<LfsTransferResult> {
  const source = join(dir, 'big.bin');
  const oid = await writeRandomFile(source, options.bytes);
  const copy = join(dir, 'copy.bin');
  const fetched = join(dir, 'fetched.bin');
  const stored = join(dataDir, 'store', 'objects', 'repos', `${REPO}.git`, 'lfs', 'objects', oid);
  const result: LfsTransferResult = {
    bytes: options.bytes,
    cpMs: [],
    cpSyncMs: [],
    hashMs: [],
    curlMs: [],
    uploadMs: [],
    downloadMs: [],
    floorUploadMs: [],
    floorDownloadMs: [],
  };
  const object = [{ oid, size: options.bytes }];
  const floor = await bareServer(copy, source);
  for (let r = 0; r < options.runs; r++) {
    await rm(copy, { force: true });
    result.cpMs.push(await timed(() => run('cp', [source, copy])));
    await rm(copy, { force: true });
    result.cpSyncMs.push(
      await timed(async () => {
        await run('cp', [source, copy]);
        await run('sync', [copy]);
      }),
    );
    await rm(copy, { force: true });
    result.hashMs.push(await hashingTime(source, oid));
    result.curlMs.push(await timed(() => curl(['-o', copy, `file://${source}`])));
    await rm(copy, { force: true });
    // Each upload stores the object anew: the one before is removed, outside the measurement.
    await rm(stored, { force: true });
    result.uploadMs.push(
      await timed(async () => {
        const upload = (await batchCall(server, auth, 'upload', object)).objects[0]?.actions?.upload;
        if (!upload) throw new Error('no upload action for the big object');
        await curl(['-T', source, ...headers(upload), upload.href]);
      }),
    );
    if ((await stat(stored)).size !== options.bytes) throw new Error('the big object was not stored whole');
    await rm(fetched, { force: true });
    result.downloadMs.push(
      await timed(async () => {
        const download = (await batchCall(server, auth, 'download', object)).objects[0]?.actions?.download;
        if (!download) throw new Error('no download action for the big object');
        await curl(['-o', fetched, ...headers(download), download.href]);
      }),
    );
    if ((await stat(fetched)).size !== options.bytes) throw new Error('the big object came back short');
    await rm(fetched, { force: true });
    result.floorUploadMs.push(await timed(() => curl(['-T', source, floor.url])));
    await rm(copy, { force: true });
    result.floorDownloadMs.push(await timed(() => curl(['-o', fetched, floor.url])));
    await rm(fetched, { force: true });
  }
  await floor.close();
  await rm(source, { force: true });
  return result;
}

/**
 * Milliseconds spent hashing `path` with SHA-256, the reads left out. The file goes through one
 * 8 MiB buffer: holding the whole object would grow this process, and with it the cost of every
 * `cp` and curl it starts afterwards (a fork copies the page tables). The digest must be `oid`.
 */
async function hashingTime(path: string, oid: string): Promise<number> {
  const piece = Buffer.allocUnsafe(8 * 1024 * 1024);
  const hash = createHash('sha256');
  let ms = 0;
  const file = await open(path, 'r');
  try {
    for (;;) {
      const { bytesRead } = await file.read(piece, 0, piece.length, null);
      if (bytesRead === 0) break;
      const started = performance.now();
      hash.update(piece.subarray(0, bytesRead));
      ms += performance.now() - started;
    }
  } finally {
    await file.close();
  }
  const started = performance.now();
  const digest = hash.digest('hex');
  ms += performance.now() - started;
  if (digest !== oid) throw new Error(`the big object hashed to ${digest}, not ${oid}`);
  return ms;
}

/** A node:http server with nothing of narwal: PUT writes the body to `target` with fsync, GET serves `source`. */
async function bareServer(target: string, source: string): Promise<{ url: string; close(): Promise<void> }> {
  const size = (await stat(source)).size;
  const server = createServer((request, response) => {
    const done = (error?: Error | null) => {
      response.statusCode = error ? 500 : 200;
      response.end();
    };
    if (request.method === 'PUT')
      pipeline(request, createWriteStream(target, { flush: true, highWaterMark: 4 * 1024 * 1024 })).then(
        () => done(),
        done,
      );
    else {
      response.setHeader('content-length', String(size));
      pipeline(createReadStream(source, { highWaterMark: 1024 * 1024 }), response).catch(() => {});
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/big.bin`,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

async function batchCall(
  server: BenchServer,
  auth: Record<string, string>,
  operation: 'upload' | 'download',
  objects: readonly { oid: string; size: number }[],
): Promise<BatchAnswer> {
  const response = await fetch(`${server.url}/${REPO}.git/info/lfs/objects/batch`, {
    method: 'POST',
    headers: { ...auth, accept: LFS_JSON, 'content-type': LFS_JSON },
    body: JSON.stringify({ operation, transfers: ['basic'], objects, hash_algo: 'sha256' }),
  });
  if (!response.ok) throw new Error(`batch ${operation}: ${response.status} ${await response.text()}`);
  const answer = (await response.json()) as BatchAnswer;
  if (answer.objects.length !== objects.length) throw new Error(`batch ${operation}: objects missing`);
  return answer;
}

function headers(action: Action): string[] {
  return Object.entries(action.header ?? {}).flatMap(([k, v]) => ['-H', `${k}: ${v}`]);
}

async function curl(args: string[]): Promise<void> {
  await run('curl', ['-sS', '--fail-with-body', ...args], { maxBuffer: 1024 * 1024 });
}

async function timed(work: () => Promise<unknown>): Promise<number> {
  const started = performance.now();
  await work();
  return performance.now() - started;
}

const mb = (bytes: number) => `${Math.round(bytes / (1024 * 1024))} MB`;
