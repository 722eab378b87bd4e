/**
 * A real S3 endpoint for tests: a throwaway single-node Ceph cluster (one monitor, one in-memory
 * OSD, one RADOS Gateway) in a fresh temp directory. Ceph RGW is the local stand-in that honours
 * S3 conditional writes (see docs/platform.md, "Local stand-ins"); s3rver does not.
 *
 * Every run has its own cluster name, fsid, config file, ports and directory, so parallel test
 * files and concurrent checkouts never collide. Measured here (2 cores, Ceph 16.2.15): 1.7-2.5 s
 * from nothing to a usable S3 user once the Debian packages are installed (~7 s with three
 * clusters starting at once), and ~35 s to install the packages on a fresh machine
 * (systemPackages.ts installs them when missing).
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { closeSync, openSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { ensureInstalled, RGW } from './systemPackages.js';

const run = promisify(execFile);

export interface RgwEndpoint {
  readonly endpoint: string;
  readonly accessKeyId: string;
  readonly secretAccessKey: string;
  stop(): Promise<void>;
}

async function hasBinary(bin: string): Promise<boolean> {
  try {
    await run('sh', ['-c', `command -v ${bin}`]);
    return true;
  } catch {
    return false;
  }
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() =>
        typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port')),
      );
    });
  });
}

function cephConf(dir: string, fsid: string, monAddr: string): string {
  return `[global]
fsid = ${fsid}
mon host = ${monAddr}
public addr = 127.0.0.1
# msgr2 only: one mon port to pick, and the OSD binds 127.0.0.1 ports from 6800 up, skipping used ones.
ms bind msgr1 = false
ms bind ipv6 = false
auth cluster required = none
auth service required = none
auth client required = none
# radosgw defaults to ms_mon_client_mode = secure, which needs cephx; with auth none its monitor
# session fails with EACCES (-13) forever, so allow plain crc mode.
ms mon client mode = crc
# Keep every path inside this run's directory (defaults point at /var/lib/ceph and /var/run/ceph).
run dir = ${dir}
admin socket = ${dir}/$cluster-$name.asok
log file = ${dir}/$name.log
crash dir = ${dir}/crash
mon data = ${dir}/mon
osd data = ${dir}/osd
rgw data = ${dir}/rgw
# Only the mon's small rocksdb is on disk, so never stop it because the temp disk is nearly full.
mon data avail crit = 0
# The mon batches map changes for paxos_propose_interval (1 s). RGW creates its pools one osdmap
# epoch at a time at startup, which made it take ~8 s to answer; 10 ms brings that under 1 s.
paxos propose interval = 0.01
paxos min wait = 0.001
# One OSD: single-replica pools, few PGs, no autoscaler reshuffling them.
mon allow pool size one = true
mon warn on pool no redundancy = false
osd pool default size = 1
osd pool default min size = 1
osd pool default pg num = 8
osd pool default pgp num = 8
osd pool default pg autoscale mode = off
# Objects live in RAM and vanish with the process: nothing to clean up but the directory.
osd objectstore = memstore
# By default the OSD asks the mon to set its device class and to place it in the CRUSH map under
# its hostname while booting; we place it ourselves (ceph osd crush add) before it starts.
osd class update on start = false
osd crush update on start = false
`;
}

/** Starts a private Ceph RGW on 127.0.0.1 and creates an S3 user; `stop()` kills it and removes its files. */
export async function startRgw(): Promise<RgwEndpoint> {
  await ensureInstalled(RGW);
  const started = Date.now();
  const dir = await mkdtemp(join(tmpdir(), 'narwal-rgw-'));
  const cluster = `narwal${randomBytes(4).toString('hex')}`;
  const conf = join(dir, `${cluster}.conf`);
  const common = ['--cluster', cluster, '-c', conf];
  const daemons: ChildProcess[] = [];
  const exited = new Map<string, string>();
  // setpriv --pdeathsig: the kernel kills the daemons if this test process dies without stop().
  const pdeathsig = (await hasBinary('setpriv')) ? ['setpriv', '--pdeathsig', 'KILL', '--'] : [];

  const killAll = () => {
    for (const child of daemons) {
      if (child.pid !== undefined && child.exitCode === null && child.signalCode === null) {
        try {
          process.kill(child.pid, 'SIGKILL');
        } catch {
          // already gone
        }
      }
    }
  };
  process.once('exit', killAll);

  const stop = async () => {
    process.off('exit', killAll);
    const gone = daemons.map((child) =>
      child.exitCode !== null || child.signalCode !== null
        ? Promise.resolve()
        : new Promise<void>((resolve) => child.once('exit', () => resolve())),
    );
    // Everything is disposable (memstore, temp dir), so no graceful shutdown: a SIGTERMed OSD
    // waits 5 s for a mon that may already be gone.
    killAll();
    await Promise.race([Promise.all(gone), new Promise((resolve) => setTimeout(resolve, 5000))]);
    await rm(dir, { recursive: true, force: true });
  };

  const daemon = (name: string, args: string[]) => {
    const out = openSync(join(dir, `${name}.out`), 'a');
    const [command, ...rest] = [...pdeathsig, ...args];
    const child = spawn(command as string, rest, { stdio: ['ignore', out, out] });
    closeSync(out);
    child.once('exit', (code, signal) => exited.set(name, `exited with ${signal ?? code}`));
    daemons.push(child);
  };

  try {
    const [monPort, rgwPort] = [await freePort(), await freePort()];
    const monAddr = `[v2:127.0.0.1:${monPort}]`;
    const fsid = randomUUID();
    await Promise.all(['mon', 'osd', 'rgw', 'crash'].map((d) => mkdir(join(dir, d))));
    await writeFile(conf, cephConf(dir, fsid, monAddr));

    await run('monmaptool', ['--create', '--fsid', fsid, '--addv', 'a', monAddr, join(dir, 'monmap')]);
    await run('ceph-mon', [...common, '--mkfs', '-i', 'a', '--monmap', join(dir, 'monmap')]);
    daemon('mon', ['ceph-mon', ...common, '-f', '-i', 'a']);

    const ceph = (...args: string[]) => run('ceph', [...common, '--connect-timeout', '30', ...args]);
    const osdUuid = randomUUID();
    const osdId = (await ceph('osd', 'new', osdUuid)).stdout.trim();
    await ceph('osd', 'crush', 'add', `osd.${osdId}`, '1', 'root=default', 'host=localhost');
    await run('ceph-osd', [...common, '--mkfs', '-i', osdId, '--osd-uuid', osdUuid]);
    daemon('osd', ['ceph-osd', ...common, '-f', '-i', osdId]);

    const endpoint = `http://127.0.0.1:${rgwPort}`;
    daemon('rgw', [
      'radosgw',
      ...common,
      '-f',
      '-n',
      'client.rgw',
      '--rgw-frontends',
      `beast endpoint=127.0.0.1:${rgwPort}`,
    ]);
    await waitForHttp(endpoint, 60_000, () => [...exited].map(([name, how]) => `${name} ${how}`).join(', '));

    const accessKeyId = `NARWAL${randomBytes(7).toString('hex').toUpperCase()}`;
    const secretAccessKey = randomBytes(20).toString('hex');
    await run('radosgw-admin', [
      ...common,
      'user',
      'create',
      '--uid=narwal-test',
      '--display-name=narwal test',
      `--access-key=${accessKeyId}`,
      `--secret-key=${secretAccessKey}`,
    ]);
    console.log(`[rgw] ${cluster} ready at ${endpoint} in ${Date.now() - started} ms (${dir})`);
    return { endpoint, accessKeyId, secretAccessKey, stop };
  } catch (error) {
    const logs = await Promise.all(
      ['mon.out', 'osd.out', 'rgw.out', 'client.rgw.log'].map(async (f) =>
        readFile(join(dir, f), 'utf8').then(
          (text) => `--- ${f}\n${text.split('\n').slice(-15).join('\n')}`,
          () => '',
        ),
      ),
    );
    await stop();
    throw new Error(`[rgw] failed to start Ceph RGW: ${String(error)}\n${logs.filter(Boolean).join('\n')}`, {
      cause: error,
    });
  }
}

async function waitForHttp(url: string, timeoutMs: number, deaths: () => string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const dead = deaths();
    if (dead) throw new Error(`daemon died during startup: ${dead}`);
    try {
      // Any HTTP answer (an anonymous ListBuckets) means beast is serving and RGW has its pools.
      await (await fetch(url, { signal: AbortSignal.timeout(1000) })).arrayBuffer();
      return;
    } catch {
      if (Date.now() > deadline) throw new Error(`no answer from ${url} after ${timeoutMs} ms`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
}
