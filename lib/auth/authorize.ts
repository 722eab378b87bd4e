/**
 * The one authorization rule. Every endpoint (git, and the monitor, JSON API and rewind routes)
 * asks `authorize` before it reads or changes anything, with the repository the request names
 * (or null for host-wide operations such as managing tokens) and the access it needs:
 * - `read`: clone, fetch, ls-remote, view; anyone may read a public repository.
 * - `write`: push.
 * - `create`: push to a repository that does not exist yet (`write` plus the token's create
 *   flag, or `admin` on the name).
 * - `admin`: repository settings on a repository; managing tokens on the host (null), which
 *   needs an admin grant on `**`.
 * A refusal says as little as it must: anonymous requests are asked to authenticate, and a
 * principal that may not read a private repository is told it does not exist.
 */
import { AccessDenied } from './AccessDenied.js';
import { holds, type Principal, type Scope } from './Principal.js';

export type Access = Scope | 'create';

export interface AccessContext {
  /** The repository is public (readable without a token). */
  readonly public?: boolean;
}

export function allows(
  principal: Principal | null,
  repo: string | null,
  access: Access,
  context: AccessContext = {},
): boolean {
  if (access === 'read' && repo !== null && context.public === true) return true;
  if (principal === null) return false;
  if (access === 'create') {
    return (
      repo !== null &&
      (holds(principal, 'admin', repo) || (principal.create && holds(principal, 'write', repo)))
    );
  }
  return holds(principal, access, repo);
}

/** Returns when the access is allowed; throws `AccessDenied` saying how to answer otherwise. */
export function authorize(
  principal: Principal | null,
  repo: string | null,
  access: Access,
  context: AccessContext = {},
): void {
  if (allows(principal, repo, access, context)) return;
  if (principal === null) throw new AccessDenied('Unauthenticated', repo, access, null);
  if (repo !== null && !allows(principal, repo, 'read', context))
    throw new AccessDenied('Hidden', repo, access, principal.name);
  throw new AccessDenied('Forbidden', repo, access, principal.name);
}
