/** What a token may do. Repository patterns use `*` for one path segment and `**` for any. */
export interface Principal {
  readonly name: string;
  readonly owner?: string;
  readonly admin: boolean;
  /** May create repositories (by pushing to one that does not exist) matching `write`. */
  readonly create: boolean;
  readonly read: readonly string[];
  readonly write: readonly string[];
}

export function matchesRepo(pattern: string, repo: string): boolean {
  const source = pattern
    .split('**')
    .map((part) =>
      part
        .split('*')
        .map((literal) => literal.replace(/[.+?^${}()|[\]\\]/g, '\\$&'))
        .join('[^/]*'),
    )
    .join('.*');
  return new RegExp(`^${source}$`).test(repo);
}

export function canRead(principal: Principal | null, repo: string, isPublic: boolean): boolean {
  if (isPublic) return true;
  if (principal === null) return false;
  return principal.admin || [...principal.read, ...principal.write].some((p) => matchesRepo(p, repo));
}

export function canWrite(principal: Principal | null, repo: string): boolean {
  if (principal === null) return false;
  return principal.admin || principal.write.some((p) => matchesRepo(p, repo));
}

export function canCreate(principal: Principal | null, repo: string): boolean {
  return principal !== null && (principal.admin || (principal.create && canWrite(principal, repo)));
}
