/**
 * The reason every ref of a push is refused with (`ng <ref> <reason>`, which git prints) when the
 * push could not be published: nothing was recorded, or its outcome is unknown, and the words say
 * which and what to do next (docs/architecture.md invariant 4).
 */
import { BuildSuperseded } from '../cache/RepoCache.js';
import { isStoreError } from '../store/errors.js';
import { Busy } from '../util/Busy.js';
import { isCode } from '../util/isCode.js';
import { OutcomeUnknown, RepoNotFound } from '../wal/errors.js';
import { GenerationLost, RepoBeingCreated } from './errors.js';

export function pushRefusalFor(
  error: unknown,
  /** Whether the repository the push was received into is gone (its directory no longer exists). */
  context: { readonly repositoryGone?: boolean } = {},
): string {
  if (error instanceof RepoNotFound) return 'narwal: the repository was deleted during the push';
  if (error instanceof OutcomeUnknown) {
    return 'narwal: storage failed while recording the push and its outcome is unknown; fetch to see whether it landed';
  }
  if (isStoreError(error))
    return 'narwal: storage busy or unavailable, the push was not recorded; retry the push';
  // A refusal meant for the client (the repository is still being created, its cache busy) keeps its words.
  if (error instanceof RepoBeingCreated || error instanceof Busy) return error.message;
  if (cacheChangedUnder(error) || context.repositoryGone === true)
    return "narwal: the server's cache of the repository changed during the push, which was not recorded; retry the push";
  return 'narwal: internal error, the push was not recorded; retry the push';
}

/**
 * A file of the push's own repository or of the shared cache went missing (or a directory was
 * written while it was removed) before the push was published: the cache was deleted or evicted
 * under the push (by hand, or a node's disk lost), or a build gave up for that reason. Not a
 * program that could not be started (`spawn git ENOENT`). A git that ran in the repository after
 * it went fails in its own words ("not a git repository"): the caller knows the repository is
 * gone then (pushRefusalFor's context).
 */
export function cacheChangedUnder(error: unknown): boolean {
  if (error instanceof BuildSuperseded || error instanceof GenerationLost) return true;
  const failed = error as NodeJS.ErrnoException | null | undefined;
  if (failed?.path === undefined || failed.syscall?.startsWith('spawn')) return false;
  return isCode(error, 'ENOENT') || isCode(error, 'ENOTEMPTY');
}

/**
 * Whether a push that failed before git read it is refused in git's protocol, every command with
 * pushRefusalFor's reason (protocol/pushRefusalReport.ts): failures whose words tell the user what
 * to do. Anything else (a bad request, a body that never came whole) keeps its HTTP answer.
 */
export function refusedInProtocol(error: unknown): boolean {
  return (
    error instanceof RepoNotFound ||
    error instanceof RepoBeingCreated ||
    error instanceof Busy ||
    isStoreError(error) ||
    cacheChangedUnder(error)
  );
}
