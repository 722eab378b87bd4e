/**
 * The ref advertisements that open a transfer (`GET info/refs`, gitprotocol-http(5)): receive-pack's
 * written from the index alone, upload-pack's asked of git on a generation whose refs are written
 * (its objects may still be missing) and kept, since a state never changes (StateAnswers.ts).
 */
import type { CacheTarget, Generation } from '../cache/RepoCache.js';
import { childExit } from '../git/childOutput.js';
import { gitProtocolEnv, uploadPackConfig, wantsProtocolV1, wantsProtocolV2 } from '../git/uploadPack.js';
import type { Logger } from '../log.js';
import { receivePackAdvertisement } from '../protocol/receivePackAdvertisement.js';
import type { RefValue } from '../protocol/refValue.js';
import type { LoadedIndex, RepoIndex } from '../wal/types.js';
import { checkedRefs } from './checkedRefs.js';
import { StateAnswers } from './StateAnswers.js';
import { type StateTargets, targetFor } from './targetFor.js';
import { spawnReleasing, type UploadPackDeps } from './uploadPackChild.js';

export interface AdvertiseDeps extends UploadPackDeps {
  readonly cache: StateTargets & {
    leaseRefs(target: CacheTarget): Promise<Generation>;
    /** An empty repository, for advertising refs of a repository that does not exist yet. */
    emptyRepo(): Promise<string>;
  };
  readonly wal: { allRefs(index: RepoIndex): Promise<Map<string, RefValue>> };
  /** Answers upload-pack gave about immutable states, for the same questions again. */
  readonly refAnswers: StateAnswers;
  readonly logger: Logger;
  /** The `agent=` of advertisements narwal writes itself: the server's git, e.g. `git/2.39.5`. */
  readonly gitAgent: string;
}

/**
 * receive-pack's advertisement of `loaded` (null: a repository a push may create), written from the
 * index's refs: no generation, lease or git process before the push's POST.
 */
export async function advertiseReceivePack(
  deps: AdvertiseDeps,
  loaded: LoadedIndex | null,
  protocol: string | undefined,
): Promise<Buffer> {
  const refs = loaded ? await deps.wal.allRefs(loaded.index) : new Map<string, RefValue>();
  return receivePackAdvertisement(refs, { agent: deps.gitAgent, v1: wantsProtocolV1(protocol) });
}

export interface UploadPackAdvertisement {
  readonly repo: string;
  /**
   * The index read for this request, or null when only the v2 capabilities are asked for: they are
   * the same for every repository, and the refs come with the next request (ls-refs).
   */
  readonly loaded: LoadedIndex | null;
  /** The entry of a clone of the past (`REPO.git@SEQ`). */
  readonly at?: number | undefined;
  /** The client's `Git-Protocol` header. */
  readonly protocol: string | undefined;
  /** Whom the git slot is counted against (see GitSpawnOptions.owner). */
  readonly owner: string;
}

/**
 * upload-pack's advertisement: in protocol v2 the server's capabilities, in v0 and v1 the refs of
 * the state just read. Read whole (refs checked) before any byte goes out; small either way.
 */
export async function advertiseUploadPack(
  deps: AdvertiseDeps,
  request: UploadPackAdvertisement,
): Promise<Buffer> {
  const { protocol } = request;
  const v2 = wantsProtocolV2(protocol);
  // In v2 the answer is the capabilities, which no state changes: asked of git once, on the empty
  // repository, with no generation to lease (a past state is still looked for, to refuse one that
  // is not there).
  const target =
    request.loaded && (!v2 || request.at !== undefined)
      ? await targetFor(deps.cache, request.loaded, request.at)
      : null;
  const key = StateAnswers.key(v2 ? null : target, 'advertise', protocol);
  const known = deps.refAnswers.get(key);
  if (known) return known;
  // Advertising refs needs only the generation's refs, never its packs: a cold cache answers
  // after O(refs) work, and the download waits for the request that needs objects.
  const generation = target && !v2 ? await deps.cache.leaseRefs(target) : null;
  const dir = generation ? generation.dir : await deps.cache.emptyRepo();
  const answer = await checkedRefs(generation, 'upload-pack', async () => {
    const child = await spawnReleasing(
      deps.git,
      generation,
      [...uploadPackConfig(deps.packObjectsHook), 'upload-pack', '--stateless-rpc', '--advertise-refs', dir],
      { env: gitProtocolEnv(protocol), owner: request.owner },
    );
    child.stdin?.end();
    const exit = childExit(child);
    void exit.then((e) => {
      void generation?.release();
      if (e.code !== 0)
        deps.logger.warn('advertisement failed', {
          repo: request.repo,
          service: 'git-upload-pack',
          code: e.code,
          stderr: e.stderr,
        });
    });
    return { child, exit };
  });
  deps.refAnswers.set(key, answer);
  return answer;
}

/**
 * Asks git for the protocol v2 capability advertisement before any request does (at start, in a
 * Lambda function's init phase), so that the first `info/refs` of a node is answered from memory.
 */
export async function primeCapabilities(deps: AdvertiseDeps): Promise<void> {
  await advertiseUploadPack(deps, { repo: '', loaded: null, protocol: 'version=2', owner: 'narwal-start' });
}
