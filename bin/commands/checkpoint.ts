/** `narwal checkpoint REPO`: a checkpoint at the head of the log now. */
import { parseArgs } from 'node:util';
import { createApp } from '../../lib/app.js';
import { loadConfig } from '../../lib/config.js';
import { jsonLogger } from '../../lib/log.js';
import { parseRepoName } from '../../lib/repoName.js';
import type { ExitCode } from './context.js';

export async function checkpoint(args: string[]): Promise<ExitCode> {
  const { positionals } = parseArgs({ args, allowPositionals: true, options: {} });
  const name = parseRepoName(positionals[0] ?? '');
  const config = loadConfig();
  const app = await createApp(config, jsonLogger({ quiet: true }));
  try {
    const made = await app.checkpointer.make(name);
    console.log(
      made
        ? `checkpoint of ${name} at entry ${made.seq}: ${made.packs.length} pack(s), ${made.bytes} bytes`
        : `${name}: nothing new to checkpoint (or another node is making one)`,
    );
    return 0;
  } finally {
    await app.close();
  }
}
