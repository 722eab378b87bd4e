/**
 * The v2 `bundle-uri` command (lib/protocol/bundleUri.ts): a list of one bundle when one stored
 * pack the log names holds every object the state's refs reach and nothing else (the same rule
 * and the same kept choice as packfile URIs, answerWithPackUris.ts); the bundle is that pack
 * behind a header naming the state's refs, which are then complete in it. Otherwise the list is
 * empty, and the client fetches as it would have. The client's fetch after the bundle has the
 * bundle's refs as haves, so narwal (git) sends only what the bundle lacks.
 */
import type { CacheTarget, Generation } from '../cache/RepoCache.js';
import { bundleList } from '../protocol/bundleUri.js';
import type { PackLink, PackUriDeps } from './answerWithPackUris.js';
import { noteAsked, planFor, planKey } from './uriPlan.js';

export interface BundleUriDeps extends PackUriDeps {
  readonly cache: PackUriDeps['cache'] & { isComplete(target: CacheTarget): Promise<boolean> };
}

export async function answerBundleUri(
  deps: BundleUriDeps,
  target: CacheTarget,
  link: PackLink,
  owner: string,
): Promise<Buffer> {
  // A cold cache is not warmed for a list the client can do without.
  if (!(await deps.cache.isComplete(target))) return bundleList([]);
  const generation: Generation = await deps.cache.leaseComplete(target);
  try {
    const refs = await target.refs();
    const wants = [...new Set([...refs.values()].map((v) => v.oid))].sort();
    if (wants.length === 0) return bundleList([]);
    const plan = await planFor(
      deps,
      generation,
      target,
      { key: planKey(wants), wants, ofsDelta: true },
      owner,
    );
    await noteAsked(generation.dir);
    const [pack] = plan.packs;
    if (pack === undefined || plan.packs.length !== 1 || plan.inline !== 0) return bundleList([]);
    return bundleList([{ id: `state${target.seq}`, uri: await link(pack.name, target.seq) }]);
  } finally {
    await generation.release();
  }
}
