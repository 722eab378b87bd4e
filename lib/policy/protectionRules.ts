/**
 * Protected refs: per-repository rules kept in the repository's index (so the Publisher checks
 * every ref update against the rules of the very index it compare-and-swaps against).
 *
 * A rule names refs by a pattern: an exact ref name (`refs/heads/main`), or a glob where `*`
 * matches any characters except `/` (`refs/heads/release/*`) and `**` matches any characters
 * including `/` (`refs/tags/**`). A pattern starts with `refs/` and is otherwise a valid ref name
 * once its wildcards are read as letters. Every rule whose pattern matches a ref applies to it:
 * - `denyForce`: an update of an existing ref must be a fast-forward;
 * - `denyDelete`: the ref may not be deleted;
 * - `pushers`: only these tokens (by name or id) may create, update or delete the ref; with
 *   several matching rules a token must be named by each of them.
 */
import { refNameProblem } from '../protocol/refName.js';
import { matchesGlob } from '../util/globPattern.js';

export interface ProtectionRule {
  readonly pattern: string;
  readonly denyForce?: true;
  readonly denyDelete?: true;
  /** Token names or ids allowed to push to matching refs; absent means any token with write access. */
  readonly pushers?: readonly string[];
}

/** Bounds that keep the index (rewritten by every push) small. */
export const MAX_RULES = 64;
export const MAX_PATTERN_BYTES = 256;
export const MAX_PUSHERS = 16;
const PUSHER = /^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$/;

export class InvalidProtection extends Error {
  readonly code = 'InvalidProtection';
}

/** Checks a pattern typed by a person; returns it unchanged or throws InvalidProtection. */
export function parseRefPattern(raw: unknown): string {
  if (typeof raw !== 'string') throw new InvalidProtection('a rule needs a "pattern" string');
  if (Buffer.byteLength(raw) > MAX_PATTERN_BYTES)
    throw new InvalidProtection(`pattern is longer than ${MAX_PATTERN_BYTES} bytes`);
  if (!raw.startsWith('refs/'))
    throw new InvalidProtection(`invalid pattern ${JSON.stringify(raw)}: it must start with refs/`);
  if (/\*{3,}/.test(raw)) throw new InvalidProtection(`invalid pattern ${JSON.stringify(raw)}: "***"`);
  // Wildcards stand for name characters; whatever else the pattern holds must be a ref name's.
  const problem = refNameProblem(raw.replace(/\*/g, 'x'));
  if (problem !== undefined)
    throw new InvalidProtection(`invalid pattern ${JSON.stringify(raw)}: ${problem}`);
  return raw;
}

/** Validates one rule from untrusted JSON (the API, the CLI) into its canonical form. */
export function parseRule(raw: unknown): ProtectionRule {
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw))
    throw new InvalidProtection('a rule must be a JSON object');
  const input = raw as Record<string, unknown>;
  for (const key of Object.keys(input)) {
    if (!['pattern', 'denyForce', 'denyDelete', 'pushers'].includes(key))
      throw new InvalidProtection(`unknown rule field ${JSON.stringify(key)}`);
  }
  const pattern = parseRefPattern(input.pattern);
  for (const key of ['denyForce', 'denyDelete'] as const) {
    if (input[key] !== undefined && typeof input[key] !== 'boolean')
      throw new InvalidProtection(`"${key}" must be true or false`);
  }
  let pushers: string[] | undefined;
  if (input.pushers !== undefined) {
    if (!Array.isArray(input.pushers) || input.pushers.length === 0 || input.pushers.length > MAX_PUSHERS)
      throw new InvalidProtection(`"pushers" must be a list of 1 to ${MAX_PUSHERS} token names or ids`);
    pushers = input.pushers.map((p: unknown) => {
      if (typeof p !== 'string' || !PUSHER.test(p))
        throw new InvalidProtection(`invalid token name or id ${JSON.stringify(p)} in "pushers"`);
      return p;
    });
    pushers = [...new Set(pushers)];
  }
  const rule: ProtectionRule = {
    pattern,
    ...(input.denyForce === true ? { denyForce: true as const } : {}),
    ...(input.denyDelete === true ? { denyDelete: true as const } : {}),
    ...(pushers ? { pushers } : {}),
  };
  if (!rule.denyForce && !rule.denyDelete && !rule.pushers)
    throw new InvalidProtection(`rule for ${pattern} protects nothing: set denyForce, denyDelete or pushers`);
  return rule;
}

