/**
 * `npm run bench:browse [-- --commits N --warm N --cold N]`: narwal's repository pages against
 * cgit and gitweb (Debian's packages, behind nginx and fcgiwrap started here on free ports with a
 * configuration of their own), serving the same repository (browseRepo.ts, 60,000 commits by
 * default), in the same run: home, tree at the root and three levels down, a file, the commit
 * list's first page and a page 5,000 commits deep, and a commit with a large diff.
 *
 * - warm: the median of `--warm` requests in a row, after one unmeasured request;
 * - cold: the first request after the server was started again and the repository's files were
 *   dropped from the page cache (posix_fadvise DONTNEED on each file, which needs no privilege
 *   and touches nothing else on the machine), the median of `--cold` such starts. narwal keeps its
 *   shared cache on disk across the restart, as a new Lambda sandbox finds it on EFS.
 *
 * Requests are anonymous, on a public repository in narwal, as cgit and gitweb serve everyone.
 * cgit runs with its default configuration (no page cache of its own), 50 commits a page;
 * gitweb's shortlog has 100 a page, so its deep page is `pg=50`. Results go to
 * bench/results/<stamp>-browse.json and .md.
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { mkdir, mkdtemp, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs, promisify } from 'node:util';
import { buildBrowseRepo, LARGE_DIFF_FILES, LARGE_FILE_LINES } from './browseRepo.js';
import { PROJECT_ROOT } from './fixtures.js';
import { aligned } from './report.js';
import { type BenchServer, DEFAULT_NARWAL_CLI, startNarwal, stopChild } from './servers.js';
import { median, percentile } from './stats.js';

const run = promisify(execFile);
const { values } = parseArgs({
  options: {
    commits: { type: 'string', default: '60000' },
    warm: { type: 'string', default: '20' },
    cold: { type: 'string', default: '3' },
    deep: { type: 'string', default: '5000' },
  },
});
const COMMITS = Number(values.commits);
const WARM = Number(values.warm);
const COLD = Number(values.cold);
const DEEP = Number(values.deep);
const TOKEN = 'browse-bench-admin-token';
const REPO = 'bench/big';

type ServerName = 'narwal' | 'cgit' | 'gitweb' | 'narwal, no page cache';
interface PageUrls {
  readonly page: string;
  readonly urls: Record<'narwal' | 'cgit' | 'gitweb', string>;
}
interface Sample {
  page: string;
  server: ServerName;
  cold: number[];
  warm: number[];
  bytes: number;
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

/** Every file under `dirs` dropped from the page cache (POSIX_FADV_DONTNEED), by python3's os module. */
async function dropFromPageCache(dirs: readonly string[]): Promise<void> {
  const script = [
    'import os, sys',
    'for top in sys.argv[1:]:',
    '  for root, _, files in os.walk(top):',
    '    for name in files:',
    '      try:',
    '        fd = os.open(os.path.join(root, name), os.O_RDONLY)',
    '        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)',
    '        os.close(fd)',
    '      except OSError:',
    '        pass',
  ].join('\n');
  await run('python3', ['-c', script, ...dirs]);
}

