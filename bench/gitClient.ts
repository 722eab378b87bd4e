/** The git client side of the benchmark: the real git CLI, isolated from the machine's configuration. */
import { spawn } from 'node:child_process';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface GitOutput {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
  readonly ms: number;
}

export interface GitClientOptions {
  readonly home: string;
  readonly cwd?: string;
  readonly signal?: AbortSignal;
}

/** A HOME with an empty configuration apart from what a clone needs to be quiet. */
export async function makeClientHome(parent: string = tmpdir()): Promise<string> {
  const home = await mkdtemp(join(parent, 'client-home-'));
  await writeFile(join(home, '.gitconfig'), '[init]\n\tdefaultBranch = main\n');
  return home;
}

export function git(args: readonly string[], options: GitClientOptions): Promise<GitOutput> {
  const started = performance.now();
  return new Promise((resolve) => {
    const child = spawn('git', [...args], {
      cwd: options.cwd,
      env: {
        PATH: process.env.PATH ?? '/usr/bin:/bin',
        HOME: options.home,
        GIT_CONFIG_NOSYSTEM: '1',
        GIT_TERMINAL_PROMPT: '0',
        LANG: 'C',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
      ...(options.signal ? { signal: options.signal } : {}),
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => {
      stdout += d.toString();
    });
    child.stderr.on('data', (d: Buffer) => {
      stderr = (stderr + d.toString()).slice(-16 * 1024);
    });
    child.once('error', (error) => {
      stderr += error.message;
    });
    child.once('close', (code) => resolve({ code, stdout, stderr, ms: performance.now() - started }));
  });
}

export async function gitOk(args: readonly string[], options: GitClientOptions): Promise<GitOutput> {
  const out = await git(args, options);
  if (out.code !== 0) throw new Error(`git ${args.join(' ')} failed (${out.code}):\n${out.stderr}`);
  return out;
}
