import { describe, expect, it } from 'vitest';
import { compareNames } from '../../../lib/protocol/refName.js';
import { applyChanges, findRow, mapToRows, mergeRows, rowsToMap } from '../../../lib/wal/refRows.js';
import type { RefRow } from '../../../lib/wal/types.js';
import { oid, ZERO_OID } from './walHelpers.js';

describe('ref rows', () => {
  it('orders names by UTF-8 bytes', () => {
    expect(compareNames('refs/heads/Z', 'refs/heads/a')).toBeLessThan(0);
    expect(compareNames('a-b', 'a/b')).toBeLessThan(0);
    expect(compareNames('\uFFFD', '\u{1F600}')).toBeLessThan(0);
    expect(compareNames('same', 'same')).toBe(0);
  });

  it('finds rows by binary search, and misses absent names', () => {
    const rows = mapToRows(
      new Map(Array.from({ length: 100 }, (_, i) => [`refs/tags/t${i}`, { oid: oid(i + 1) }])),
    );
    for (const [name, value] of rows) expect(findRow(rows, name)?.[1]).toBe(value);
    expect(findRow(rows, 'refs/tags/t100')).toBeUndefined();
    expect(findRow([], 'x')).toBeUndefined();
  });

  it('merges with the upper list winning, dropping tombstones only into a complete list', () => {
    const lower: RefRow[] = [
      ['a', oid(1)],
      ['b', oid(2)],
      ['c', oid(3), oid(4)],
    ];
    const upper: RefRow[] = [
      ['b', ZERO_OID],
      ['c', oid(5)],
      ['d', oid(6)],
    ];
    expect(mergeRows(lower, upper, false)).toEqual([
      ['a', oid(1)],
      ['b', ZERO_OID],
      ['c', oid(5)],
      ['d', oid(6)],
    ]);
    expect(mergeRows(lower, upper, true)).toEqual([
      ['a', oid(1)],
      ['c', oid(5)],
      ['d', oid(6)],
    ]);
    expect(rowsToMap(mergeRows(lower, upper, false))).toEqual(
      new Map([
        ['a', { oid: oid(1) }],
        ['c', { oid: oid(5) }],
        ['d', { oid: oid(6) }],
      ]),
    );
  });

  it('applies changes keeping peeled values and sort order', () => {
    const rows = applyChanges(
      [['refs/heads/main', oid(1)]],
      new Map([
        ['refs/tags/v1', { oid: oid(2), peeled: oid(1) }],
        ['refs/heads/a', { oid: oid(3) }],
      ]),
    );
    expect(rows).toEqual([
      ['refs/heads/a', oid(3)],
      ['refs/heads/main', oid(1)],
      ['refs/tags/v1', oid(2), oid(1)],
    ]);
  });
});
