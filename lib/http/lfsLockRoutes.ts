/** The Git LFS file locking API (filled in with the locks). */
import type { Principal } from '../auth/Principal.js';
import { notFound } from './HttpError.js';
import type { CoreRequest, CoreResponse } from './types.js';

// biome-ignore lint/suspicious/noEmptyInterface: filled in with the locks
export interface LfsLockRouteDeps {}

export async function lfsLockRoute(
  _deps: LfsLockRouteDeps,
  _request: CoreRequest,
  _repo: string,
  _rest: string,
  _principal: Principal | null,
): Promise<CoreResponse> {
  throw notFound('narwal: no locks yet');
}
