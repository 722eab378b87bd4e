/** `narwal log REPO`: the newest entries, newest first. */
import { parseArgs } from 'node:util';
import { settingsText } from '../../lib/monitor/html.js';
import { parseRepoName } from '../../lib/repoName.js';
import { cliContext, type ExitCode } from './context.js';

export async function log(args: string[]): Promise<ExitCode> {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: { limit: { type: 'string' } },
  });
  const name = parseRepoName(positionals[0] ?? '');
  const limit = Number(values.limit ?? 20);
  const app = await cliContext();
  const loaded = await app.wal.readIndex(name);
  if (loaded === null) {
    console.error(`narwal: repository ${name} not found`);
    return 1;
  }
  const items = await app.wal.itemsAfter(loaded.index, Math.max(0, loaded.index.seq - limit));
  for (const item of items.reverse()) {
    const kind = item.kind ? ` ${item.kind}` : '';
    console.log(`#${item.seq} ${item.time} ${item.who.token}${kind}${item.atomic ? ' (atomic)' : ''}`);
    for (const u of item.updates) console.log(`    ${u.ref} ${u.old.slice(0, 10)} -> ${u.new.slice(0, 10)}`);
    const lock = item.lock;
    if (lock)
      console.log(
        `    ${lock.action} ${lock.path}${lock.forced ? ` (held by ${lock.owner.name}, forced)` : ''}`,
      );
    if (item.settings) console.log(`    settings: ${settingsText(item.settings)}`);
  }
  return 0;
}
