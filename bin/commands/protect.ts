/**
 * `narwal protect list|add|remove|clear`: a repository's protected-ref rules. A change is a
 * protect entry in the log, published by the same CAS as pushes (see lib/history/protection.ts).
 */
import { userInfo } from 'node:os';
import { parseArgs } from 'node:util';
import { changeProtection, readProtection } from '../../lib/history/protection.js';
import {
  type ProtectionChange,
  type ProtectionRule,
  parseRefPattern,
  parseRule,
} from '../../lib/policy/protectionRules.js';
import { parseRepoName } from '../../lib/repoName.js';
import { Publisher } from '../../lib/wal/Publisher.js';
import type { Identity } from '../../lib/wal/types.js';
import { usageOf } from '../usage.js';
import { cliContext, type ExitCode } from './context.js';

const USAGE = usageOf('protect');

export async function protect(args: string[]): Promise<ExitCode> {
  const [sub, ...rest] = args;
  const { values, positionals } = parseArgs({
    args: rest,
    allowPositionals: true,
    options: {
      'deny-force': { type: 'boolean' },
      'deny-delete': { type: 'boolean' },
      pusher: { type: 'string', multiple: true },
      json: { type: 'boolean' },
    },
  });
  const json = values.json ?? false;
  const [rawRepo, rawPattern, ...extra] = positionals;
  if (rawRepo === undefined || extra.length > 0) return usage();
  const repo = parseRepoName(rawRepo);
  let change: ProtectionChange;
  if (sub === 'list' && rawPattern === undefined) {
    const app = await cliContext();
    const state = await readProtection(app.wal, repo);
    if (json) console.log(JSON.stringify(state));
    else print(state.rules);
    return 0;
  }
  if (sub === 'add' && rawPattern !== undefined) {
    change = {
      op: 'upsert',
      rule: parseRule({
        pattern: rawPattern,
        ...(values['deny-force'] ? { denyForce: true } : {}),
        ...(values['deny-delete'] ? { denyDelete: true } : {}),
        ...(values.pusher ? { pushers: values.pusher } : {}),
      }),
    };
  } else if (sub === 'remove' && rawPattern !== undefined) {
    change = { op: 'remove', pattern: parseRefPattern(rawPattern) };
  } else if (sub === 'clear' && rawPattern === undefined) {
    change = { op: 'set', rules: [] };
  } else return usage();
  const app = await cliContext();
  const who: Identity = { token: 'cli', agent: `narwal protect (${userInfo().username})` };
  const result = await changeProtection(new Publisher(app.wal), repo, change, who);
  if (json) console.log(JSON.stringify(result));
  else {
    console.error(
      result.entry === null
        ? `${repo}: rules unchanged`
        : `${repo}: rules changed by log entry #${result.entry}`,
    );
    print(result.rules);
  }
  return 0;
}

function usage(): ExitCode {
  console.error(`narwal: ${USAGE}`);
  return 2;
}

function print(rules: readonly ProtectionRule[]): void {
  if (rules.length === 0) {
    console.log('no protection rules');
    return;
  }
  for (const r of rules) {
    const what = [
      ...(r.denyForce ? ['deny-force'] : []),
      ...(r.denyDelete ? ['deny-delete'] : []),
      ...(r.pushers ? [`pushers=${r.pushers.join(',')}`] : []),
    ];
    console.log(`${r.pattern}  ${what.join(' ')}`);
  }
}
