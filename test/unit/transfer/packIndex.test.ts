import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { InvalidPackIndex, readPackIndex } from '../../../lib/transfer/packIndex.js';

/** A version 2 index of `oids` (sorted), with `packHash` as the pack's checksum. */
function index(oids: string[], packHash: string): Buffer {
  const fanout = Buffer.alloc(1024);
  for (let b = 0; b < 256; b++)
    fanout.writeUInt32BE(oids.filter((o) => Number.parseInt(o.slice(0, 2), 16) <= b).length, b * 4);
  const body = Buffer.concat([
    Buffer.from([0xff, 0x74, 0x4f, 0x63, 0, 0, 0, 2]),
    fanout,
    ...oids.map((o) => Buffer.from(o, 'hex')),
    Buffer.alloc(oids.length * 8),
    Buffer.from(packHash, 'hex'),
  ]);
  return Buffer.concat([body, createHash('sha1').update(body).digest()]);
}

describe('readPackIndex', () => {
  it('reads the objects and the pack checksum', () => {
    const oids = ['0a'.repeat(20), '7f'.repeat(20), 'ff'.repeat(20)];
    expect(readPackIndex(index(oids, 'c'.repeat(40)))).toEqual({ oids, packHash: 'c'.repeat(40) });
    expect(readPackIndex(index([], 'd'.repeat(40)))).toEqual({ oids: [], packHash: 'd'.repeat(40) });
  });

  it('refuses what is not a version 2 index, or is cut short', () => {
    expect(() => readPackIndex(Buffer.from('PACK'))).toThrow(InvalidPackIndex);
    const whole = index(['0a'.repeat(20)], 'c'.repeat(40));
    expect(() => readPackIndex(whole.subarray(0, whole.length - 30))).toThrow(InvalidPackIndex);
  });
});
