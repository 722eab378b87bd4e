import { Duplex, PassThrough } from 'node:stream';
import { describe, expect, it, vi } from 'vitest';
import { ProtocolError } from '../../../lib/protocol/ProtocolError.js';
import {
  type ProcReceiveCommand,
  type ProcReceiveResult,
  serveProcReceive,
} from '../../../lib/protocol/procReceive.js';

const bytes = (text: string) => Buffer.from(text, 'latin1');
const ZERO = '0'.repeat(40);
const OLD = '8d3c1e8a2f1b0c9d7e6f5a4b3c2d1e0f9a8b7c6d';
const NEW = '17746a638b056989141afc462a0f52062cd2fcc3';

/** The hook's end of the relay, and receive-pack's two pipes behind it. */
function relay() {
  const toHook = new PassThrough();
  const fromHook = new PassThrough();
  const channel = Duplex.from({ readable: toHook, writable: fromHook });
  // Destroying the channel aborts both pipes; receive-pack would just see them close.
  const ignore = () => {};
  toHook.on('error', ignore);
  fromHook.on('error', ignore);
  const received: Buffer[] = [];
  fromHook.on('data', (chunk: Buffer) => received.push(chunk));
  const ended = new Promise<void>((resolve) => fromHook.on('end', resolve));
  const output = () => Buffer.concat(received).toString('latin1');
  const until = async (text: string) => {
    while (!output().includes(text)) await new Promise((resolve) => setTimeout(resolve, 1));
  };
  return { channel, toHook, output, until, ended };
}

const acceptAll = async (commands: ProcReceiveCommand[]): Promise<ProcReceiveResult[]> =>
  commands.map(({ ref }) => ({ ref, ok: true }));

