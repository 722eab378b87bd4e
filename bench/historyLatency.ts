/**
 * `npm run bench:history [-- --entries N --latency MS]`: what the log's readers cost on a long
 * log with every store round trip slowed to S3's (issue 4's acceptance): the log page (first and
 * later), an entry page (the refs after an old entry), `who` through the JSON API and through the
 * CLI, and issue 3's cold probe (`git ls-remote` with an empty cache; warm target 150 ms), each
 * from a server process that has read nothing yet and again once warm.
 */
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import type { Server } from 'node:http';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs, promisify } from 'node:util';
import { createApp } from '../lib/app.js';
import { loadConfig } from '../lib/config.js';
import { createNodeServer } from '../lib/http/nodeServer.js';
import { silentLogger } from '../lib/log.js';
import { FsObjectStore } from '../lib/store/FsObjectStore.js';
import { PROJECT_ROOT } from './fixtures.js';
import { buildLongLog } from './longLog.js';

const run = promisify(execFile);
const { values } = parseArgs({
  options: { entries: { type: 'string', default: '10000' }, latency: { type: 'string', default: '30' } },
});
const entries = Number(values.entries);
const latency = Number(values.latency);
const REPO = 'team/big';
const TOKEN = 'history-bench-admin-token';

const dataDir = await mkdtemp(join(tmpdir(), 'narwal-history-bench-'));
try {
  const built = performance.now();
  await buildLongLog(new FsObjectStore(join(dataDir, 'store')), REPO, {
    entries,
    checkpointEvery: 100,
    wideEvery: 97,
    onProgress: (i) => {
      if (i % 1000 === 0) process.stderr.write(`  built ${i} pushes\n`);
    },
  });
  console.log(`built a log of ${entries} entries in ${((performance.now() - built) / 1000).toFixed(1)} s`);

  const env = { NARWAL_ADMIN_TOKEN: TOKEN, NARWAL_STORE_LATENCY_MS: String(latency) };
  const rows: { what: string; cold: number; warm: number; target?: number }[] = [];
  const app = await createApp(loadConfig(env, { dataDir, port: 0 }), silentLogger);
  const server: Server = createNodeServer(app.handler, silentLogger);
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  const address = server.address();
  const base = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
  const headers = {
    authorization: `Basic ${Buffer.from(`x:${TOKEN}`).toString('base64')}`,
    accept: 'text/html',
  };
  const time = async (path: string): Promise<number> => {
    const started = performance.now();
    const res = await fetch(`${base}${path}`, { headers });
    const body = await res.text();
    if (res.status !== 200) throw new Error(`${path}: ${res.status} ${body.slice(0, 200)}`);
    return performance.now() - started;
  };
  const measure = async (what: string, path: string, target?: number) => {
    const cold = await time(path);
    const warm = await time(path);
    rows.push({ what, cold, warm, ...(target !== undefined ? { target } : {}) });
  };
  try {
    // Issue 3's cold probe: the first ls-remote meets an empty cache (its refs come from the log alone).
    const lsRemote = async () => {
      const started = performance.now();
      const url = `${base.replace('://', `://x:${TOKEN}@`)}/${REPO}.git`;
      const { stdout } = await run('git', ['ls-remote', url], { maxBuffer: 64 * 1024 * 1024 });
      if (!stdout.includes('refs/heads/b3')) throw new Error('ls-remote did not list the refs');
      return performance.now() - started;
    };
    rows.push({
      what: 'git ls-remote (empty cache, then warm)',
      cold: await lsRemote(),
      warm: await lsRemote(),
      target: 3000,
    });
    await measure('log page, first (HTML)', `/${REPO}/-/log`, 500);
    await measure('log page, middle (HTML)', `/${REPO}?before=${Math.floor(entries / 2)}`, 1000);
    await measure('log page, oldest (HTML)', `/${REPO}?before=20`, 1000);
    await measure('log page, first (JSON)', `/api/v1/repos/${REPO}/-/log`, 500);
    await measure(
      'entry page, old entry (refs after it)',
      `/${REPO}/-/entry/${Math.floor(entries / 3)}`,
      1000,
    );
    await measure('who (JSON API)', `/api/v1/repos/${REPO}/-/who?ref=refs/heads/b3`, 2000);
  } finally {
    server.closeAllConnections();
    await new Promise<void>((done) => server.close(() => done()));
    await app.close();
  }
  const cli = join(PROJECT_ROOT, 'dist', 'narwal.js');
  const cliEnv = { PATH: process.env.PATH ?? '/usr/bin:/bin', NARWAL_DATA: dataDir, ...env };
  const cliTime = async () => {
    const started = performance.now();
    await run(process.execPath, [cli, 'who', REPO, 'refs/heads/b3'], {
      env: cliEnv,
      maxBuffer: 64 * 1024 * 1024,
    });
    return performance.now() - started;
  };
  rows.push({
    what: 'narwal who (CLI process, start to exit)',
    cold: await cliTime(),
    warm: await cliTime(),
    target: 2000,
  });

  const table = [
    `Log readers at ${entries} entries, ${latency} ms per store round trip (${cpus()[0]?.model ?? 'cpu'}, ${cpus().length} cores)`,
    '',
    '| request | first (ms) | again (ms) | target (ms) | |',
    '|---|---:|---:|---:|---|',
    ...rows.map(
      (r) =>
        `| ${r.what} | ${r.cold.toFixed(0)} | ${r.warm.toFixed(0)} | ${r.target ?? ''} | ${
          r.target === undefined ? '' : r.cold < r.target ? 'met' : 'MISSED'
        } |`,
    ),
  ].join('\n');
  console.log(`\n${table}`);
  const out = join(PROJECT_ROOT, 'bench', 'results');
  await mkdir(out, { recursive: true });
  const stamp = new Date()
    .toISOString()
    .replace(/[:.]/g, '-')
    .replace(/-\d{3}Z$/, 'Z');
  await writeFile(
    join(out, `${stamp}-history.json`),
    `${JSON.stringify({ entries, latency, rows }, null, 2)}\n`,
  );
  await writeFile(join(out, `${stamp}-history.md`), `${table}\n`);
} finally {
  await rm(dataDir, { recursive: true, force: true });
}
