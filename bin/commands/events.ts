/**
 * `narwal events replay REPO --from SEQ [--to NAME]...` delivers a repository's events again from
 * SEQ to the head of its log (to the named destinations, `webhook` or `eventbridge`, or to all
 * configured ones); `narwal events status REPO` shows each destination's cursor. Events are read
 * from the log, so any published entry can be delivered again, with its original idempotency key.
 */
import { parseArgs } from 'node:util';
import { loadConfig } from '../../lib/config.js';
import { createEventSinks } from '../../lib/events/createEventSinks.js';
import { readCursor } from '../../lib/events/EventCursor.js';
import { EventDispatcher, type SinkProgress } from '../../lib/events/EventDispatcher.js';
import { jsonLogger } from '../../lib/log.js';
import { parseRepoName } from '../../lib/repoName.js';
import { incarnationId } from '../../lib/wal/keys.js';
import { usageOf } from '../usage.js';
import { cliContext, type ExitCode } from './context.js';

const USAGE = usageOf('events');

export async function events(args: string[]): Promise<ExitCode> {
  const [sub, ...rest] = args;
  const { values, positionals } = parseArgs({
    args: rest,
    allowPositionals: true,
    options: { from: { type: 'string' }, to: { type: 'string', multiple: true }, json: { type: 'boolean' } },
  });
  if (positionals.length !== 1 || positionals[0] === undefined || (sub !== 'replay' && sub !== 'status')) {
    console.error(`narwal: ${USAGE}`);
    return 2;
  }
  const repo = parseRepoName(positionals[0]);
  const config = loadConfig();
  const sinks = await createEventSinks(config.events);
  if (sinks.length === 0) {
    console.error('narwal: no event destination is configured (NARWAL_WEBHOOK_URL, NARWAL_EVENTBRIDGE_BUS)');
    return 1;
  }
  const app = await cliContext();
  const loaded = await app.wal.readIndex(repo);
  if (loaded === null) {
    console.error(`narwal: repository ${repo} not found`);
    return 1;
  }
  if (sub === 'status') {
    const incarnation = incarnationId(loaded.index.created);
    const cursors = await Promise.all(
      sinks.map(async (s) => ({
        sink: s.name,
        cursor: (await readCursor(app.store, repo, s.name, incarnation)).seq,
        head: loaded.index.seq,
      })),
    );
    if (values.json) console.log(JSON.stringify(cursors));
    else for (const c of cursors) console.log(`${c.sink}: delivered up to #${c.cursor} of #${c.head}`);
    return 0;
  }
  const from = Number(values.from);
  if (values.from === undefined || !Number.isSafeInteger(from) || from < 1) {
    console.error(`narwal: --from needs a sequence number of 1 or more\n${USAGE}`);
    return 2;
  }
  const unknown = (values.to ?? []).filter((name) => !sinks.some((s) => s.name === name));
  if (unknown.length > 0) {
    console.error(`narwal: no configured destination named ${unknown.join(', ')}`);
    return 2;
  }
  const dispatcher = new EventDispatcher({
    wal: app.wal,
    store: app.store,
    sinks,
    logger: jsonLogger({ secrets: [config.events.webhook?.secret] }),
    retry: {
      attempts: config.events.attempts,
      baseMs: config.events.backoffMs,
      capMs: config.events.backoffCapMs,
    },
  });
  const progress = await dispatcher.replay(repo, from, values.to);
  if (values.json) console.log(JSON.stringify(progress));
  else for (const p of progress) console.log(describe(p, from));
  return progress.some((p) => p.error) ? 1 : 0;
}

function describe(p: SinkProgress, from: number): string {
  const line = `${p.sink}: delivered ${p.delivered} events from #${from}; cursor at #${p.cursor} of #${p.head}`;
  return p.error ? `${line}; stopped: ${p.error}` : line;
}
