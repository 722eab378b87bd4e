/** `narwal repo create|list`. */
import { parseArgs } from 'node:util';
import { parseRepoName } from '../../lib/repoName.js';
import { REPOS_PREFIX } from '../../lib/wal/keys.js';
import { usageOf } from '../usage.js';
import { cliContext, type ExitCode } from './context.js';

export async function repo(args: string[]): Promise<ExitCode> {
  const [sub, ...rest] = args;
  const { values, positionals } = parseArgs({
    args: rest,
    allowPositionals: true,
    options: { public: { type: 'boolean' } },
  });
  const app = await cliContext();
  if (sub === 'create') {
    const name = parseRepoName(positionals[0] ?? '');
    const created = await app.wal.createRepo(name, { public: values.public ?? false });
    console.log(`created ${name}${created.index.public ? ' (public)' : ''}`);
    return 0;
  }
  if (sub === 'list') {
    let startAfter: string | undefined;
    do {
      const page = await app.store.list(REPOS_PREFIX, startAfter ? { startAfter } : {});
      for (const key of page.keys) {
        const match = /^repos\/(.+)\.git\/index\.json$/.exec(key);
        if (match) console.log(match[1]);
      }
      startAfter = page.next;
    } while (startAfter);
    return 0;
  }
  console.error(`narwal: ${usageOf('repo')}`);
  return 2;
}