/** Validates a whole rule set: at most MAX_RULES, one rule per pattern. */
export function parseRules(raw: unknown): ProtectionRule[] {
  if (!Array.isArray(raw)) throw new InvalidProtection('"rules" must be a list of rules');
  const rules = raw.map(parseRule);
  return checkRuleSet(rules);
}

export function checkRuleSet(rules: ProtectionRule[]): ProtectionRule[] {
  if (rules.length > MAX_RULES)
    throw new InvalidProtection(`at most ${MAX_RULES} protection rules per repository (got ${rules.length})`);
  const seen = new Set<string>();
  for (const rule of rules) {
    if (seen.has(rule.pattern))
      throw new InvalidProtection(`two rules for ${rule.pattern}: give each pattern one rule`);
    seen.add(rule.pattern);
  }
  return rules;
}

/** Whether `ref` matches `pattern` (exact, `*` within one segment, `**` across segments). */
export function matchesRef(pattern: string, ref: string): boolean {
  return matchesGlob(pattern, ref);
}

export interface RefChange {
  readonly ref: string;
  readonly old: string;
  readonly new: string;
  /** Whether `new` contains `old`; undefined when nobody computed it. */
  readonly fastForward?: boolean;
}

export interface Pusher {
  readonly token: string;
  readonly tokenId?: string;
}

const ZERO = /^0+$/;

/**
 * Why the rules refuse a change, as git will print it after `ng <ref>` (starting with
 * "protected:"), or undefined when they allow it.
 */
export function protectionProblem(
  rules: readonly ProtectionRule[] | undefined,
  change: RefChange,
  who: Pusher,
): string | undefined {
  if (!rules || rules.length === 0) return undefined;
  const deleting = ZERO.test(change.new);
  const updating = !deleting && !ZERO.test(change.old);
  for (const rule of rules) {
    if (!matchesRef(rule.pattern, change.ref)) continue;
    if (rule.pushers && !rule.pushers.some((p) => p === who.token || p === who.tokenId))
      return `protected: only ${rule.pushers.join(', ')} may push to ${change.ref} (rule ${rule.pattern})`;
    if (deleting && rule.denyDelete)
      return `protected: ${change.ref} may not be deleted (rule ${rule.pattern})`;
    if (updating && rule.denyForce && change.fastForward !== true) {
      return change.fastForward === false
        ? `protected: ${change.ref} may not be force-pushed; fetch and merge first (rule ${rule.pattern})`
        : `protected: the protection of ${change.ref} changed during the push; push again (rule ${rule.pattern})`;
    }
  }
  return undefined;
}

/** A change to a rule set, applied by the Publisher to the rules of the index it publishes on. */
export type ProtectionChange =
  | { readonly op: 'set'; readonly rules: readonly ProtectionRule[] }
  | { readonly op: 'upsert'; readonly rule: ProtectionRule }
  | { readonly op: 'remove'; readonly pattern: string };

/** The rules after `change`; throws InvalidProtection when the result breaks the bounds. */
export function applyProtectionChange(
  current: readonly ProtectionRule[] | undefined,
  change: ProtectionChange,
): ProtectionRule[] {
  const rules = [...(current ?? [])];
  if (change.op === 'set') return checkRuleSet([...change.rules]);
  if (change.op === 'remove') return rules.filter((r) => r.pattern !== change.pattern);
  const at = rules.findIndex((r) => r.pattern === change.rule.pattern);
  if (at >= 0) rules[at] = change.rule;
  else rules.push(change.rule);
  return checkRuleSet(rules);
}

export function sameRules(a: readonly ProtectionRule[] | undefined, b: readonly ProtectionRule[]): boolean {
  return JSON.stringify(a ?? []) === JSON.stringify(b);
}
