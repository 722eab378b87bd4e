/**
 * `npm run bench:authorizer [-- --requests N --latency MS]`: what API Gateway's REQUEST authorizer
 * adds to each request of the git function, through the API Gateway stand-in
 * (test/helpers/aws/): the same authenticated `GET info/refs` sent N times, one after another,
 * through a stack without the authorizer, with it as deployed (no cache: it runs for every
 * request), and with API Gateway caching its result for 300 s (keyed on the Authorization header,
 * which a deployment may only choose when it serves no repository anonymously: a request without
 * the header is then refused before the authorizer runs).
 *
 * What this measures is the authorizer's own work (parsing, the token check, its store reads)
 * and the stand-in's; the network hop from API Gateway to the authorizer function and its cold
 * starts happen only on AWS and are not in these figures.
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { request as httpRequest } from 'node:http';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { silentLogger } from '../lib/log.js';
import { startLambdaStack } from '../test/helpers/aws/lambdaStack.js';
import { startInProcess } from '../test/helpers/narwalServer.js';
import { PROJECT_ROOT } from './fixtures.js';
import { gitOk } from './gitClient.js';
import { median, percentile } from './stats.js';

const { values } = parseArgs({
  options: { requests: { type: 'string', default: '300' }, latency: { type: 'string', default: '30' } },
});
const requests = Number(values.requests);
const latencies = [0, Number(values.latency)];
const REPO = 'bench/auth';

interface Row {
  readonly latencyMs: number;
  readonly variant: string;
  readonly p50: number;
  readonly p90: number;
  readonly authorizerRuns: number;
}

const dataDir = await mkdtemp(join(tmpdir(), 'narwal-authorizer-bench-'));
const home = join(dataDir, 'home');
const rows: Row[] = [];
try {
  await mkdir(home, { recursive: true });
  const seed = await startInProcess({ dataDir });
  const work = join(dataDir, 'work');
  await gitOk(['init', '-q', '-b', 'main', work], { home });
  await writeFile(join(work, 'README'), 'authorizer bench\n');
  await gitOk(['add', 'README'], { cwd: work, home });
  await gitOk(['-c', 'user.name=b', '-c', 'user.email=b@b', 'commit', '-q', '-m', 'seed'], {
    cwd: work,
    home,
  });
  await gitOk(['push', '-q', `${seed.authUrl}/${REPO}.git`, 'main'], { cwd: work, home });
  // A token of the store, not the configured admin token (which is checked in memory alone).
  const { token } = await seed.app.tokens.create({
    name: 'bench',
    grants: [{ scope: 'read', pattern: 'bench/*' }],
  });
  await seed.stop();

  const cached = { identitySources: ['method.request.header.Authorization'], resultTtlSeconds: 300 };
  const variants: {
    variant: string;
    authorizer: false | undefined | typeof cached;
    env: Record<string, string>;
  }[] = [
    { variant: 'no authorizer', authorizer: false as const, env: {} },
    { variant: 'authorizer, no cache (as deployed)', authorizer: undefined, env: {} },
    {
      variant: 'authorizer, no cache, token records read every time',
      authorizer: undefined,
      env: { NARWAL_TOKEN_CACHE_MS: '0' },
    },
    { variant: 'authorizer, result cached 300 s', authorizer: cached, env: {} },
  ];
  for (const latencyMs of latencies) {
    for (const { variant, authorizer, env } of variants) {
      const stack = await startLambdaStack({
        dataDir,
        kind: 'streamed',
        logger: silentLogger,
        env: { NARWAL_STORE_LATENCY_MS: String(latencyMs), NARWAL_QUIET: '1', ...env },
        ...(authorizer !== undefined ? { authorizer } : {}),
      });
      try {
        const url = new URL(`${stack.api.url}/${REPO}.git/info/refs?service=git-upload-pack`);
        const times: number[] = [];
        // The first requests start the sandboxes and warm their caches; they are not counted.
        for (let i = 0; i < requests + 10; i++) {
          const started = performance.now();
          await get(url, token);
          if (i >= 10) times.push(performance.now() - started);
        }
        rows.push({
          latencyMs,
          variant,
          p50: median(times),
          p90: percentile(times, 90),
          authorizerRuns: stack.authorizer?.invocations ?? 0,
        });
        console.log(`${latencyMs} ms store latency, ${variant}: p50 ${median(times).toFixed(2)} ms`);
      } finally {
        await stack.stop();
      }
    }
  }
  const report = render(rows);
  console.log(`\n${report}`);
  const stamp = new Date()
    .toISOString()
    .replace(/[:.]/g, '-')
    .replace(/-\d{3}Z$/, 'Z');
  const dir = join(PROJECT_ROOT, 'bench', 'results');
  await mkdir(dir, { recursive: true });
  await writeFile(join(dir, `${stamp}-authorizer.json`), `${JSON.stringify({ requests, rows }, null, 2)}\n`);
  await writeFile(join(dir, `${stamp}-authorizer.md`), report);
} finally {
  await rm(dataDir, { recursive: true, force: true });
}

/** One request on a connection of its own, as each git request through API Gateway may be. */
function get(url: URL, token: string): Promise<void> {
  return new Promise((done, fail) => {
    const req = httpRequest(
      url,
      { headers: { authorization: `Basic ${Buffer.from(`x:${token}`).toString('base64')}` } },
      (res) => {
        res.resume();
        res.on('end', () => (res.statusCode === 200 ? done() : fail(new Error(`status ${res.statusCode}`))));
      },
    );
    req.on('error', fail);
    req.end();
  });
}

function render(all: readonly Row[]): string {
  const lines = [
    `# What the REQUEST authorizer adds per request (${requests} sequential authenticated \`GET info/refs\`, ${cpus().length} CPUs)`,
    '',
    '| store latency | variant | p50 ms | p90 ms | added at p50 | authorizer runs |',
    '| --- | --- | --- | --- | --- | --- |',
  ];
  for (const row of all) {
    const base = all.find((r) => r.latencyMs === row.latencyMs && r.variant === 'no authorizer');
    const added = base ? `${(row.p50 - base.p50).toFixed(2)} ms` : '';
    lines.push(
      `| ${row.latencyMs} ms | ${row.variant} | ${row.p50.toFixed(2)} | ${row.p90.toFixed(2)} | ${added} | ${row.authorizerRuns} |`,
    );
  }
  return `${lines.join('\n')}\n`;
}
