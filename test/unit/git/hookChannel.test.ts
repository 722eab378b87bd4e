/**
 * What the hook sends before the protocol starts, and what narwal answers (the pipes themselves
 * are taken over in test/integration/procReceive.test.ts, against a real receive-pack).
 */
import { Duplex } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { hookChannel } from '../../../lib/git/hookChannel.js';

/** A control channel whose far end sent `sent` (then ended, if asked); records what is written to it. */
function control(sent: string[], end: boolean): { channel: Duplex; written: () => string } {
  const out: Buffer[] = [];
  const channel = new Duplex({
    read() {},
    write(chunk: Buffer, _encoding, done) {
      out.push(chunk);
      done();
    },
  });
  setImmediate(() => {
    for (const s of sent) channel.push(s);
    if (end) channel.push(null);
  });
  return { channel, written: () => Buffer.concat(out).toString() };
}

describe('hookChannel', () => {
  it('asks for a relay where /proc cannot give it the pipes, and leaves what follows the pid line', async () => {
    const { channel, written } = control(['12', '34\nrest'], false);
    const got = await hookChannel(channel, { procRoot: '/nonexistent-proc' });
    expect(got).toBe(channel);
    expect(written()).toBe('relay\n');
    expect(channel.read()?.toString()).toBe('rest');
  });

  it('answers null when receive-pack never ran the hook', async () => {
    const { channel, written } = control([], true);
    expect(await hookChannel(channel)).toBeNull();
    expect(written()).toBe('');
  });

  it('refuses anything but a pid, and answers nothing', async () => {
    for (const sent of ['0000version=1\n', 'abc\n', '0\n', `${'9'.repeat(20)}`]) {
      const { channel, written } = control([sent], true);
      await expect(hookChannel(channel, { procRoot: '/nonexistent-proc' })).rejects.toThrow(/pid/);
      expect(written()).toBe('');
    }
  });
});
