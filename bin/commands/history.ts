/**
 * The log's questions on the command line: `who`, `show`, `diff`, `rewind`. They run against the
 * configured store like every management command; `diff` also uses git for the commits between
 * moved refs, so it opens the node's cache as a server does.
 */
import { userInfo } from 'node:os';
import { parseArgs } from 'node:util';
import { createApp } from '../../lib/app.js';
import { loadConfig } from '../../lib/config.js';
import { History } from '../../lib/history/History.js';
import { jsonLogger } from '../../lib/log.js';
import { ZERO_OID } from '../../lib/protocol/refValue.js';
import { parseRepoName } from '../../lib/repoName.js';
import { Publisher } from '../../lib/wal/Publisher.js';
import { mapToRows } from '../../lib/wal/refRows.js';
import { usageOf } from '../usage.js';
import { cliContext, type ExitCode, UsageError } from './context.js';

const short = (oid: string) => (oid === ZERO_OID ? '(none)' : oid.slice(0, 10));

function seqArg(value: string | undefined, name: string): number {
  if (value === undefined || !/^\d{1,12}$/.test(value))
    throw new UsageError(`${name} must be an entry number`);
  return Number(value);
}

async function cliHistory(): Promise<History> {
  const { wal } = await cliContext();
  return new History({ wal, publisher: new Publisher(wal) });
}

/** `narwal who REPO REF [--json]`: every move of a ref, newest first. */
export async function who(args: string[]): Promise<ExitCode> {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: { json: { type: 'boolean' } },
  });
  const repo = parseRepoName(positionals[0] ?? '');
  const ref = positionals[1];
  if (!ref) throw new UsageError(usageOf('who'));
  const history = await cliHistory();
  const { index } = await history.load(repo);
  const moves = await history.who(index, ref);
  if (values.json) {
    console.log(JSON.stringify({ ref, moves }, null, 2));
    return 0;
  }
  if (moves.length === 0) console.log(`${ref} never moved in ${repo}`);
  for (const m of moves) {
    const by = m.who.owner ? `${m.who.token} (${m.who.owner})` : m.who.token;
    const note = m.kind === 'rewind' ? ` [rewind to #${m.rewindTo}]` : '';
    console.log(`#${m.seq}  ${m.time}  ${by}  ${short(m.old)} -> ${short(m.new)}${note}`);
  }
  return 0;
}

/** `narwal show REPO SEQ [--json]`: the refs right after entry SEQ. */
export async function show(args: string[]): Promise<ExitCode> {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: { json: { type: 'boolean' } },
  });
  const repo = parseRepoName(positionals[0] ?? '');
  const seq = seqArg(positionals[1], 'SEQ');
  const history = await cliHistory();
  const { index } = await history.load(repo);
  const [item, refs] = await Promise.all([
    seq > 0 ? history.entry(index, seq) : null,
    history.state(index, seq),
  ]);
  const rows = mapToRows(refs);
  if (values.json) {
    console.log(
      JSON.stringify({ seq, entry: item, refs: Object.fromEntries(rows.map((r) => [r[0], r[1]])) }, null, 2),
    );
    return 0;
  }
  if (item)
    console.log(`# entry ${seq} by ${item.who.token} at ${item.time}${item.kind ? ` (${item.kind})` : ''}`);
  for (const [name, oid] of rows) console.log(`${oid} ${name}`);
  return 0;
}

/** `narwal diff REPO A B [--json]`: refs added, removed and moved between two entries. */
export async function diff(args: string[]): Promise<ExitCode> {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: { json: { type: 'boolean' } },
  });
  const repo = parseRepoName(positionals[0] ?? '');
  const from = seqArg(positionals[1], 'A');
  const to = seqArg(positionals[2], 'B');
  const app = await createApp(loadConfig(), jsonLogger({ quiet: true }));
  try {
    const loaded = await app.history.load(repo);
    const result = await app.history.diff(loaded, from, to);
    if (values.json) {
      console.log(JSON.stringify(result, null, 2));
      return 0;
    }
    console.log(`# ${repo}: entry ${from} -> entry ${to}`);
    for (const c of result.added) console.log(`added    ${c.ref} ${short(c.new ?? ZERO_OID)}`);
    for (const c of result.removed) console.log(`removed  ${c.ref} (was ${short(c.old ?? ZERO_OID)})`);
    const details = new Map(result.details.map((d) => [d.ref, d]));
    for (const c of result.moved) {
      const d = details.get(c.ref);
      const how = d === undefined ? '' : d.fastForward ? ' (fast-forward)' : ' (forced)';
      console.log(`moved    ${c.ref} ${short(c.old ?? ZERO_OID)} -> ${short(c.new ?? ZERO_OID)}${how}`);
      if (d?.commits) {
        for (const commit of d.added) console.log(`           ${commit.oid.slice(0, 10)} ${commit.subject}`);
        if (d.addedCount > d.added.length)
          console.log(`           ... and ${d.addedCount - d.added.length} more`);
        if (d.removedCount > 0)
          console.log(`           ${d.removedCount} commit(s) no longer reachable from the ref`);
      }
    }
    if (result.added.length + result.removed.length + result.moved.length === 0)
      console.log('no ref changed');
    return 0;
  } finally {
    await app.close();
  }
}

/** `narwal rewind REPO SEQ [--refs PATTERN] [--dry-run] [--json]`: restore the refs of entry SEQ. */
export async function rewind(args: string[]): Promise<ExitCode> {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: { refs: { type: 'string' }, 'dry-run': { type: 'boolean' }, json: { type: 'boolean' } },
  });
  const repo = parseRepoName(positionals[0] ?? '');
  const to = seqArg(positionals[1], 'SEQ');
  const history = await cliHistory();
  const dryRun = values['dry-run'] ?? false;
  const result = await history.rewind(repo, to, {
    dryRun,
    who: { token: 'narwal-cli', owner: userInfo().username, agent: 'narwal rewind' },
    ...(values.refs !== undefined ? { refs: values.refs } : {}),
  });
  if (values.json) {
    console.log(JSON.stringify(result, null, 2));
    return result.outcomes.some((o) => !o.ok) ? 1 : 0;
  }
  const { plan } = result;
  if (plan.commands.length === 0) {
    console.log(
      `${repo}: the refs${plan.refs ? ` matching ${plan.refs}` : ''} already match entry ${to}; nothing to do`,
    );
    return 0;
  }
  console.log(
    `${dryRun ? 'would update' : 'updating'} ${plan.commands.length} ref(s) to their state after entry ${to}:`,
  );
  for (const c of plan.commands) console.log(`  ${c.ref} ${short(c.oldOid)} -> ${short(c.newOid)}`);
  if (dryRun) {
    console.log('dry run: nothing written');
    return 0;
  }
  const refused = result.outcomes.filter((o) => !o.ok);
  if (refused.length > 0 || result.seq === null) {
    for (const o of refused) if (!o.ok) console.error(`narwal: ${o.ref}: ${o.reason}`);
    console.error('narwal: rewind refused; nothing changed (the log moved meanwhile? run it again)');
    return 1;
  }
  console.log(`published as entry ${result.seq}`);
  return 0;
}
