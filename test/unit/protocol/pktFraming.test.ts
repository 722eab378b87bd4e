import { describe, expect, it } from 'vitest';
import { failureMessageIn, PktFraming } from '../../../lib/protocol/PktFraming.js';
import {
  completePackets,
  DELIM_PKT,
  encodePktLine,
  encodeSideband,
  FLUSH_PKT,
} from '../../../lib/protocol/pktLine.js';

const MESSAGE = 'narwal: git upload-pack stopped';

/** The framing after `bytes`, fed in one chunk or one byte at a time. */
function framed(bytes: Buffer, byteByByte = false): PktFraming {
  const framing = new PktFraming();
  if (!byteByByte) framing.observe(bytes);
  else for (let i = 0; i < bytes.length; i++) framing.observe(bytes.subarray(i, i + 1));
  return framing;
}

const v2Pack = Buffer.concat([
  encodePktLine('packfile\n'),
  ...encodeSideband(2, 'Counting objects\n'),
  ...encodeSideband(1, Buffer.alloc(3000, 7)),
]);
const v2Acks = Buffer.concat([encodePktLine('acknowledgments\n'), encodePktLine('ACK 1234\n')]);

describe('PktFraming', () => {
  for (const byteByByte of [false, true]) {
    const how = byteByByte ? 'a byte at a time' : 'in one chunk';
    it(`knows an answer ending on a flush is whole, and one ending elsewhere is not (${how})`, () => {
      expect(framed(Buffer.concat([v2Pack, FLUSH_PKT]), byteByByte).whole).toBe(true);
      expect(framed(Buffer.concat([v2Acks, FLUSH_PKT]), byteByByte).whole).toBe(true);
      expect(framed(v2Pack, byteByByte).whole).toBe(false);
      expect(framed(Buffer.concat([v2Acks, DELIM_PKT]), byteByByte).whole).toBe(false);
      expect(framed(Buffer.alloc(0), byteByByte).whole).toBe(false);
    });

    it(`ends an answer cut between negotiation lines with an ERR packet (${how})`, () => {
      const tail = framed(v2Acks, byteByByte).failure(MESSAGE);
      expect(tail).toEqual(encodePktLine(`ERR ${MESSAGE}\n`));
      // Nothing sent yet: the same.
      expect(framed(Buffer.alloc(0), byteByByte).failure(MESSAGE)).toEqual(encodePktLine(`ERR ${MESSAGE}\n`));
    });

    it(`ends an answer cut inside the pack with a band 3 packet (${how})`, () => {
      const tail = framed(v2Pack, byteByByte).failure(MESSAGE);
      expect(tail).toEqual(Buffer.concat(encodeSideband(3, `${MESSAGE}\n`)));
      // Right after v2's section header, before any sideband packet.
      const header = framed(encodePktLine('packfile\n'), byteByByte).failure(MESSAGE);
      expect(header).toEqual(Buffer.concat(encodeSideband(3, `${MESSAGE}\n`)));
      // v0: sideband packets after NAK, with no section header.
      const v0 = Buffer.concat([encodePktLine('NAK\n'), ...encodeSideband(1, 'PACK')]);
      expect(framed(v0, byteByByte).failure(MESSAGE)).toEqual(
        Buffer.concat(encodeSideband(3, `${MESSAGE}\n`)),
      );
    });

    it(`completes a pack packet cut short before its band 3 packet, so the client reads whole packets (${how})`, () => {
      const cut = v2Pack.subarray(0, v2Pack.length - 1000);
      const tail = framed(cut, byteByByte).failure(MESSAGE);
      expect(tail).not.toBeNull();
      const packets = completePackets(Buffer.concat([cut, tail as Buffer]));
      expect(packets).not.toBeNull();
      const last = packets?.at(-1);
      expect(last?.kind === 'data' && last.payload.toString()).toBe(`\x03${MESSAGE}\n`);
      expect(failureMessageIn(Buffer.concat([cut, tail as Buffer]))).toBe(MESSAGE);
    });

    it(`answers null when nothing can follow: a header or a line cut short (${how})`, () => {
      expect(framed(Buffer.concat([v2Acks, Buffer.from('00')]), byteByByte).failure(MESSAGE)).toBeNull();
      const line = encodePktLine('acknowledgments\n');
      expect(framed(line.subarray(0, 8), byteByByte).failure(MESSAGE)).toBeNull();
      // A progress packet cut short: zeros would print as progress.
      const progress = Buffer.concat([
        encodePktLine('packfile\n'),
        ...encodeSideband(2, 'Counting objects\n'),
      ]);
      expect(framed(progress.subarray(0, progress.length - 3), byteByByte).failure(MESSAGE)).toBeNull();
    });
  }

  it('gives up on bytes that are not pkt-lines', () => {
    const framing = framed(Buffer.from('PACK\0\0\0\x02'));
    expect(framing.whole).toBe(false);
    expect(framing.failure(MESSAGE)).toBeNull();
    expect(framed(Buffer.from('0003')).failure(MESSAGE)).toBeNull();
  });
});

describe('failureMessageIn', () => {
  it('reads the last ERR or band 3 message, and nothing from packets without one', () => {
    expect(failureMessageIn(Buffer.concat([v2Acks, encodePktLine('ERR no such thing\n')]))).toBe(
      'no such thing',
    );
    expect(failureMessageIn(Buffer.concat([v2Pack, ...encodeSideband(3, 'gone\n')]))).toBe('gone');
    expect(failureMessageIn(v2Pack)).toBeUndefined();
    expect(failureMessageIn(Buffer.from('00'))).toBeUndefined();
  });
});
