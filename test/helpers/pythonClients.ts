/**
 * Python git clients for the client matrix - dulwich and libgit2 through pygit2 - run as small
 * scripts under test/clients/ with Debian's /usr/bin/python3 (the packages are Debian's; another
 * Python first on PATH would not see them). Installs the packages when missing, as rgw.ts does.
 */
import { execFile } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

export const PYTHON = '/usr/bin/python3';
export type PythonClient = 'dulwich' | 'pygit2';
/** The Debian 12 package of each client; .ci/run installs them too. */
export const PYTHON_CLIENT_PACKAGES: Readonly<Record<PythonClient, string>> = {
  dulwich: 'python3-dulwich',
  pygit2: 'python3-pygit2',
};
const SCRIPTS = resolve(import.meta.dirname, '../clients');

async function importable(client: PythonClient): Promise<boolean> {
  try {
    await run(PYTHON, ['-c', `import ${client}`]);
    return true;
  } catch {
    return false;
  }
}

/**
 * Installs the client's Debian package when Python cannot import it (as root; `apt-get update`
 * first). Parallel test workers serialise on the same flock as the other apt installs and
 * re-check under it, so only one of them runs apt-get.
 */
export async function ensurePythonClient(client: PythonClient): Promise<void> {
  if (await importable(client)) return;
  const pkg = PYTHON_CLIENT_PACKAGES[client];
  const command = `apt-get update && apt-get install -y --no-install-recommends ${pkg}`;
  if (process.getuid?.() !== 0) {
    throw new Error(`${PYTHON} cannot import ${client}; install it as root with: ${command}`);
  }
  console.log(`[${client}] not importable: running \`${command}\``);
  const install = `${PYTHON} -c 'import ${client}' 2>/dev/null || { apt-get update -q && apt-get install -y -q --no-install-recommends ${pkg}; }`;
  await run('flock', [join(tmpdir(), 'narwal-apt-install.lock'), 'sh', '-c', install], {
    env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
    maxBuffer: 64 * 1024 * 1024,
  });
  if (!(await importable(client)))
    throw new Error(`[${client}] apt-get finished but ${PYTHON} still cannot import it`);
}

export interface ClientResult {
  readonly code: number;
  /** The script's JSON answer: the command's result, or {error, message} when it failed. */
  readonly json: Record<string, unknown>;
  readonly stderr: string;
}

/** Runs one command of test/clients/<client>_client.py with the given credentials. */
export async function runPythonClient(
  client: PythonClient,
  args: readonly string[],
  auth: { user: string; password: string },
): Promise<ClientResult> {
  return new Promise((done) => {
    execFile(
      PYTHON,
      [join(SCRIPTS, `${client}_client.py`), ...args],
      {
        maxBuffer: 64 * 1024 * 1024,
        env: {
          PATH: '/usr/bin:/bin',
          HOME: tmpdir(),
          LANG: 'C.UTF-8',
          NARWAL_USER: auth.user,
          NARWAL_PASSWORD: auth.password,
        },
      },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
        let json: Record<string, unknown>;
        try {
          json = JSON.parse(stdout.toString()) as Record<string, unknown>;
        } catch {
          json = { error: 'NoJson', message: `${stdout}${stderr}` };
        }
        done({ code, json, stderr: stderr.toString() });
      },
    );
  });
}

/** Like runPythonClient, but throws with the client's error unless the command succeeded. */
export async function pythonClientOk(
  client: PythonClient,
  args: readonly string[],
  auth: { user: string; password: string },
): Promise<Record<string, unknown>> {
  const out = await runPythonClient(client, args, auth);
  if (out.code !== 0)
    throw new Error(`${client} ${args.join(' ')} failed: ${JSON.stringify(out.json)}\n${out.stderr}`);
  return out.json;
}
