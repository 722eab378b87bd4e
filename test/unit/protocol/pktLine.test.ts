import { describe, expect, it } from 'vitest';
import { ProtocolError } from '../../../lib/protocol/ProtocolError.js';
import {
  DELIM_PKT,
  encodePktLine,
  encodeSideband,
  FLUSH_PKT,
  type PktLine,
  PktLineReader,
  parsePktLines,
  RESPONSE_END_PKT,
} from '../../../lib/protocol/pktLine.js';

const bytes = (text: string) => Buffer.from(text, 'latin1');
const data = (text: string): PktLine => ({ kind: 'data', payload: bytes(text) });

describe('encodePktLine', () => {
  it('prefixes the total length in four lower-case hex digits', () => {
    expect(encodePktLine('a\n')).toEqual(bytes('0006a\n'));
    expect(encodePktLine('# service=git-receive-pack\n')).toEqual(bytes('001f# service=git-receive-pack\n'));
    expect(encodePktLine(Buffer.from([0, 1, 255]))).toEqual(bytes('0007\x00\x01\xff'));
    expect(encodePktLine('')).toEqual(bytes('0004'));
  });

  it('accepts 65516 payload bytes and refuses one more', () => {
    const max = encodePktLine(Buffer.alloc(65516, 0x61));
    expect(max.subarray(0, 4)).toEqual(bytes('fff0'));
    expect(max.length).toBe(65520);
    expect(() => encodePktLine(Buffer.alloc(65517))).toThrow(RangeError);
  });

  it('exports the special packets', () => {
    expect(FLUSH_PKT).toEqual(bytes('0000'));
    expect(DELIM_PKT).toEqual(bytes('0001'));
    expect(RESPONSE_END_PKT).toEqual(bytes('0002'));
  });
});

describe('encodeSideband', () => {
  it('puts the band byte first', () => {
    expect(encodeSideband(2, 'hi\n')).toEqual([bytes('0008\x02hi\n')]);
    expect(encodeSideband(1, Buffer.from('PACK'))).toEqual([bytes('0009\x01PACK')]);
    expect(encodeSideband(3, '')).toEqual([]);
  });

  it('splits at 65515 data bytes per packet', () => {
    const exact = encodeSideband(1, Buffer.alloc(65515, 0x78));
    expect(exact).toHaveLength(1);
    expect(exact[0]?.subarray(0, 5)).toEqual(bytes('fff0\x01'));

    const over = encodeSideband(1, Buffer.alloc(65517, 0x78));
    expect(over.map((p) => p.subarray(0, 5).toString('latin1'))).toEqual(['fff0\x01', '0007\x01']);
    expect(over[1]).toEqual(bytes('0007\x01xx'));
  });
});

describe('PktLineReader', () => {
  const stream = bytes('0006a\n0000000100020004000Ahello\n0009PACK\x00');
  const expected: PktLine[] = [
    data('a\n'),
    { kind: 'flush' },
    { kind: 'delim' },
    { kind: 'response-end' },
    data(''),
    data('hello\n'),
    data('PACK\x00'),
  ];

  function drain(reader: PktLineReader): PktLine[] {
    const out: PktLine[] = [];
    for (let pkt = reader.next(); pkt !== undefined; pkt = reader.next()) out.push(pkt);
    return out;
  }

  it('reads data, flush, delim, response-end and empty packets (upper-case hex too)', () => {
    expect(parsePktLines(stream)).toEqual(expected);
  });

  it('gives the same packets whatever the chunk boundaries', () => {
    for (let cut = 0; cut <= stream.length; cut++) {
      const reader = new PktLineReader();
      reader.push(stream.subarray(0, cut));
      const out = drain(reader);
      reader.push(stream.subarray(cut));
      out.push(...drain(reader));
      expect(out).toEqual(expected);
      expect(reader.buffered).toBe(0);
      expect(reader.consumed).toBe(stream.length);
    }
    const byteByByte = new PktLineReader();
    const out: PktLine[] = [];
    for (const byte of stream) {
      byteByByte.push(Buffer.of(byte));
      out.push(...drain(byteByByte));
    }
    expect(out).toEqual(expected);
  });

  it('waits for a whole packet and reports what it holds', () => {
    const reader = new PktLineReader();
    reader.push(bytes('00'));
    expect(reader.next()).toBeUndefined();
    reader.push(bytes('0ahel'));
    expect(reader.next()).toBeUndefined();
    expect(reader.buffered).toBe(7);
    reader.push(bytes('lo\n00'));
    expect(reader.next()).toEqual(data('hello\n'));
    expect(reader.buffered).toBe(2);
    expect(reader.consumed).toBe(10);
    expect(reader.next()).toBeUndefined();
  });

  it('returns a payload that sits in one chunk as a view, without copying', () => {
    const chunk = bytes('0009PACK\x000000');
    const reader = new PktLineReader();
    reader.push(chunk);
    const pkt = reader.next();
    expect(pkt?.kind === 'data' && pkt.payload.buffer).toBe(chunk.buffer);
  });

  it('hands back the unread rest', () => {
    const reader = new PktLineReader();
    reader.push(bytes('00'));
    reader.push(bytes('00PA'));
    reader.push(bytes('CK'));
    expect(reader.next()).toEqual({ kind: 'flush' });
    expect(reader.takeRest()).toEqual(bytes('PACK'));
    expect(reader.buffered).toBe(0);
    expect(reader.consumed).toBe(8);
  });

  it('keeps up with many tiny chunks', () => {
    const line = bytes('0032'.concat('x'.repeat(46)));
    const reader = new PktLineReader();
    let packets = 0;
    for (let i = 0; i < 2000; i++) {
      for (const byte of line) {
        reader.push(Buffer.of(byte));
        if (reader.next() !== undefined) packets++;
      }
    }
    expect(packets).toBe(2000);
    expect(reader.buffered).toBe(0);
  });

  it.each([
    ['zzzz', "malformed pkt-line: length 'zzzz' is not hexadecimal"],
    ['00 6', "malformed pkt-line: length '00 6' is not hexadecimal"],
    ['-001', "malformed pkt-line: length '-001' is not hexadecimal"],
    ['\x00\x00\x00\x06', "malformed pkt-line: length '\\x00\\x00\\x00\\x06' is not hexadecimal"],
    ['0003', "malformed pkt-line: length '0003' is not a valid packet"],
    ['fff1', 'malformed pkt-line: length 65521 exceeds the maximum of 65520'],
    ['ffff', 'malformed pkt-line: length 65535 exceeds the maximum of 65520'],
  ])('refuses the length %j', (header, message) => {
    const reader = new PktLineReader();
    reader.push(bytes(header));
    expect(() => reader.next()).toThrow(ProtocolError);
    expect(() => reader.next()).toThrow(message);
  });

  it('accepts the largest packet', () => {
    const packet = Buffer.concat([bytes('fff0'), Buffer.alloc(65516, 0x61)]);
    const [pkt] = parsePktLines(packet);
    expect(pkt?.kind === 'data' && pkt.payload.length).toBe(65516);
  });

  it('parsePktLines refuses a trailing partial packet', () => {
    expect(() => parsePktLines(bytes('00000006a'))).toThrow(
      'truncated pkt-line: 5 bytes left after the last whole packet',
    );
    expect(() => parsePktLines(bytes('000'))).toThrow(ProtocolError);
    expect(parsePktLines(Buffer.alloc(0))).toEqual([]);
  });
});
