/**
 * Ref rows and their sorted merges: pure code over the table format of types.ts. Rows are sorted
 * in byte order of the UTF-8 name, as git sorts packed-refs.
 */

import { compareNames } from '../protocol/refName.js';
import { type RefValue, ZERO_OID } from '../protocol/refValue.js';
import type { RefRow } from './types.js';

export function toRow(name: string, value: RefValue): RefRow {
  return value.peeled ? [name, value.oid, value.peeled] : [name, value.oid];
}

export function rowValue(row: RefRow): RefValue {
  return row[2] === undefined ? { oid: row[1] } : { oid: row[1], peeled: row[2] };
}

export const isTombstone = (row: RefRow) => row[1] === ZERO_OID;

export function sortRows(rows: RefRow[]): RefRow[] {
  return rows.sort((a, b) => compareNames(a[0], b[0]));
}

/** The row named `name` in sorted `rows`, by binary search. */
export function findRow(rows: readonly RefRow[], name: string): RefRow | undefined {
  let low = 0;
  let high = rows.length - 1;
  while (low <= high) {
    const mid = (low + high) >>> 1;
    const row = rows[mid] as RefRow;
    const order = compareNames(row[0], name);
    if (order === 0) return row;
    if (order < 0) low = mid + 1;
    else high = mid - 1;
  }
  return undefined;
}

/**
 * Merges two sorted row lists; `upper` wins for names in both. With `complete`, the result is a
 * bottom table: tombstones are dropped.
 */
export function mergeRows(lower: readonly RefRow[], upper: readonly RefRow[], complete: boolean): RefRow[] {
  const out: RefRow[] = [];
  let i = 0;
  let j = 0;
  const emit = (row: RefRow) => {
    if (!(complete && isTombstone(row))) out.push(row);
  };
  while (i < lower.length || j < upper.length) {
    const a = lower[i];
    const b = upper[j];
    if (b === undefined) {
      emit(a as RefRow);
      i++;
    } else if (a === undefined) {
      emit(b);
      j++;
    } else {
      const order = compareNames(a[0], b[0]);
      if (order < 0) {
        emit(a);
        i++;
      } else {
        emit(b);
        j++;
        if (order === 0) i++;
      }
    }
  }
  return out;
}

/** `rows` with `changes` applied (sorted, tombstones kept: the result overlays older tables). */
export function applyChanges(rows: readonly RefRow[], changes: ReadonlyMap<string, RefValue>): RefRow[] {
  const upper = sortRows([...changes].map(([name, value]) => toRow(name, value)));
  return mergeRows(rows, upper, false);
}

/** Every live ref of a complete, sorted row list. */
export function rowsToMap(rows: readonly RefRow[]): Map<string, RefValue> {
  const refs = new Map<string, RefValue>();
  for (const row of rows) if (!isTombstone(row)) refs.set(row[0], rowValue(row));
  return refs;
}

/** A ref map as a complete, sorted row list. */
export function mapToRows(refs: ReadonlyMap<string, RefValue>): RefRow[] {
  return sortRows([...refs].filter(([, v]) => v.oid !== ZERO_OID).map(([name, value]) => toRow(name, value)));
}
