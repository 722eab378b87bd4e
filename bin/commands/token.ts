/**
 * `narwal token create|list|revoke`. Like the other management commands these work on the
 * configured store directly: whoever can run them already holds the store's credentials, which is
 * the host's real authority. `--json` prints one JSON document for scripts.
 */
import { parseArgs } from 'node:util';
import type { Grant } from '../../lib/auth/Principal.js';
import type { TokenInfo } from '../../lib/auth/tokenRecord.js';
import { usageOf } from '../usage.js';
import { cliContext, type ExitCode } from './context.js';

const USAGE = usageOf('token');

export async function token(args: string[]): Promise<ExitCode> {
  const [sub, ...rest] = args;
  const { values, positionals } = parseArgs({
    args: rest,
    allowPositionals: true,
    options: {
      owner: { type: 'string' },
      create: { type: 'boolean' },
      read: { type: 'string', multiple: true },
      write: { type: 'string', multiple: true },
      admin: { type: 'string', multiple: true },
      json: { type: 'boolean' },
    },
  });
  const json = values.json ?? false;
  if (sub === 'create' && positionals.length === 1 && positionals[0] !== undefined) {
    const grants: Grant[] = [
      ...(values.read ?? []).map((pattern): Grant => ({ scope: 'read', pattern })),
      ...(values.write ?? []).map((pattern): Grant => ({ scope: 'write', pattern })),
      ...(values.admin ?? []).map((pattern): Grant => ({ scope: 'admin', pattern })),
    ];
    const app = await cliContext();
    const { token: secret, info } = await app.tokens.create({
      name: positionals[0],
      ...(values.owner !== undefined ? { owner: values.owner } : {}),
      grants,
      create: values.create ?? false,
    });
    if (json) console.log(JSON.stringify({ ...info, token: secret }));
    else {
      console.error(`created token ${info.id} (${info.name}): ${scopes(info)}; it is shown only this once`);
      console.log(secret);
    }
    return 0;
  }
  if (sub === 'list' && positionals.length === 0) {
    const app = await cliContext();
    const all = await app.tokens.list();
    if (json) console.log(JSON.stringify(all));
    else console.log(table(all));
    return 0;
  }
  if (sub === 'revoke' && positionals.length === 1 && positionals[0] !== undefined) {
    const app = await cliContext();
    const revoked = await app.tokens.revoke(positionals[0]);
    if (json) console.log(JSON.stringify({ revoked }));
    else console.log(`revoked token ${revoked.id} (${revoked.name})`);
    return 0;
  }
  console.error(`narwal: ${USAGE}`);
  return 2;
}

function scopes(info: TokenInfo): string {
  const granted = info.grants.map((g) => `${g.scope}:${g.pattern}`);
  return [...granted, ...(info.create ? ['create'] : [])].join(' ');
}

function table(tokens: readonly TokenInfo[]): string {
  const rows = [
    ['ID', 'NAME', 'OWNER', 'SCOPES', 'CREATED', 'LAST USED'],
    ...tokens.map((t) => [t.id, t.name, t.owner ?? '-', scopes(t), t.created, t.lastUsed ?? 'never']),
  ];
  const widths = rows[0]?.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? '').length))) ?? [];
  return rows
    .map((r) =>
      r
        .map((cell, i) => cell.padEnd(widths[i] ?? 0))
        .join('  ')
        .trimEnd(),
    )
    .join('\n');
}
