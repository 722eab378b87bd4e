/**
 * Reading and changing a repository's protection rules. A change is a protect entry published by
 * the Publisher's CAS like any push, so the log records who changed the rules and when, and a push
 * racing the change is decided under whichever rules the index it lands on holds. (The rules
 * themselves, and how a ref update is checked against them, are lib/policy/protectionRules.ts.)
 */

import type { ProtectionChange, ProtectionRule } from '../policy/protectionRules.js';
import { RepoNotFound } from '../wal/errors.js';
import type { Publisher } from '../wal/Publisher.js';
import type { Identity } from '../wal/types.js';
import type { Wal } from '../wal/Wal.js';

export interface ProtectionState {
  readonly repo: string;
  /** The log position the rules were read at (or set by). */
  readonly seq: number;
  readonly rules: readonly ProtectionRule[];
}

export interface ProtectionChangeResult extends ProtectionState {
  /** The seq of the protect entry; null when the rules already were what the change asks. */
  readonly entry: number | null;
}

export class RuleNotFound extends Error {
  readonly code = 'RuleNotFound';
  constructor(
    readonly repo: string,
    readonly pattern: string,
  ) {
    super(`repository ${repo} has no protection rule for ${pattern}`);
  }
}

export async function readProtection(wal: Wal, repo: string): Promise<ProtectionState> {
  const loaded = await wal.readIndex(repo);
  if (loaded === null) throw new RepoNotFound(repo);
  return { repo, seq: loaded.index.seq, rules: loaded.index.protection ?? [] };
}

export async function changeProtection(
  publisher: Publisher,
  repo: string,
  change: ProtectionChange,
  who: Identity,
): Promise<ProtectionChangeResult> {
  const result = await publisher.publish({
    repo,
    commands: [],
    atomic: false,
    who,
    packs: [],
    protection: change,
  });
  const { index } = result.loaded;
  const rules = index.protection ?? [];
  // A no-op is decided on a freshly read index, so "no such rule" is the truth at that index.
  if (result.seq === null && change.op === 'remove' && !rules.some((r) => r.pattern === change.pattern))
    throw new RuleNotFound(repo, change.pattern);
  return { repo, seq: index.seq, rules, entry: result.seq };
}
