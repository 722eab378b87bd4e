/** Runs the built `narwal` CLI against a data directory, as an operator would. */
import { execFile } from 'node:child_process';
import { resolve } from 'node:path';
import { ADMIN_TOKEN } from './narwalServer.js';

const CLI = resolve(import.meta.dirname, '../../dist/narwal.js');

export interface CliOutput {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

export function narwalCli(
  args: readonly string[],
  options: { dataDir: string; env?: Record<string, string> },
): Promise<CliOutput> {
  return new Promise((done) => {
    execFile(
      process.execPath,
      [CLI, ...args],
      {
        env: {
          PATH: process.env.PATH ?? '/usr/bin:/bin',
          NARWAL_DATA: options.dataDir,
          NARWAL_ADMIN_TOKEN: ADMIN_TOKEN,
          ...options.env,
        },
      },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
        done({ code, stdout: stdout.toString(), stderr: stderr.toString() });
      },
    );
  });
}
