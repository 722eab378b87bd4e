/**
 * Ref name rules: a port of git 2.39's `check_refname_format(name, 0)` (refs.c,
 * check_refname_component and its refname_disposition table). `git help check-ref-format`:
 *
 *   1. They can include slash / for hierarchical (directory) grouping, but no slash-separated
 *      component can begin with a dot . or end with the sequence .lock.
 *   2. They must contain at least one /. [...]
 *   3. They cannot have two consecutive dots .. anywhere.
 *   4. They cannot have ASCII control characters (i.e. bytes whose values are lower than \040,
 *      or \177 DEL), space, tilde ~, caret ^, or colon : anywhere.
 *   5. They cannot have question-mark ?, asterisk *, or open bracket [ anywhere. [...]
 *   6. They cannot begin or end with a slash / or contain multiple consecutive slashes [...]
 *   7. They cannot end with a dot ..
 *   8. They cannot contain a sequence @{.
 *   9. They cannot be the single character @.
 *  10. They cannot contain a \.
 *
 * Bytes >= 0x80 are allowed, so any non-ASCII character is too. A NUL, which git never sees
 * (C strings end there), counts as a control character.
 */
import { printable } from './ProtocolError.js';

/** git's receive-pack refuses longer names only through the filesystem; narwal sets a bound. */
export const MAX_PUSH_REF_BYTES = 1024;

const FORBIDDEN = new Set(['~', '^', ':', '?', '*', '[', '\\']);

function characterProblem(char: string): string | undefined {
  const code = char.charCodeAt(0);
  if (code < 0x20 || code === 0x7f) return `contains the control character '${printable(char)}'`;
  if (char === ' ') return 'contains a space';
  if (FORBIDDEN.has(char)) return `contains '${char}'`;
  return undefined;
}

function componentProblem(component: string): string | undefined {
  let last = '';
  for (const char of component) {
    const problem = characterProblem(char);
    if (problem !== undefined) return problem;
    if (char === '.' && last === '.') return "contains '..'";
    if (char === '{' && last === '@') return "contains '@{'";
    last = char;
  }
  if (component.startsWith('.')) return "has a component starting with '.'";
  if (component.endsWith('.lock')) return "has a component ending with '.lock'";
  return undefined;
}

/** check_refname_format(name, REFNAME_ALLOW_ONELEVEL); the one-level rule is left to callers. */
function formatProblem(name: string): string | undefined {
  if (name === '') return 'is empty';
  if (name === '@') return "is the single character '@'";
  const components = name.split('/');
  for (const [index, component] of components.entries()) {
    if (component === '') {
      if (index === 0) return "starts with '/'";
      return index === components.length - 1 ? "ends with '/'" : "contains '//'";
    }
    const problem = componentProblem(component);
    if (problem !== undefined) return problem;
  }
  if (name.endsWith('.')) return "ends with '.'";
  return undefined;
}

/** Why `name` is not a valid ref name for `git check-ref-format` (no flags), or undefined. */
export function refNameProblem(name: string): string | undefined {
  const problem = formatProblem(name);
  if (problem !== undefined) return problem;
  return name.includes('/') ? undefined : "has no '/' (a ref needs at least two components)";
}

/**
 * Why receive-pack would refuse to update `name` from a push, or undefined. git 2.39's
 * receive-pack (builtin/receive-pack.c, update()) answers "funny refname" unless the name starts
 * with "refs/" and `check_refname_format(name + 5, 0)` passes, so "refs/foo" is refused too
 * (verified with git 2.39.5 for both creation and deletion). With receive.procReceiveRefs every
 * command bypasses update(), so narwal has to apply this check itself.
 */
export function pushRefNameProblem(name: string): string | undefined {
  if (Buffer.byteLength(name) > MAX_PUSH_REF_BYTES) return `is longer than ${MAX_PUSH_REF_BYTES} bytes`;
  if (!name.startsWith('refs/')) return "does not start with 'refs/'";
  const below = name.slice('refs/'.length);
  if (below === '') return "ends with '/'";
  const problem = formatProblem(below);
  if (problem !== undefined) return problem;
  return below.includes('/') ? undefined : "needs a category below refs/ (as in 'refs/heads/main')";
}

const NON_BMP_OR_PRIVATE = /[\ud800-\uffff]/;

/**
 * Git's order of ref names (packed-refs, ref listings): byte order of the UTF-8 encodings. UTF-16
 * order agrees with it below U+D800.
 */
export function compareNames(a: string, b: string): number {
  if (NON_BMP_OR_PRIVATE.test(a) || NON_BMP_OR_PRIVATE.test(b)) {
    return Buffer.compare(Buffer.from(a), Buffer.from(b));
  }
  return a < b ? -1 : a > b ? 1 : 0;
}
