/**
 * `narwal lfs check|locks|unlock`: a repository's Git LFS push check and locks. A change is an
 * entry in the log, published by the same CAS as pushes (lib/lfs/settings.ts, lib/lfs/LfsLocks.ts).
 */
import { userInfo } from 'node:os';
import { parseArgs } from 'node:util';
import { LfsLocks } from '../../lib/lfs/LfsLocks.js';
import { changeSettings, readSettings } from '../../lib/lfs/settings.js';
import { parseRepoName } from '../../lib/repoName.js';
import { RepoNotFound } from '../../lib/wal/errors.js';
import { Publisher } from '../../lib/wal/Publisher.js';
import type { Identity } from '../../lib/wal/types.js';
import { usageOf } from '../usage.js';
import { cliContext, type ExitCode } from './context.js';

const USAGE = usageOf('lfs');

export async function lfs(args: string[]): Promise<ExitCode> {
  const [sub, ...rest] = args;
  const { values, positionals } = parseArgs({
    args: rest,
    allowPositionals: true,
    options: { json: { type: 'boolean' } },
  });
  const json = values.json ?? false;
  const [rawRepo, arg, ...extra] = positionals;
  if (rawRepo === undefined || extra.length > 0) return usage();
  const repo = parseRepoName(rawRepo);
  const who: Identity = { token: 'cli', agent: `narwal lfs (${userInfo().username})` };
  if (sub === 'check') {
    if (arg !== undefined && arg !== 'on' && arg !== 'off') return usage();
    const app = await cliContext();
    const state =
      arg === undefined
        ? await readSettings(app.wal, repo)
        : await changeSettings(new Publisher(app.wal), repo, { lfsPushCheck: arg === 'on' }, who);
    if (json) console.log(JSON.stringify(state));
    else {
      if ('entry' in state)
        console.error(
          state.entry === null ? `${repo}: unchanged` : `${repo}: changed by log entry #${state.entry}`,
        );
      console.log(`LFS push check ${state.settings.lfsPushCheck ? 'on' : 'off'}`);
    }
    return 0;
  }
  if (sub === 'locks' && arg === undefined) {
    const app = await cliContext();
    const loaded = await app.wal.readIndex(repo);
    if (loaded === null) throw new RepoNotFound(repo);
    const locks = await new LfsLocks({ wal: app.wal, publisher: new Publisher(app.wal) }).locks(loaded.index);
    if (json) console.log(JSON.stringify({ repo, seq: loaded.index.seq, locks }));
    else if (locks.length === 0) console.log('no locks');
    else for (const l of locks) console.log(`${l.path}\t${l.owner.name}\tID:${l.id}\t${l.lockedAt}`);
    return 0;
  }
  if (sub === 'unlock' && arg !== undefined) {
    const app = await cliContext();
    const result = await new LfsLocks({ wal: app.wal, publisher: new Publisher(app.wal) }).unlock(
      repo,
      arg,
      who,
      true,
    );
    if (json) console.log(JSON.stringify(result));
    else console.error(`${repo}: ${result.lock.path} unlocked by log entry #${result.seq}`);
    return 0;
  }
  return usage();
}

function usage(): ExitCode {
  console.error(`narwal: ${USAGE}`);
  return 2;
}
