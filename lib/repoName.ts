/**
 * Repository names: `name` or `owner/name`, each segment letters, digits, `.`, `_`, `-`, starting
 * with a letter or digit. Names appear in URLs with or without a `.git` suffix; the canonical form
 * has none. Anything else (`..`, more segments, odd characters) is refused before it can reach a
 * store key or a path.
 */
const SEGMENT = /^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/;

export class InvalidRepoName extends Error {
  readonly code = 'InvalidRepoName';
}

export function parseRepoName(raw: string): string {
  const name = raw.endsWith('.git') ? raw.slice(0, -4) : raw;
  const segments = name.split('/');
  if (segments.length > 2) {
    throw new InvalidRepoName(`invalid repository name ${JSON.stringify(raw)}: use NAME or OWNER/NAME`);
  }
  for (const segment of segments) {
    if (
      !SEGMENT.test(segment) ||
      segment.includes('..') ||
      segment.endsWith('.git') ||
      segment.endsWith('.lock')
    ) {
      throw new InvalidRepoName(
        `invalid repository name ${JSON.stringify(raw)}: each part must start with a letter or digit and ` +
          'contain only letters, digits, ".", "_" and "-" (no "..")',
      );
    }
  }
  return name;
}
