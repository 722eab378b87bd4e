/**
 * The glob patterns of tokens (repository names), protection rules and rewinds (ref names):
 * `*` is any run of characters except `/`, `**` any run including `/`, everything else literal.
 * Compiled once per pattern: authorization and protection checks run on every request.
 */
const compiled = new Map<string, RegExp>();
const CACHE_LIMIT = 10_000;

export function globRegExp(pattern: string): RegExp {
  let regex = compiled.get(pattern);
  if (regex === undefined) {
    const source = pattern
      .split('**')
      .map((part) =>
        part
          .split('*')
          .map((literal) => literal.replace(/[.+?^${}()|[\]\\]/g, '\\$&'))
          .join('[^/]*'),
      )
      .join('.*');
    regex = new RegExp(`^${source}$`, 's');
    if (compiled.size >= CACHE_LIMIT) compiled.clear();
    compiled.set(pattern, regex);
  }
  return regex;
}

/** Whether `name` matches the glob `pattern`. */
export function matchesGlob(pattern: string, name: string): boolean {
  return pattern.includes('*') ? globRegExp(pattern).test(name) : pattern === name;
}
