/**
 * Ref patterns for rewinds: `refs/heads/main` (exactly that ref), `refs/heads/release/*` (`*` is
 * any run of characters except `/`), `refs/tags/**` (`**` also crosses `/`), or a prefix ending
 * in `/` (`refs/heads/` is every branch).
 */
import { globRegExp } from '../util/globPattern.js';

export class InvalidRefPattern extends Error {
  readonly code = 'InvalidRefPattern';
}

export function refMatcher(pattern: string): (ref: string) => boolean {
  if (pattern === '' || pattern.length > 256 || /[\s\\?[\]^~:]/.test(pattern) || pattern.includes('***'))
    throw new InvalidRefPattern(
      `invalid ref pattern "${pattern}" (use names, "*", "**" or a prefix ending in "/")`,
    );
  if (pattern.endsWith('/') && !pattern.includes('*')) return (ref) => ref.startsWith(pattern);
  if (!pattern.includes('*')) return (ref) => ref === pattern;
  const regex = globRegExp(pattern);
  return (ref) => regex.test(ref);
}
