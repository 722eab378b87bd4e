/**
 * firstOutput with real processes: the first chunk replayed, no output at all, and an output that
 * ended or failed before (or while) it looked, which must give the exit rather than a wait that
 * never ends.
 */
import { describe, expect, it } from 'vitest';
import { childExit, firstOutput } from '../../../lib/git/childOutput.js';
import { directSpawner, type GitChild } from '../../../lib/git/ProcessSpawner.js';
import { readAll } from '../../../lib/util/readAll.js';

function sh(script: string): Promise<GitChild> {
  return directSpawner.spawn('sh', ['-c', script], {
    env: { PATH: process.env.PATH },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
}

describe('firstOutput', () => {
  it('waits for the first bytes and gives a body that replays them', async () => {
    const child = await sh('printf hello; sleep 0.1; printf " world"');
    const first = await firstOutput(child, childExit(child));
    expect(first.started).toBe(true);
    if (first.started) expect((await readAll(first.body)).toString()).toBe('hello world');
  });

  it('gives the exit of a process that wrote nothing on stdout', async () => {
    const child = await sh('echo refused >&2; exit 3');
    const first = await firstOutput(child, childExit(child));
    expect(first).toEqual({ started: false, exit: { code: 3, signal: null, stderr: 'refused\n' } });
  });

  it('gives the exit when the output ended before it looked (its end was emitted to nobody)', async () => {
    const child = await sh('echo refused >&2; exit 3');
    const exit = childExit(child);
    child.stdout?.resume();
    await exit;
    expect(child.stdout?.readableEnded).toBe(true);
    expect(await firstOutput(child, exit)).toEqual({
      started: false,
      exit: { code: 3, signal: null, stderr: 'refused\n' },
    });
  });

  it('gives the exit when the output closes without an end while it waits', async () => {
    const child = await sh('sleep 0.2; exit 4');
    const exit = childExit(child);
    const first = firstOutput(child, exit);
    child.stdout?.destroy();
    expect(await first).toEqual({ started: false, exit: { code: 4, signal: null, stderr: '' } });
  });
});
