/**
 * Python git clients for the client matrix - dulwich and libgit2 through pygit2 - run as small
 * scripts under test/clients/ with Debian's /usr/bin/python3 (the packages are Debian's; another
 * Python first on PATH would not see them). systemPackages.ts installs the packages when missing.
 */
import { execFile } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { ensureInstalled, PYTHON_CLIENTS } from './systemPackages.js';

export const PYTHON = '/usr/bin/python3';
export type PythonClient = 'dulwich' | 'pygit2';
const SCRIPTS = resolve(import.meta.dirname, '../clients');

/** Installs the client's Debian package when Python cannot import it (systemPackages.ts). */
export function ensurePythonClient(client: PythonClient): Promise<void> {
  return ensureInstalled(PYTHON_CLIENTS[client]);
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
