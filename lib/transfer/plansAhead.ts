/**
 * Packfile-URI plans made before anyone asks (uriPlan.ts): when a new state of a repository is
 * prepared after a push (the prewarm), the plans of the full clones clients make most are made
 * too, so the first clone of the state is answered from kept files like every later one, instead
 * of waiting for git to choose the packs and write the inline pack (two git processes, about
 * 50 ms of the function on the express fixture).
 *
 * Only for a repository whose clones ask for URIs: one of its last few generations was answered
 * from a plan. The clones are the two whose wants git's own clone sends: every ref (`git clone
 * --bare`, `--mirror`, and the bundle list) and the branches and tags (`git clone`). A clone that
 * asks for other refs (`--single-branch`) still makes its plan when it comes.
 */
import { readdir } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { generationSeq } from '../cache/layout.js';
import type { CacheTarget, Generation } from '../cache/RepoCache.js';
import { type Logger, serializeError } from '../log.js';
import type { RefValue } from '../protocol/refValue.js';
import { type PlanDeps, planFor, planKey, wasAsked } from './uriPlan.js';

export interface PlansAheadDeps extends PlanDeps {
  readonly cache: { leaseComplete(target: CacheTarget): Promise<Generation> };
  readonly logger: Logger;
}

/** How many of the generations before a state's are looked at for a client's plan. */
const LOOK_BACK = 4;
/** Whom the git processes are counted against (GitSpawnOptions.owner). */
const OWNER = 'plans-ahead';

/** Makes the plans of `target`'s usual clones when its repository's clones ask for URIs; never rejects. */
export async function makePlansAhead(deps: PlansAheadDeps, target: CacheTarget): Promise<void> {
  try {
    const generation = await deps.cache.leaseComplete(target);
    try {
      if (!(await askedBefore(generation.dir, target.seq))) return;
      const started = performance.now();
      const wanted = cloneWants(await target.refs());
      for (const wants of wanted)
        await planFor(deps, generation, target, { key: planKey(wants), wants, ofsDelta: true }, OWNER);
      deps.logger.info('packfile-uri plans made ahead', {
        repo: target.repo,
        generation: target.name,
        plans: wanted.length,
        ms: Math.round(performance.now() - started),
      });
    } finally {
      await generation.release();
    }
  } catch (error) {
    deps.logger.warn('packfile-uri plans not made ahead', {
      repo: target.repo,
      error: serializeError(error),
    });
  }
}

/** Whether a client was answered from a plan in one of the few generations before `seq`'s, beside `dir`. */
async function askedBefore(dir: string, seq: number): Promise<boolean> {
  const gens = dirname(dir);
  const before = (await readdir(gens))
    .map((name) => ({ name, seq: generationSeq(name) }))
    .filter((g): g is { name: string; seq: number } => g.seq !== undefined && g.seq < seq)
    .sort((a, b) => b.seq - a.seq);
  for (const { name } of before.slice(0, LOOK_BACK)) if (await wasAsked(join(gens, name))) return true;
  return false;
}

/** The wants of `git clone --bare` (every ref) and of `git clone` (branches and tags), each once. */
export function cloneWants(refs: ReadonlyMap<string, RefValue>): string[][] {
  const every = [...refs.values()].map((value) => value.oid);
  const usual = [...refs]
    .filter(([name]) => name.startsWith('refs/heads/') || name.startsWith('refs/tags/'))
    .map(([, value]) => value.oid);
  const sets = [every, usual].filter((wants) => wants.length > 0);
  return [...new Map(sets.map((wants) => [planKey(wants), wants])).values()];
}
