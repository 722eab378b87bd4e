/**
 * A rewind restores the refs of an earlier entry by publishing a new entry: the plan is the set of
 * ref updates from the current state to that state (all refs, or those a pattern matches), each
 * with the current value as its expected old value, so the publish is the same CAS as a push's.
 * Nothing is ever deleted from the log or the store by a rewind.
 */

import { compareNames } from '../protocol/refName.js';
import { type RefValue, ZERO_OID } from '../protocol/refValue.js';
import type { PushCommand } from '../wal/Publisher.js';
import { checkSeq, refsAt } from '../wal/stateAt.js';
import type { RepoIndex } from '../wal/types.js';
import type { Wal } from '../wal/Wal.js';
import { refMatcher } from './refPattern.js';

export interface RewindPlan {
  readonly repo: string;
  /** The index seq the plan was made against: the rewind lands as entry at + 1 or later. */
  readonly at: number;
  readonly to: number;
  readonly refs?: string;
  readonly commands: readonly PushCommand[];
}

export async function planRewind(
  wal: Wal,
  index: RepoIndex,
  to: number,
  pattern?: string,
): Promise<RewindPlan> {
  checkSeq(index, to);
  const matches = pattern === undefined ? () => true : refMatcher(pattern);
  const [current, target] = await Promise.all([wal.allRefs(index), refsAt(wal, index, to)]);
  const commands: PushCommand[] = [];
  const names = [...new Set([...current.keys(), ...target.keys()])].filter(matches).sort(compareNames);
  for (const ref of names) {
    const now = current.get(ref);
    const then: RefValue | undefined = target.get(ref);
    if (now?.oid === then?.oid) continue;
    commands.push({
      ref,
      oldOid: now?.oid ?? ZERO_OID,
      newOid: then?.oid ?? ZERO_OID,
      ...(then?.peeled ? { peeled: then.peeled } : {}),
    });
  }
  return {
    repo: index.repo,
    at: index.seq,
    to,
    ...(pattern !== undefined ? { refs: pattern } : {}),
    commands,
  };
}
