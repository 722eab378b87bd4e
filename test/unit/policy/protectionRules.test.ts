import { describe, expect, it } from 'vitest';
import {
  applyProtectionChange,
  InvalidProtection,
  MAX_RULES,
  matchesRef,
  parseRefPattern,
  parseRule,
  parseRules,
  protectionProblem,
} from '../../../lib/policy/protectionRules.js';

const Z = '0'.repeat(40);
const A = 'a'.repeat(40);
const B = 'b'.repeat(40);

describe('matchesRef', () => {
  it('matches exact names only exactly', () => {
    expect(matchesRef('refs/heads/main', 'refs/heads/main')).toBe(true);
    expect(matchesRef('refs/heads/main', 'refs/heads/main2')).toBe(false);
    expect(matchesRef('refs/heads/main', 'refs/heads/mai')).toBe(false);
  });

  it('lets * match within one segment and ** across segments', () => {
    expect(matchesRef('refs/heads/release/*', 'refs/heads/release/1.0')).toBe(true);
    expect(matchesRef('refs/heads/release/*', 'refs/heads/release/1.0/hotfix')).toBe(false);
    expect(matchesRef('refs/heads/release/*', 'refs/heads/release/')).toBe(true);
    expect(matchesRef('refs/heads/release/*', 'refs/heads/releases/1')).toBe(false);
    expect(matchesRef('refs/tags/**', 'refs/tags/v1/rc/2')).toBe(true);
    expect(matchesRef('refs/heads/*-stable', 'refs/heads/2.x-stable')).toBe(true);
    expect(matchesRef('refs/heads/*-stable', 'refs/heads/2.x-unstable')).toBe(false);
  });

  it('treats regular-expression characters literally', () => {
    expect(matchesRef('refs/heads/v1.0/*', 'refs/heads/v1x0/a')).toBe(false);
    expect(matchesRef('refs/heads/a+b/*', 'refs/heads/a+b/c')).toBe(true);
  });
});

describe('parseRefPattern and parseRule', () => {
  it.each([
    ['heads/main', 'must start with refs/'],
    ['refs/heads/a..b', "contains '..'"],
    ['refs/heads/a b', 'contains a space'],
    ['refs/heads/[ab]', "contains '['"],
    ['refs/heads//x', "contains '//'"],
    ['refs/heads/x/', "ends with '/'"],
    ['refs/heads/***', '"***"'],
    [`refs/heads/${'x'.repeat(300)}`, 'longer than 256 bytes'],
  ])('refuses the pattern %j', (pattern, message) => {
    expect(() => parseRefPattern(pattern)).toThrow(InvalidProtection);
    expect(() => parseRefPattern(pattern)).toThrow(message);
  });

  it('accepts exact names and globs', () => {
    for (const p of ['refs/heads/main', 'refs/heads/release/*', 'refs/tags/**', 'refs/heads/*'])
      expect(parseRefPattern(p)).toBe(p);
  });

  it('canonicalizes a rule and refuses rules that protect nothing or carry junk', () => {
    expect(
      parseRule({ pattern: 'refs/heads/main', denyForce: true, denyDelete: false, pushers: ['ci', 'ci'] }),
    ).toEqual({
      pattern: 'refs/heads/main',
      denyForce: true,
      pushers: ['ci'],
    });
    expect(() => parseRule({ pattern: 'refs/heads/main' })).toThrow('protects nothing');
    expect(() => parseRule({ pattern: 'refs/heads/main', denyForce: 'yes' })).toThrow('true or false');
    expect(() => parseRule({ pattern: 'refs/heads/main', pushers: [] })).toThrow('"pushers"');
    expect(() => parseRule({ pattern: 'refs/heads/main', pushers: ['a b'] })).toThrow('invalid token');
    expect(() => parseRule({ pattern: 'refs/heads/main', denyForce: true, extra: 1 })).toThrow('unknown');
    expect(() => parseRule(['refs/heads/main'])).toThrow('JSON object');
  });

  it('bounds a rule set and refuses two rules for one pattern', () => {
    const many = Array.from({ length: MAX_RULES + 1 }, (_, i) => ({
      pattern: `refs/heads/b${i}`,
      denyDelete: true,
    }));
    expect(() => parseRules(many)).toThrow(`at most ${MAX_RULES}`);
    expect(parseRules(many.slice(0, MAX_RULES))).toHaveLength(MAX_RULES);
    expect(() =>
      parseRules([
        { pattern: 'refs/heads/main', denyDelete: true },
        { pattern: 'refs/heads/main', denyForce: true },
      ]),
    ).toThrow('two rules');
    expect(() => parseRules({})).toThrow('must be a list');
  });
});