/** nginx and fcgiwrap, each a process of ours, serving cgit at / and gitweb at /gitweb/. */
async function startCgit(work: string, reposDir: string): Promise<{ url: string; stop(): Promise<void> }> {
  const port = await freePort();
  const fcgiPort = await freePort();
  const conf = join(work, 'nginx');
  await mkdir(join(conf, 'tmp'), { recursive: true });
  await writeFile(
    join(conf, 'cgitrc'),
    [
      'cache-size=0',
      'virtual-root=/',
      'enable-index-owner=0',
      'repo.url=big.git',
      `repo.path=${join(reposDir, 'big.git')}`,
      '',
    ].join('\n'),
  );
  await writeFile(
    join(conf, 'gitweb.conf'),
    [
      `our $projectroot = "${reposDir}";`,
      'our $git_temp = "/tmp";',
      'our @git_base_url_list = ();',
      '1;',
      '',
    ].join('\n'),
  );
  const root = process.getuid?.() === 0 ? 'user root root;' : '';
  await writeFile(
    join(conf, 'nginx.conf'),
    `${root}
worker_processes 1;
daemon off;
pid ${join(conf, 'nginx.pid')};
error_log ${join(conf, 'error.log')};
events { worker_connections 256; }
http {
  access_log off;
  client_body_temp_path ${join(conf, 'tmp')}; fastcgi_temp_path ${join(conf, 'tmp')};
  proxy_temp_path ${join(conf, 'tmp')}; uwsgi_temp_path ${join(conf, 'tmp')}; scgi_temp_path ${join(conf, 'tmp')};
  fastcgi_buffers 64 16k;
  server {
    listen 127.0.0.1:${port};
    location /gitweb/ {
      include /etc/nginx/fastcgi_params;
      fastcgi_param SCRIPT_FILENAME /usr/share/gitweb/gitweb.cgi;
      fastcgi_param GITWEB_CONFIG ${join(conf, 'gitweb.conf')};
      fastcgi_pass 127.0.0.1:${fcgiPort};
    }
    location / {
      include /etc/nginx/fastcgi_params;
      fastcgi_param SCRIPT_FILENAME /usr/lib/cgit/cgit.cgi;
      fastcgi_param PATH_INFO $uri;
      fastcgi_param QUERY_STRING $args;
      fastcgi_param CGIT_CONFIG ${join(conf, 'cgitrc')};
      fastcgi_pass 127.0.0.1:${fcgiPort};
    }
  }
}
`,
  );
  const children: ChildProcess[] = [];
  // fcgiwrap's preforked processes outlive a parent that is stopped alone: it gets a process
  // group of its own, and the whole group (our child's pid as its id) is stopped.
  const fcgi = spawn('fcgiwrap', ['-c', '2', '-s', `tcp:127.0.0.1:${fcgiPort}`], {
    stdio: 'ignore',
    detached: true,
  });
  const nginx = spawn('nginx', ['-c', join(conf, 'nginx.conf'), '-p', conf], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  children.push(nginx);
  const url = `http://127.0.0.1:${port}`;
  const stop = async () => {
    for (const child of children.reverse()) await stopChild(child);
    await stopGroup(fcgi);
  };
  for (let i = 0; i < 100; i++) {
    const ok = await fetch(`${url}/`).then(
      (r) => r.status < 500,
      () => false,
    );
    if (ok) return { url, stop };
    await new Promise((r) => setTimeout(r, 100));
  }
  await stop();
  throw new Error('nginx with cgit did not start');
}

/** SIGTERM to the process group led by `child` (started detached), until none of it is left. */
async function stopGroup(child: ChildProcess): Promise<void> {
  const pid = child.pid;
  if (pid === undefined) return;
  const alive = () => {
    try {
      process.kill(-pid, 0);
      return true;
    } catch {
      return false;
    }
  };
  for (let i = 0; i < 100 && alive(); i++) {
    process.kill(-pid, i < 50 ? 'SIGTERM' : 'SIGKILL');
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function get(url: string): Promise<{ ms: number; bytes: number }> {
  const started = performance.now();
  const res = await fetch(url, { headers: { accept: 'text/html' } });
  const body = Buffer.from(await res.arrayBuffer());
  const ms = performance.now() - started;
  if (res.status !== 200) throw new Error(`${url}: ${res.status} ${body.toString().slice(0, 300)}`);
  return { ms, bytes: body.length };
}

async function git(args: string[]): Promise<string> {
  return (await run('git', args, { maxBuffer: 1 << 28 })).stdout;
}

/** Where the commit list's page DEEP commits down starts: the walk's queue after DEEP commits. */
async function deepStart(dir: string, depth: number): Promise<string[]> {
  const lines = (await git(['--git-dir', dir, 'rev-list', '--parents', `--max-count=${depth}`, 'main']))
    .trim()
    .split('\n');
  const shown = new Set(lines.map((l) => l.split(' ')[0]));
  const pending = new Set<string>();
  for (const line of lines) for (const p of line.split(' ').slice(1)) if (!shown.has(p)) pending.add(p);
  const dated = (await git(['--git-dir', dir, 'show', '-s', '--format=%H %ct', ...pending]))
    .trim()
    .split('\n')
    .map((l) => l.split(' '))
    .map(([oid, time]) => ({ oid: oid as string, time: Number(time) }));
  return dated.sort((a, b) => b.time - a.time).map((d) => d.oid);
}

async function narwalCli(dataDir: string, args: string[]): Promise<void> {
  await run(process.execPath, [DEFAULT_NARWAL_CLI, ...args], {
    env: { PATH: process.env.PATH, NARWAL_ADMIN_TOKEN: TOKEN, NARWAL_QUIET: '1', NARWAL_DATA: dataDir },
  });
}

async function filesUnder(dir: string): Promise<number> {
  let total = 0;
  for (const entry of await readdir(dir, { withFileTypes: true, recursive: true })) {
    if (entry.isFile()) total += (await stat(join(entry.parentPath, entry.name))).size;
  }
  return total;
}

const work = await mkdtemp(join(tmpdir(), 'narwal-browse-bench-'));
const startedAt = new Date();
const loadBefore = loadavg();
let narwal: BenchServer | null = null;
let uncached: BenchServer | null = null;
let cgit: { url: string; stop(): Promise<void> } | null = null;
try {
  const reposDir = join(work, 'repos');
  const bare = join(reposDir, 'big.git');
  await mkdir(reposDir, { recursive: true });
  let t = performance.now();
  const built = await buildBrowseRepo(bare, COMMITS);
  console.log(`built ${built.commits} commits in ${((performance.now() - t) / 1000).toFixed(1)} s`);
  const dataDir = join(work, 'narwal');
  await narwalCli(dataDir, ['repo', 'create', REPO, '--public']);
  narwal = await startNarwal({ dataDir, token: TOKEN });
  t = performance.now();
  await git([
    '--git-dir',
    bare,
    'push',
    '-q',
    narwal.repoUrl(REPO),
    'refs/heads/*:refs/heads/*',
    'refs/tags/*:refs/tags/*',
  ]);
  console.log(`pushed in ${((performance.now() - t) / 1000).toFixed(1)} s`);
  await narwal.stop();
  await narwalCli(dataDir, ['checkpoint', REPO]);
  narwal = await startNarwal({ dataDir, token: TOKEN });
  // The first read builds the generation (downloads the checkpoint's pack): setup, not measured.
  t = performance.now();
  await get(`${narwal.url}/${REPO}`);
  console.log(`first read (generation built) in ${(performance.now() - t).toFixed(0)} ms`);
  cgit = await startCgit(work, reposDir);
  uncached = await startNarwal({
    dataDir,
    token: TOKEN,
    name: 'narwal-no-page-cache',
    env: { NARWAL_BROWSE_CACHE_BYTES: '0' },
  });

  const deep = await deepStart(bare, DEEP);
  const dir = 'src/d55/e55';
  const file = `${dir}/file5.ts`;
  const pages: PageUrls[] = [
    {
      page: 'home',
      urls: { narwal: `/${REPO}`, cgit: '/big.git/', gitweb: '/gitweb/?p=big.git;a=summary' },
    },
    {
      page: 'tree, root',
      urls: {
        narwal: `/${REPO}/-/tree/main`,
        cgit: '/big.git/tree/?h=main',
        gitweb: '/gitweb/?p=big.git;a=tree;hb=refs/heads/main',
      },
    },
    {
      page: 'tree, 3 levels down',
      urls: {
        narwal: `/${REPO}/-/tree/main/${dir}`,
        cgit: `/big.git/tree/${dir}?h=main`,
        gitweb: `/gitweb/?p=big.git;a=tree;hb=refs/heads/main;f=${dir}`,
      },
    },
    {
      page: 'file',
      urls: {
        narwal: `/${REPO}/-/blob/main/${file}`,
        cgit: `/big.git/tree/${file}?h=main`,
        gitweb: `/gitweb/?p=big.git;a=blob;hb=refs/heads/main;f=${file}`,
      },
    },
    {
      page: 'commit list, first page',
      urls: {
        narwal: `/${REPO}/-/commits/main`,
        cgit: '/big.git/log/?h=main',
        gitweb: '/gitweb/?p=big.git;a=shortlog;h=refs/heads/main',
      },
    },
    {
      page: `commit list, ${DEEP.toLocaleString('en-US')} deep`,
      urls: {
        narwal: `/${REPO}/-/commits/main?next=${deep.join(',')}`,
        cgit: `/big.git/log/?h=main&ofs=${DEEP}`,
        gitweb: `/gitweb/?p=big.git;a=shortlog;h=refs/heads/main;pg=${Math.floor(DEEP / 100)}`,
      },
    },
    {
      page: 'commit, large diff',
      urls: {
        narwal: `/${REPO}/-/commit/${built.largeDiff}`,
        cgit: `/big.git/commit/?id=${built.largeDiff}`,
        gitweb: `/gitweb/?p=big.git;a=commitdiff;h=${built.largeDiff}`,
      },
    },
  ];
  const narwalDirs = [join(dataDir, 'cache'), join(dataDir, 'store')];
  const samples: Sample[] = [];
  const base = (server: ServerName) =>
    server === 'narwal'
      ? (narwal as BenchServer).url
      : server === 'narwal, no page cache'
        ? (uncached as BenchServer).url
        : (cgit as { url: string }).url;
  for (const p of pages) {
    // A second node on the same data directory that keeps no rendered page: what rendering costs.
    {
      const sample: Sample = { page: p.page, server: 'narwal, no page cache', cold: [], warm: [], bytes: 0 };
      await get(`${base(sample.server)}${p.urls.narwal}`);
      for (let i = 0; i < WARM; i++) {
        const { ms, bytes } = await get(`${base(sample.server)}${p.urls.narwal}`);
        sample.warm.push(ms);
        sample.bytes = bytes;
      }
      samples.push(sample);
      console.log(
        `${p.page.padEnd(28)} narwal, no page cache   warm ${median(sample.warm).toFixed(1).padStart(8)} ms`,
      );
    }
    for (const server of ['narwal', 'cgit', 'gitweb'] as const) {
      const sample: Sample = { page: p.page, server, cold: [], warm: [], bytes: 0 };
      for (let i = 0; i < COLD; i++) {
        if (server === 'narwal') {
          await narwal?.stop();
          await dropFromPageCache(narwalDirs);
          narwal = await startNarwal({ dataDir, token: TOKEN });
        } else {
          await cgit?.stop();
          await dropFromPageCache([reposDir]);
          cgit = await startCgit(work, reposDir);
        }
        await new Promise((r) => setTimeout(r, 300));
        sample.cold.push((await get(`${base(server)}${p.urls[server]}`)).ms);
      }
      await get(`${base(server)}${p.urls[server]}`);
      for (let i = 0; i < WARM; i++) {
        const { ms, bytes } = await get(`${base(server)}${p.urls[server]}`);
        sample.warm.push(ms);
        sample.bytes = bytes;
      }
      samples.push(sample);
      console.log(
        `${p.page.padEnd(28)} ${server.padEnd(7)} cold ${median(sample.cold).toFixed(1).padStart(8)} ms  warm ${median(sample.warm).toFixed(1).padStart(8)} ms  (${sample.bytes} bytes)`,
      );
    }
  }
  const finishedAt = new Date();
  const find = (page: string, server: ServerName) =>
    samples.find((s) => s.page === page && s.server === server) as Sample;
  const rows = pages.map((p) => {
    const n = find(p.page, 'narwal');
    const c = find(p.page, 'cgit');
    const g = find(p.page, 'gitweb');
    const u = find(p.page, 'narwal, no page cache');
    const warmRatio = median(n.warm) / median(c.warm);
    const coldRatio = median(n.cold) / median(c.cold);
    return {
      page: p.page,
      narwal: { warm: median(n.warm), warmP90: percentile(n.warm, 90), cold: median(n.cold), bytes: n.bytes },
      cgit: { warm: median(c.warm), warmP90: percentile(c.warm, 90), cold: median(c.cold), bytes: c.bytes },
      gitweb: { warm: median(g.warm), warmP90: percentile(g.warm, 90), cold: median(g.cold), bytes: g.bytes },
      uncached: { warm: median(u.warm), warmP90: percentile(u.warm, 90) },
      uncachedRatio: median(u.warm) / median(c.warm),
      warmRatio,
      coldRatio,
      pass: warmRatio <= 1 && coldRatio <= 2,
    };
  });
  const narwalBytes = await filesUnder(join(dataDir, 'cache'));
  const result = {
    benchmark: 'browse',
    startedAt: startedAt.toISOString(),
    finishedAt: finishedAt.toISOString(),
    machine: {
      nproc: cpus().length,
      cpu: cpus()[0]?.model ?? '',
      loadAverageBefore: loadBefore,
      loadAverageAfter: loadavg(),
    },
    git: (await git(['--version'])).trim(),
    narwalCommit: (await git(['-C', PROJECT_ROOT, 'rev-parse', '--short', 'HEAD']).catch(() => '?')).trim(),
    repository: {
      commits: built.commits,
      largeDiff: built.largeDiff,
      largeDiffFiles: LARGE_DIFF_FILES + 1,
      largeFileLines: LARGE_FILE_LINES,
      narwalCacheBytes: narwalBytes,
    },
    settings: { warm: WARM, cold: COLD, deep: DEEP },
    samples,
    rows,
  };
  const ms = (v: number) => (v < 10 ? v.toFixed(1) : v.toFixed(0));
  const table = [
    '| page | narwal warm | cgit warm | gitweb warm | narwal / cgit warm | narwal warm, no page cache (/ cgit) | narwal cold | cgit cold | gitweb cold | narwal / cgit cold | target (warm <= 1x, cold <= 2x) |',
    '| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |',
    ...rows.map(
      (r) =>
        `| ${r.page} | ${ms(r.narwal.warm)} ms | ${ms(r.cgit.warm)} ms | ${ms(r.gitweb.warm)} ms | ${r.warmRatio.toFixed(2)}x | ${ms(r.uncached.warm)} ms (${r.uncachedRatio.toFixed(2)}x) | ${ms(r.narwal.cold)} ms | ${ms(r.cgit.cold)} ms | ${ms(r.gitweb.cold)} ms | ${r.coldRatio.toFixed(2)}x | ${r.pass ? 'pass' : '**miss**'} |`,
    ),
  ].join('\n');
  const report = [
    `# Repository pages: narwal against cgit and gitweb (${startedAt.toISOString().slice(0, 10)})`,
    '',
    `${built.commits.toLocaleString('en-US')} commits (browseRepo.ts), narwal ${result.narwalCommit}, ${result.git}, ${cpus().length} shared CPUs, load average ${loadBefore.map((l) => l.toFixed(2)).join(' ')} before and ${result.machine.loadAverageAfter.map((l) => l.toFixed(2)).join(' ')} after.`,
    `Warm: median of ${WARM} requests after one unmeasured; cold: median of ${COLD} first requests, each after the server was started again and the repository's files were dropped from the page cache. narwal serves a page asked again from the rendered pages it keeps; "no page cache" is a second node on the same data directory with NARWAL_BROWSE_CACHE_BYTES=0, which renders every request (parsed commits and trees still kept). cgit runs without its own cache (its default). The large-diff commit changes ${LARGE_DIFF_FILES + 1} files: cgit and gitweb show every patch, narwal the patches within its limits (the rest listed with their line counts).`,
    '',
    aligned(table),
    '',
  ].join('\n');
  console.log(`\n${report}`);
  const out = join(PROJECT_ROOT, 'bench', 'results');
  await mkdir(out, { recursive: true });
  const stamp = startedAt
    .toISOString()
    .replace(/[:.]/g, '-')
    .replace(/-\d{3}Z$/, 'Z');
  await writeFile(join(out, `${stamp}-browse.json`), `${JSON.stringify(result, null, 2)}\n`);
  await writeFile(join(out, `${stamp}-browse.md`), report);
  console.log(`written bench/results/${stamp}-browse.md`);
} finally {
  await narwal?.stop();
  await uncached?.stop();
  await cgit?.stop();
  await rm(work, { recursive: true, force: true });
}
