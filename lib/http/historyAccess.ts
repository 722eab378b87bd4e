/** Loading a repository for the history routes, with the same read rule as git's. */
import { allows, authorize } from '../auth/authorize.js';
import type { Principal } from '../auth/Principal.js';
import type { History } from '../history/History.js';
import type { ObjectStore } from '../store/ObjectStore.js';
import { mapLimit } from '../util/mapLimit.js';
import { listRepos } from '../wal/listRepos.js';
import type { LoadedIndex } from '../wal/types.js';
import type { Wal } from '../wal/Wal.js';
import type { SiteAddress } from './baseUrl.js';
import type { BodyPace } from './requestBody.js';

export interface HistoryRouteDeps extends SiteAddress {
  readonly history: History;
  readonly wal: Wal;
  readonly store: ObjectStore;
  /** How a request body must keep arriving (else 408). */
  readonly bodyPace: BodyPace;
}

/** The current index of a repository the principal may read (a hidden one is "not found"). */
export async function readable(
  deps: HistoryRouteDeps,
  repo: string,
  principal: Principal | null,
): Promise<LoadedIndex> {
  const loaded = await deps.wal.readIndex(repo);
  authorize(principal, repo, 'read', { public: loaded?.index.public ?? false });
  return loaded ?? deps.history.load(repo);
}

/** The repositories the principal may read, with their current index. */
export async function readableRepos(
  deps: HistoryRouteDeps,
  principal: Principal | null,
): Promise<LoadedIndex[]> {
  const names = await listRepos(deps.store);
  const loaded = await mapLimit(names, 16, (name) => deps.wal.readIndex(name));
  return loaded.filter(
    (l): l is LoadedIndex =>
      l !== null && allows(principal, l.index.repo, 'read', { public: l.index.public }),
  );
}
