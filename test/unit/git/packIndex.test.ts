import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  distinctObjectCount,
  heldByOthers,
  InvalidPackIndex,
  readPackIndex,
  readPackNames,
} from '../../../lib/git/packIndex.js';

/**
 * A version 2 index of `oids` (sorted), with `packHash` as the pack's checksum, and each object's
 * offset (0 when not given; past 2 GiB, through the table of 8-byte offsets).
 */
function index(oids: string[], packHash: string, offsets: number[] = []): Buffer {
  const large: number[] = [];
  const small = Buffer.alloc(oids.length * 4);
  oids.forEach((_, i) => {
    const offset = offsets[i] ?? 0;
    if (offset < 0x80000000) small.writeUInt32BE(offset, i * 4);
    else small.writeUInt32BE((0x80000000 | (large.push(offset) - 1)) >>> 0, i * 4);
  });
  const largeTable = Buffer.alloc(large.length * 8);
  large.forEach((offset, i) => {
    largeTable.writeBigUInt64BE(BigInt(offset), i * 8);
  });
  const fanout = Buffer.alloc(1024);
  for (let b = 0; b < 256; b++)
    fanout.writeUInt32BE(oids.filter((o) => Number.parseInt(o.slice(0, 2), 16) <= b).length, b * 4);
  const body = Buffer.concat([
    Buffer.from([0xff, 0x74, 0x4f, 0x63, 0, 0, 0, 2]),
    fanout,
    ...oids.map((o) => Buffer.from(o, 'hex')),
    Buffer.alloc(oids.length * 4),
    small,
    largeTable,
    Buffer.from(packHash, 'hex'),
  ]);
  return Buffer.concat([body, createHash('sha1').update(body).digest()]);
}

describe('readPackIndex', () => {
  it('reads the objects and the pack checksum', () => {
    const oids = ['0a'.repeat(20), '7f'.repeat(20), 'ff'.repeat(20)];
    expect(readPackIndex(index(oids, 'c'.repeat(40)))).toEqual({
      oids,
      offsets: [0, 0, 0],
      packHash: 'c'.repeat(40),
    });
    expect(readPackIndex(index([], 'd'.repeat(40)))).toEqual({
      oids: [],
      offsets: [],
      packHash: 'd'.repeat(40),
    });
  });

  it('reads offsets, those past 2 GiB from the table of 8-byte offsets', () => {
    const oids = ['0a'.repeat(20), '7f'.repeat(20), 'ff'.repeat(20)];
    const offsets = [12, 3_000_000_000, 2 ** 40];
    expect(readPackIndex(index(oids, 'c'.repeat(40), offsets)).offsets).toEqual(offsets);
  });

  it('refuses what is not a version 2 index, or is cut short', () => {
    expect(() => readPackIndex(Buffer.from('PACK'))).toThrow(InvalidPackIndex);
    const whole = index(['0a'.repeat(20)], 'c'.repeat(40));
    expect(() => readPackIndex(whole.subarray(0, whole.length - 30))).toThrow(InvalidPackIndex);
  });
});

describe('readPackNames', () => {
  it('finds each sorted name where it lies in the index, and the pack checksum', () => {
    const oids = ['0a'.repeat(20), '7f'.repeat(20), 'ff'.repeat(20)];
    const names = readPackNames(index(oids, 'c'.repeat(40)));
    expect(names.count).toBe(3);
    expect(names.packHash).toBe('c'.repeat(40));
    expect(oids.map((_, i) => names.bytes.toString('hex', names.nameAt(i), names.nameAt(i) + 20))).toEqual(
      oids,
    );
  });

  it('refuses what readPackIndex refuses', () => {
    expect(() => readPackNames(Buffer.from('PACK'))).toThrow(InvalidPackIndex);
    const whole = index(['0a'.repeat(20)], 'c'.repeat(40));
    expect(() => readPackNames(whole.subarray(0, whole.length - 30))).toThrow(InvalidPackIndex);
  });
});

describe('distinctObjectCount', () => {
  const names = (oids: string[]) => readPackNames(index([...oids].sort(), 'c'.repeat(40)));
  const oid = (byte: string) => byte.repeat(20);

  it('counts an object held by several packs once', () => {
    const a = names([oid('01'), oid('0a'), oid('7f')]);
    const b = names([oid('0a'), oid('7f'), oid('80'), oid('ff')]);
    const c = names([oid('01'), oid('ff')]);
    expect(distinctObjectCount([a, b, c])).toBe(5);
    expect(distinctObjectCount([a, a])).toBe(3);
    expect(distinctObjectCount([b])).toBe(4);
  });

  it('tells names apart by their last byte, and counts nothing for no packs', () => {
    const near = (last: string) => `${'0a'.repeat(19)}${last}`;
    const a = names([near('01'), near('02')]);
    const b = names([near('02'), near('03')]);
    expect(distinctObjectCount([a, b])).toBe(3);
    expect(distinctObjectCount([])).toBe(0);
    expect(distinctObjectCount([names([]), a])).toBe(2);
  });
});

describe('heldByOthers', () => {
  const names = (oids: string[]) => readPackNames(index([...oids].sort(), 'c'.repeat(40)));
  const oid = (byte: string) => byte.repeat(20);

  it('tells whether other packs between them hold every object of a pack', () => {
    const small = names([oid('00'), oid('7f'), oid('ff')]);
    const low = names([oid('00'), oid('10'), oid('7f')]);
    const high = names([oid('80'), oid('ff')]);
    expect(heldByOthers(small, [low, high])).toBe(true);
    expect(heldByOthers(small, [low])).toBe(false);
    expect(heldByOthers(small, [high])).toBe(false);
    expect(heldByOthers(small, [])).toBe(false);
    expect(heldByOthers(names([]), [low])).toBe(true);
  });

  it('finds a name among many that start alike, not one a byte away', () => {
    const near = (last: number) => `0a${'00'.repeat(18)}${last.toString(16).padStart(2, '0')}`;
    const many = names(Array.from({ length: 200 }, (_, i) => near(i)));
    expect(heldByOthers(names([near(0), near(117), near(199)]), [many])).toBe(true);
    expect(heldByOthers(names([near(200)]), [many])).toBe(false);
    expect(heldByOthers(names([`0b${'00'.repeat(19)}`]), [many])).toBe(false);
  });
});
