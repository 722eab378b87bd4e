/**
 * Which ref updates of a push are fast-forwards, asked of git in the push's private repository
 * (the received pack plus the cache's objects): `git merge-base --is-ancestor OLD NEW` exits 0
 * when OLD is an ancestor of NEW, 1 when it is not, and otherwise (an object missing, or not a
 * commit) it cannot say, which counts as "not a fast-forward". One batch per push, a few git
 * children at a time, inside the push's own budget slot.
 */
import { mapLimit } from '../util/mapLimit.js';
import type { GitRunner } from './GitRunner.js';

export interface OidPair {
  readonly oldOid: string;
  readonly newOid: string;
}

const ZERO = /^0+$/;
const CONCURRENCY = 4;

export const pairKey = (p: OidPair): string => `${p.oldOid} ${p.newOid}`;

/** Fast-forward verdicts for the updates of existing refs among `pairs` (creations and deletions have none). */
export async function fastForwards(
  git: GitRunner,
  dir: string,
  pairs: readonly OidPair[],
): Promise<Map<string, boolean>> {
  const unique = new Map<string, OidPair>();
  for (const p of pairs) {
    if (!ZERO.test(p.oldOid) && !ZERO.test(p.newOid) && p.oldOid !== p.newOid) unique.set(pairKey(p), p);
  }
  const verdicts = await mapLimit([...unique.values()], CONCURRENCY, async (p) => {
    const result = await git.run(['merge-base', '--is-ancestor', p.oldOid, p.newOid], {
      cwd: dir,
      withinSlot: true,
    });
    return [pairKey(p), result.code === 0] as const;
  });
  return new Map(verdicts);
}
