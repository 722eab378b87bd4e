import type { RefValue } from '../protocol/refValue.js';
/** What changed between two ref states: refs added, removed and moved, sorted by name. */

export interface RefChange {
  readonly ref: string;
  /** Absent when the ref was added. */
  readonly old?: string;
  /** Absent when the ref was removed. */
  readonly new?: string;
}

export interface StateDiff {
  readonly added: readonly RefChange[];
  readonly removed: readonly RefChange[];
  readonly moved: readonly RefChange[];
}

export function diffStates(a: ReadonlyMap<string, RefValue>, b: ReadonlyMap<string, RefValue>): StateDiff {
  const added: RefChange[] = [];
  const removed: RefChange[] = [];
  const moved: RefChange[] = [];
  for (const [ref, value] of a) {
    const next = b.get(ref);
    if (next === undefined) removed.push({ ref, old: value.oid });
    else if (next.oid !== value.oid) moved.push({ ref, old: value.oid, new: next.oid });
  }
  for (const [ref, value] of b) if (!a.has(ref)) added.push({ ref, new: value.oid });
  const byRef = (x: RefChange, y: RefChange) => (x.ref < y.ref ? -1 : x.ref > y.ref ? 1 : 0);
  return { added: added.sort(byRef), removed: removed.sort(byRef), moved: moved.sort(byRef) };
}
