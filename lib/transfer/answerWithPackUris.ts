/**
 * A full clone answered mostly by the object store (protocol v2 `packfile-uris`,
 * lib/protocol/packfileUris.ts): the answer names packs the log already stores, which the client
 * downloads itself (a presigned URL on S3, narwal's own signed URL on the embedded store), and
 * carries inline only the objects the clone needs that those packs lack (the plan, uriPlan.ts).
 * A pack named by the log is never deleted (docs/architecture.md invariant 2), so a URI sent stays
 * good until it expires. With no such pack, the caller answers as it always has.
 *
 * The plan and the inline pack are made once per generation and request and kept; the next
 * identical clone reads two small files and sends a few hundred bytes, however large the
 * repository.
 */
import { constants } from 'node:fs';
import { type FileHandle, open } from 'node:fs/promises';
import type { Readable } from 'node:stream';
import type { CacheTarget, Generation } from '../cache/RepoCache.js';
import { acceptsUri, type PackfileUri, packfileUrisSection } from '../protocol/packfileUris.js';
import type { RepeatableFetch } from '../protocol/repeatableFetch.js';
import { PACK_HEADER } from '../protocol/shallowInfo.js';
import { clonePackBody } from './clonePack.js';
import { inlinePackPath, noteAsked, type PlanDeps, planFor, planKey, tagsToFollow } from './uriPlan.js';

export interface PackUriDeps extends PlanDeps {
  readonly cache: { leaseComplete(target: CacheTarget): Promise<Generation> };
}

/** Where a client fetches a stored pack of the state `seq` of `repo` itself. */
export type PackLink = (pack: string, seq: number) => Promise<string>;

/**
 * The answer to `fetch` (a full clone whose client accepts packfile URIs) with stored packs as
 * URIs, or null when no stored pack qualifies or the client accepts none of their URIs.
 */
export async function answerWithPackUris(
  deps: PackUriDeps,
  target: CacheTarget,
  fetch: RepeatableFetch,
  link: PackLink,
  owner: string,
): Promise<Readable | null> {
  // The URI packs use offsets for their deltas, as every pack git writes to disk does.
  if (fetch.version !== 'v2' || !fetch.full || !fetch.ofsDelta || fetch.uriProtocols.length === 0)
    return null;
  const generation = await deps.cache.leaseComplete(target);
  let handed = false;
  try {
    // A clone of some refs that follows tags (`git clone --single-branch`) gets the annotated
    // tags of what it fetches, as from upload-pack; its plan is kept apart from the one of its
    // wants alone. Every ref wanted (a whole clone) leaves no tag to follow.
    const followTags = fetch.includeTag ? tagsToFollow(await target.refs(), fetch.wants) : new Map();
    const request = {
      key: planKey(fetch.wants, followTags.size > 0),
      wants: fetch.wants,
      ofsDelta: fetch.ofsDelta,
      followTags,
    };
    const plan = await planFor(deps, generation, target, request, owner);
    if (plan.packs.length === 0) return null;
    await noteAsked(generation.dir);
    const uris: PackfileUri[] = [];
    for (const pack of plan.packs) {
      const uri = await link(pack.name, target.seq);
      if (!acceptsUri(fetch.uriProtocols, uri)) return null;
      uris.push({ hash: pack.hash, uri });
    }
    const inline = await openInline(generation.dir, request.key);
    if (inline === null) return null;
    const body = clonePackBody(
      { preamble: PACK_HEADER.v2, sidebandData: fetch.sidebandData },
      inline,
      () => void generation.release(),
      packfileUrisSection(uris),
    );
    handed = true;
    return body;
  } finally {
    if (!handed) await generation.release();
  }
}

async function openInline(dir: string, key: string): Promise<FileHandle | null> {
  return open(inlinePackPath(dir, key), constants.O_RDONLY).catch(() => null);
}
