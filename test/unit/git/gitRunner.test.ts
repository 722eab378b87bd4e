/**
 * GitRunner's scripts of git commands: `"$0"` is git with the runner's environment, the arguments
 * arrive whole, a repository of another owner is trusted as spawn's git trusts it, and a script
 * holds one budget slot until it exits.
 */
import { chown, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { childExit } from '../../../lib/git/childOutput.js';
import { GitBudget } from '../../../lib/git/GitBudget.js';
import { GitFailed, GitRunner } from '../../../lib/git/GitRunner.js';

let root: string;

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'narwal-gitrunner-'));
});

afterAll(async () => {
  if (root) await rm(root, { recursive: true, force: true });
});

async function output(runner: GitRunner, script: string, args: string[], cwd?: string): Promise<string> {
  const child = await runner.spawnScript(script, args, cwd ? { cwd } : {});
  const chunks: Buffer[] = [];
  child.stdout?.on('data', (chunk: Buffer) => chunks.push(chunk));
  child.stdin?.end();
  const exit = await childExit(child);
  expect(exit).toMatchObject({ code: 0 });
  return Buffer.concat(chunks).toString();
}

describe('GitRunner.spawnScript', () => {
  it('runs git as "$0" with the arguments whole, in the runner’s environment', async () => {
    const runner = new GitRunner({ budget: new GitBudget(2, 0), home: root });
    const out = await output(runner, '"$0" --version; printf "%s|" "$@"; printf "%s" "$HOME"', [
      'a b',
      '',
      "c'd",
    ]);
    expect(out).toMatch(/^git version \d+\.\d+/);
    expect(out.split('\n')[1]).toBe(`a b||c'd|${root}`);
  });

  it('trusts a repository another user owns, as spawn’s git does', async () => {
    const repo = join(root, 'theirs.git');
    const runner = new GitRunner({ budget: new GitBudget(2, 0), home: root });
    await runner.check(['init', '-q', '--bare', repo]);
    await chown(repo, 65534, 65534);
    expect((await output(runner, '"$0" rev-parse --git-dir', [], repo)).trim()).toBe('.');
    // Without the runner's trust, git refuses the same repository.
    const refused = await runner.spawnScript('GIT_CONFIG_COUNT=0 "$0" rev-parse --git-dir', [], {
      cwd: repo,
    });
    refused.stdin?.end();
    const exit = await childExit(refused);
    expect(exit.code).not.toBe(0);
    expect(exit.stderr).toMatch(/dubious ownership/);
  });

  it('checks a script as check checks git: its output, its input, and GitFailed when it fails', async () => {
    const runner = new GitRunner({ budget: new GitBudget(2, 0), home: root });
    const out = await runner.checkScript('"$0" hash-object --stdin', [], { input: 'narwal\n' });
    expect(out.toString().trim()).toBe(
      (await runner.check(['hash-object', '--stdin'], { input: 'narwal\n' })).toString().trim(),
    );
    const failing = runner.checkScript('"$0" rev-parse --verify "$1"', ['no-such-ref'], { cwd: root });
    await expect(failing).rejects.toBeInstanceOf(GitFailed);
    await expect(failing).rejects.toThrow(/failed \(128\)/);
  });

  it('holds one budget slot until the script exits', async () => {
    const runner = new GitRunner({ budget: new GitBudget(1, 10_000), home: root });
    const order: string[] = [];
    const script = await runner.spawnScript('sleep 0.3; "$0" --version >/dev/null', []);
    script.stdin?.end();
    script.once('close', () => order.push('script exited'));
    const next = runner.spawn(['--version']).then((child) => {
      order.push('next git started');
      return childExit(child);
    });
    await next;
    expect(order).toEqual(['script exited', 'next git started']);
  });
});
