/** Runs the real git CLI as a client, isolated from the machine's configuration. */
import { execFile, execFileSync } from 'node:child_process';
import { mkdir, mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface GitOutput {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

export async function makeHome(): Promise<string> {
  const home = await mkdtemp(join(tmpdir(), 'narwal-client-'));
  await writeFile(
    join(home, '.gitconfig'),
    '[user]\n\tname = Test User\n\temail = test@example.com\n[init]\n\tdefaultBranch = main\n[advice]\n\tdetachedHead = false\n',
  );
  return home;
}

export function git(
  args: readonly string[],
  options: { cwd?: string; home: string; env?: Record<string, string> },
): Promise<GitOutput> {
  return new Promise((resolve) => {
    execFile(
      'git',
      [...args],
      {
        cwd: options.cwd,
        maxBuffer: 64 * 1024 * 1024,
        env: {
          PATH: process.env.PATH ?? '/usr/bin:/bin',
          HOME: options.home,
          GIT_CONFIG_NOSYSTEM: '1',
          GIT_TERMINAL_PROMPT: '0',
          LANG: 'C',
          ...options.env,
        },
      },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
        resolve({ code, stdout: stdout.toString(), stderr: stderr.toString() });
      },
    );
  });
}

/** Like git(), but throws with git's stderr when it fails. */
export async function gitOk(
  args: readonly string[],
  options: { cwd?: string; home: string; env?: Record<string, string> },
): Promise<string> {
  const out = await git(args, options);
  if (out.code !== 0) throw new Error(`git ${args.join(' ')} failed (${out.code}):\n${out.stderr}`);
  return out.stdout;
}

/** A fresh working repository with `commits` commits on main. */
export async function workRepo(home: string, commits = 1, label = 'w'): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), `narwal-work-${label}-`));
  await gitOk(['init', '-q', '-b', 'main', dir], { home });
  for (let i = 0; i < commits; i++)
    await commitFile(dir, home, `file-${i}.txt`, `content ${i} ${Math.random()}\n`);
  return dir;
}

export async function commitFile(
  dir: string,
  home: string,
  name: string,
  content: string,
  message = `add ${name}`,
): Promise<string> {
  const path = join(dir, name);
  await mkdir(join(path, '..'), { recursive: true });
  await writeFile(path, content);
  await gitOk(['add', name], { cwd: dir, home });
  await gitOk(['commit', '-q', '-m', message], { cwd: dir, home });
  return (await gitOk(['rev-parse', 'HEAD'], { cwd: dir, home })).trim();
}

/** gitSync's environment: none of the machine's configuration, and a fixed author and committer. */
const SYNC_ENV = {
  ...process.env,
  GIT_CONFIG_NOSYSTEM: '1',
  GIT_CONFIG_GLOBAL: '/dev/null',
  GIT_AUTHOR_NAME: 'a',
  GIT_AUTHOR_EMAIL: 'a@example.com',
  GIT_COMMITTER_NAME: 'a',
  GIT_COMMITTER_EMAIL: 'a@example.com',
};

/** Runs git to its end and answers its output, for a test's setup; throws when git fails. */
export function gitSync(cwd: string, args: readonly string[], input?: string | Buffer): Buffer {
  return execFileSync('git', args, { cwd, env: SYNC_ENV, input, maxBuffer: 1 << 28 });
}
