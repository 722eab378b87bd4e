/**
 * pktChildBody with real processes: a shell that writes packets, then exits as git would after a
 * failure, is killed, or ends well.
 */
import type { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { type ChildExit, childExit, exitCause, pktChildBody } from '../../../lib/git/childOutput.js';
import { directSpawner } from '../../../lib/git/ProcessSpawner.js';
import { completePackets, encodePktLine, encodeSideband, FLUSH_PKT } from '../../../lib/protocol/pktLine.js';

const describeStop = (exit: ChildExit) => `narwal: stopped (${exitCause(exit)})`;

/** Runs `script` with `packets` on its stdin (printed by `cat`), and reads the whole body. */
async function bodyOf(script: string, input: Buffer): Promise<{ bytes: Buffer; error?: Error }> {
  const child = await directSpawner.spawn('sh', ['-c', script], {
    env: { PATH: process.env.PATH },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  const exit = childExit(child);
  child.stdin?.end(input);
  const body: Readable = pktChildBody(child, exit, describeStop);
  const chunks: Buffer[] = [];
  try {
    for await (const chunk of body) chunks.push(chunk as Buffer);
    return { bytes: Buffer.concat(chunks) };
  } catch (error) {
    return { bytes: Buffer.concat(chunks), error: error as Error };
  }
}

const pack = Buffer.concat([encodePktLine('packfile\n'), ...encodeSideband(1, Buffer.alloc(5000, 1))]);

describe('pktChildBody', () => {
  it('passes a whole answer through untouched, whatever the exit status after its flush', async () => {
    const whole = Buffer.concat([pack, FLUSH_PKT]);
    expect((await bodyOf('cat', whole)).bytes).toEqual(whole);
    expect((await bodyOf('cat; exit 1', whole)).bytes).toEqual(whole);
    // Exit status 0 with an answer not whole: git's own choice, left alone.
    expect((await bodyOf('cat', pack)).bytes).toEqual(pack);
  });

  it("ends an answer cut inside the pack with band 3 and git's last stderr line", async () => {
    const out = await bodyOf('cat; echo "fatal: the disk went away" >&2; exit 128', pack);
    expect(out.error).toBeUndefined();
    expect(out.bytes.subarray(0, pack.length)).toEqual(pack);
    const packets = completePackets(out.bytes);
    const last = packets?.at(-1);
    expect(last?.kind === 'data' && last.payload.toString()).toBe(
      '\x03narwal: stopped (fatal: the disk went away)\n',
    );
  });

  it('ends an answer cut between lines with an ERR packet naming the signal that stopped it', async () => {
    const acks = encodePktLine('acknowledgments\n');
    const out = await bodyOf('cat; kill -9 $$', acks);
    expect(out.bytes).toEqual(
      Buffer.concat([acks, encodePktLine('ERR narwal: stopped (killed by SIGKILL)\n')]),
    );
  });

  it('completes a pack packet cut short, then band 3', async () => {
    const cut = pack.subarray(0, pack.length - 100);
    const out = await bodyOf('cat; exit 1', cut);
    const packets = completePackets(out.bytes);
    expect(packets).not.toBeNull();
    const last = packets?.at(-1);
    expect(last?.kind === 'data' && last.payload.toString()).toBe('\x03narwal: stopped (exit status 1)\n');
  });

  it('fails the body, cutting the response off, when no packet can follow', async () => {
    const out = await bodyOf('cat; exit 1', Buffer.from('0032acknowl'));
    expect(out.error?.message).toBe('narwal: stopped (exit status 1)');
    expect(out.bytes.toString()).toBe('0032acknowl');
  });
});
