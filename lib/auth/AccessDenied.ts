/**
 * A refused request, with how it must be answered: `Unauthenticated` (ask for credentials),
 * `Forbidden` (the principal may see the repository but not do this), `Hidden` (the principal may
 * not even know the repository exists: answer exactly as for a missing one).
 */
export type DenialReason = 'Unauthenticated' | 'Forbidden' | 'Hidden';

const VERB: Readonly<Record<string, string>> = {
  read: 'read',
  write: 'push to',
  create: 'create',
  admin: 'administer',
};

export class AccessDenied extends Error {
  readonly code = 'AccessDenied';
  constructor(
    readonly reason: DenialReason,
    readonly repo: string | null,
    readonly access: string,
    readonly principal: string | null,
  ) {
    super(message(reason, repo, access, principal));
  }
}

function message(
  reason: DenialReason,
  repo: string | null,
  access: string,
  principal: string | null,
): string {
  const target = repo ?? 'this host';
  if (reason === 'Hidden') return `repository ${repo} not found`;
  if (reason === 'Unauthenticated') {
    return access === 'read'
      ? `authentication required for ${target}`
      : `authentication required to ${VERB[access]} ${target}`;
  }
  if (repo === null) return `token ${principal} needs the ${access} scope on ** (global) for this`;
  return `token ${principal} may not ${VERB[access]} ${repo}`;
}
