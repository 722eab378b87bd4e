/**
 * Who a request speaks for, and what it was granted. A grant is a scope on a repository pattern:
 * `team/*` (one path segment), `**` (any repository: a global grant), or an exact name. Scopes
 * nest: `admin` includes `write`, which includes `read`.
 */
import { matchesGlob } from '../util/globPattern.js';
export type Scope = 'read' | 'write' | 'admin';

export const SCOPES: readonly Scope[] = ['read', 'write', 'admin'];

export interface Grant {
  readonly scope: Scope;
  readonly pattern: string;
}

export interface Principal {
  readonly name: string;
  readonly owner?: string;
  /** The public id of the token; absent for the configured admin token. */
  readonly tokenId?: string;
  readonly grants: readonly Grant[];
  /** May create repositories it can write by pushing to them. */
  readonly create: boolean;
}

/** The pattern that covers every repository; a grant on it is a grant on the host. */
export const GLOBAL = '**';

export class InvalidGrant extends Error {
  readonly code = 'InvalidGrant';
}

// Repository-name characters plus `*`; one or two segments, like the names they match.
const PATTERN = /^[A-Za-z0-9._*-]{1,100}(\/[A-Za-z0-9._*-]{1,100})?$/;

/** Checks a pattern typed by a person, so a typo is refused instead of silently matching nothing. */
export function parsePattern(raw: string): string {
  if (!PATTERN.test(raw)) {
    throw new InvalidGrant(
      `invalid repository pattern ${JSON.stringify(raw)}: use NAME, OWNER/NAME, OWNER/* or ** ` +
        '(letters, digits, ".", "_", "-", "*")',
    );
  }
  return raw;
}

export function parseScope(raw: string): Scope {
  const scope = SCOPES.find((s) => s === raw);
  if (scope === undefined)
    throw new InvalidGrant(`invalid scope ${JSON.stringify(raw)}: use read, write or admin`);
  return scope;
}

export function matchesRepo(pattern: string, repo: string): boolean {
  return matchesGlob(pattern, repo);
}

/** Whether one scope includes another (admin includes write includes read). */
export function includes(held: Scope, needed: Scope): boolean {
  return SCOPES.indexOf(held) >= SCOPES.indexOf(needed);
}

/** Whether the principal holds `scope` on `repo`, or on the whole host when `repo` is null. */
export function holds(principal: Principal, scope: Scope, repo: string | null): boolean {
  return principal.grants.some(
    (g) => includes(g.scope, scope) && (repo === null ? g.pattern === GLOBAL : matchesRepo(g.pattern, repo)),
  );
}