describe('serveProcReceive', () => {
  it('negotiates version 1, reads the commands and reports ok/ng in order', async () => {
    const { channel, toHook, output, until, ended } = relay();
    const decide = vi.fn(
      async (): Promise<ProcReceiveResult[]> => [
        { ref: 'refs/heads/feature', ok: false, reason: 'fetch first' },
        { ref: 'refs/heads/main', ok: true },
      ],
    );
    const served = serveProcReceive(channel, decide);

    toHook.write(bytes('000eversion=1\n0000'));
    await until('0000');
    expect(output()).toBe('000eversion=1\n0000');

    toHook.write(bytes(`0065${ZERO} ${NEW} refs/heads/main0068${OLD} ${NEW} refs/heads/feature0000`));
    await served;
    await ended;
    expect(decide).toHaveBeenCalledWith(
      [
        { oldOid: ZERO, newOid: NEW, ref: 'refs/heads/main' },
        { oldOid: OLD, newOid: NEW, ref: 'refs/heads/feature' },
      ],
      [],
      [],
    );
    expect(output()).toBe(
      '000eversion=1\n0000' + '0017ok refs/heads/main\n0026ng refs/heads/feature fetch first\n0000',
    );
  });

  it('asks for push options when offered, reads them, and passes on the offered features', async () => {
    const { channel, toHook, output, ended } = relay();
    const decide = vi.fn(acceptAll);
    const served = serveProcReceive(channel, decide);
    toHook.write(
      bytes(
        '0022version=1\0atomic push-options\n0000' +
          `0065${ZERO} ${NEW} refs/heads/main0000` +
          '000bci.skip0010reviewer=a b0000',
      ),
    );
    await served;
    await ended;
    expect(decide).toHaveBeenCalledWith(
      [{ oldOid: ZERO, newOid: NEW, ref: 'refs/heads/main' }],
      ['ci.skip', 'reviewer=a b'],
      ['atomic', 'push-options'],
    );
    expect(output()).toBe('001bversion=1\0push-options\n0000' + '0017ok refs/heads/main\n0000');
  });

  it('does not expect push options when only atomic is offered', async () => {
    const { channel, toHook, output } = relay();
    const decide = vi.fn(acceptAll);
    const served = serveProcReceive(channel, decide);
    toHook.end(bytes(`0014version=1\0atomic0000${'0068'}${OLD} ${NEW} refs/heads/feature0000`));
    await served;
    expect(decide).toHaveBeenCalledWith(expect.any(Array), [], ['atomic']);
    expect(output()).toBe('000eversion=1\n0000' + '001aok refs/heads/feature\n0000');
  });

  it('copes with input split into single bytes and with LF-terminated lines', async () => {
    const { channel, toHook, output } = relay();
    const served = serveProcReceive(channel, acceptAll);
    const input = bytes(`000eversion=1\n0000${'0066'}${ZERO} ${NEW} refs/heads/main\n0000`);
    for (const byte of input) toHook.write(Buffer.of(byte));
    await served;
    expect(output()).toBe('000eversion=1\n0000' + '0017ok refs/heads/main\n0000');
  });

  it('accepts 64-hex object ids', async () => {
    const { channel, toHook } = relay();
    const decide = vi.fn(acceptAll);
    const served = serveProcReceive(channel, decide);
    const oid = 'ab'.repeat(32);
    toHook.write(bytes(`000eversion=1\n0000${'0095'}${'0'.repeat(64)} ${oid} refs/heads/main0000`));
    await served;
    expect(decide.mock.calls[0]?.[0]).toEqual([
      { oldOid: '0'.repeat(64), newOid: oid, ref: 'refs/heads/main' },
    ]);
  });

  it('writes reasons as one line and says "failed" for an empty one', async () => {
    const { channel, toHook, output } = relay();
    const served = serveProcReceive(channel, async () => [
      { ref: 'refs/heads/main', ok: false, reason: 'line one\nline\ttwo\r\n' },
      { ref: 'refs/heads/feature', ok: false, reason: '' },
    ]);
    toHook.write(bytes(`000eversion=1\n0000${'0065'}${ZERO} ${NEW} refs/heads/main`));
    toHook.write(bytes(`0068${OLD} ${NEW} refs/heads/feature0000`));
    await served;
    expect(output()).toBe(
      '000eversion=1\n0000' +
        '0029ng refs/heads/main line one line two\n' +
        '0021ng refs/heads/feature failed\n0000',
    );
  });

  it('cuts a long reason', async () => {
    const { channel, toHook, output } = relay();
    const served = serveProcReceive(channel, async () => [
      { ref: 'refs/heads/main', ok: false, reason: 'x'.repeat(5000) },
    ]);
    toHook.write(bytes(`000eversion=1\n0000${'0065'}${ZERO} ${NEW} refs/heads/main0000`));
    await served;
    expect(output()).toBe(`000eversion=1\n0000${'0418'}ng refs/heads/main ${'x'.repeat(1024)}\n0000`);
  });

  it('returns quietly when receive-pack never ran the hook (channel ends with no byte)', async () => {
    const { channel, toHook, ended } = relay();
    const decide = vi.fn(acceptAll);
    toHook.end();
    await serveProcReceive(channel, decide);
    await ended;
    expect(decide).not.toHaveBeenCalled();
  });

  it.each([
    ['an unsupported version', '000eversion=2\n0000', "proc-receive: unsupported 'version=2'"],
    ['no version at all', '0009hello0000', 'proc-receive: receive-pack sent no version'],
    [
      'a malformed command',
      `000eversion=1\n00000011not a command0000`,
      "expected '<old-oid> <new-oid> <ref>'",
    ],
    [
      'mixed oid lengths',
      `000eversion=1\n0000${'007a'}${ZERO} ${'1'.repeat(64)} refs/heads/x0000`,
      'expected',
    ],
    ['a delim-pkt', '000eversion=1\n0001', 'unexpected delim-pkt in the version negotiation'],
    ['a bad length', 'zzzz', "malformed pkt-line: length 'zzzz' is not hexadecimal"],
    ['input ending between sections', '000eversion=1\n0000', 'input ended while reading the commands'],
    ['input ending inside a packet', '000eversion=1\n00000065abc', 'input ended inside a pkt-line'],
  ])('fails on %s and destroys the channel', async (_what, input, message) => {
    const { channel, toHook } = relay();
    const decide = vi.fn(acceptAll);
    const served = serveProcReceive(channel, decide);
    toHook.end(bytes(input));
    const error = await served.then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(ProtocolError);
    expect((error as Error).message).toContain(message);
    expect(decide).not.toHaveBeenCalled();
    expect(channel.destroyed).toBe(true);
  });

  it('destroys the channel when decide fails, so receive-pack fails every ref', async () => {
    const { channel, toHook } = relay();
    const served = serveProcReceive(channel, async () => {
      throw new Error('store unavailable');
    });
    toHook.write(bytes(`000eversion=1\n0000${'0065'}${ZERO} ${NEW} refs/heads/main0000`));
    await expect(served).rejects.toThrow('store unavailable');
    expect(channel.destroyed).toBe(true);
  });

  it('refuses commands that name one ref twice before deciding anything', async () => {
    const { channel, toHook } = relay();
    const decide = vi.fn(acceptAll);
    const served = serveProcReceive(channel, decide);
    toHook.write(
      bytes(
        `000eversion=1\n0000${'0065'}${ZERO} ${NEW} refs/heads/main${'0065'}${NEW} ${OLD} refs/heads/main0000`,
      ),
    );
    await expect(served).rejects.toThrow(ProtocolError);
    await expect(served).rejects.toThrow('proc-receive: receive-pack sent refs/heads/main more than once');
    expect(decide).not.toHaveBeenCalled();
    expect(channel.destroyed).toBe(true);
  });

  it('refuses results that do not match the commands', async () => {
    const input = `000eversion=1\n0000${'0065'}${ZERO} ${NEW} refs/heads/main0000`;
    const missing = relay();
    missing.toHook.write(bytes(input));
    await expect(serveProcReceive(missing.channel, async () => [])).rejects.toThrow(
      'proc-receive: no result for refs/heads/main',
    );
    expect(missing.channel.destroyed).toBe(true);

    const extra = relay();
    extra.toHook.write(bytes(input));
    await expect(
      serveProcReceive(extra.channel, async () => [
        { ref: 'refs/heads/main', ok: true },
        { ref: 'refs/heads/other', ok: true },
      ]),
    ).rejects.toThrow('proc-receive: result for a ref that was not pushed: refs/heads/other');
  });
});
