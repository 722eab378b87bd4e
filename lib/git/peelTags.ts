import type { ReceivedObjects } from './receivedObjects.js';

/** Tags of tags deeper than this are left unpeeled (git's own peel has no limit; nobody nests so). */
const MAX_DEPTH = 64;

/**
 * What each annotated tag among `oids` peels to (other objects are absent from the result): the
 * object its `object` header names, followed through tags of tags. The log records it so that a
 * generation's packed-refs can carry peeled values and git can advertise refs before any pack is
 * downloaded. A push's own objects are read from its packs; others are asked of git.
 */
export async function peelTags(
  objects: ReceivedObjects,
  oids: readonly string[],
): Promise<Map<string, string>> {
  const peeled = new Map<string, string>();
  /** Each tag still being peeled, by the object it has reached so far. */
  let reached = new Map<string, string>([...new Set(oids)].map((oid) => [oid, oid]));
  for (let depth = 0; depth < MAX_DEPTH && reached.size > 0; depth++) {
    const infos = await objects.infos([...reached.values()]);
    const tags = [...reached].filter(([, at]) => infos.get(at)?.type === 'tag');
    for (const [oid, at] of reached) if (infos.get(at)?.type !== 'tag' && at !== oid) peeled.set(oid, at);
    if (tags.length === 0) break;
    const bodies = await objects.contents(tags.map(([, at]) => at));
    const next = new Map<string, string>();
    for (const [oid, at] of tags) {
      const target = /^object ([0-9a-f]{40,64})\n/.exec(bodies.get(at)?.toString('latin1') ?? '')?.[1];
      if (target) next.set(oid, target);
    }
    reached = next;
  }
  return peeled;
}