describe('applyProtectionChange', () => {
  const main = { pattern: 'refs/heads/main', denyForce: true as const };
  it('upserts by pattern, removes, replaces, and keeps the bound', () => {
    const one = applyProtectionChange(undefined, { op: 'upsert', rule: main });
    expect(one).toEqual([main]);
    const replaced = applyProtectionChange(one, {
      op: 'upsert',
      rule: { pattern: 'refs/heads/main', denyDelete: true },
    });
    expect(replaced).toEqual([{ pattern: 'refs/heads/main', denyDelete: true }]);
    expect(applyProtectionChange(replaced, { op: 'remove', pattern: 'refs/heads/main' })).toEqual([]);
    expect(applyProtectionChange(replaced, { op: 'set', rules: [] })).toEqual([]);
    const full = Array.from({ length: MAX_RULES }, (_, i) => ({
      pattern: `refs/heads/b${i}`,
      denyDelete: true as const,
    }));
    expect(() => applyProtectionChange(full, { op: 'upsert', rule: main })).toThrow(InvalidProtection);
  });
});

describe('protectionProblem', () => {
  const who = { token: 'dev', tokenId: 'id-dev' };
  const rules = [
    { pattern: 'refs/heads/main', denyForce: true as const, denyDelete: true as const },
    { pattern: 'refs/heads/release/*', pushers: ['release-bot', 'id-lead'] },
  ];

  it('allows anything when there are no rules or none matches', () => {
    expect(protectionProblem(undefined, { ref: 'refs/heads/main', old: A, new: Z }, who)).toBeUndefined();
    expect(protectionProblem(rules, { ref: 'refs/heads/topic', old: A, new: Z }, who)).toBeUndefined();
  });

  it('refuses a non-fast-forward and a deletion of a protected branch', () => {
    expect(
      protectionProblem(rules, { ref: 'refs/heads/main', old: A, new: B, fastForward: false }, who),
    ).toMatch(/^protected: refs\/heads\/main may not be force-pushed/);
    expect(protectionProblem(rules, { ref: 'refs/heads/main', old: A, new: Z }, who)).toMatch(
      /^protected: refs\/heads\/main may not be deleted/,
    );
  });

  it('refuses an update whose fast-forwardness nobody checked, asking to push again', () => {
    expect(protectionProblem(rules, { ref: 'refs/heads/main', old: A, new: B }, who)).toMatch(/push again/);
  });

  it('allows fast-forwards and creations of a protected branch', () => {
    expect(
      protectionProblem(rules, { ref: 'refs/heads/main', old: A, new: B, fastForward: true }, who),
    ).toBeUndefined();
    expect(protectionProblem(rules, { ref: 'refs/heads/main', old: Z, new: B }, who)).toBeUndefined();
  });

  it('lets only the named tokens push, by name or by id', () => {
    const change = { ref: 'refs/heads/release/2.0', old: Z, new: B };
    expect(protectionProblem(rules, change, who)).toBe(
      'protected: only release-bot, id-lead may push to refs/heads/release/2.0 (rule refs/heads/release/*)',
    );
    expect(protectionProblem(rules, change, { token: 'release-bot' })).toBeUndefined();
    expect(protectionProblem(rules, change, { token: 'someone', tokenId: 'id-lead' })).toBeUndefined();
    expect(protectionProblem(rules, { ...change, new: Z, old: A }, { token: 'release-bot' })).toBeUndefined();
  });

  it('applies every matching rule', () => {
    const both = [
      { pattern: 'refs/heads/**', pushers: ['a', 'b'] },
      { pattern: 'refs/heads/prod', pushers: ['b'] },
    ];
    expect(protectionProblem(both, { ref: 'refs/heads/prod', old: Z, new: B }, { token: 'a' })).toMatch(
      /only b/,
    );
    expect(
      protectionProblem(both, { ref: 'refs/heads/prod', old: Z, new: B }, { token: 'b' }),
    ).toBeUndefined();
  });
});
