/**
 * `narwal doctor [--store-only]`: probes the configured store and presence table (the same
 * NARWAL_* settings as `narwal serve`) and refuses, with exit status 1, a backend that does not
 * honour conditional writes: narwal would lose acknowledged pushes on it.
 */
import { parseArgs } from 'node:util';
import { loadConfig } from '../../lib/config.js';
import { type Check, checkPresence, checkStore } from '../../lib/doctor/checkBackends.js';
import { createPresenceStore } from '../../lib/presence/createPresenceStore.js';
import { createObjectStore } from '../../lib/store/createObjectStore.js';
import type { ExitCode } from './context.js';

export async function doctor(args: string[]): Promise<ExitCode> {
  const { values } = parseArgs({ args, options: { 'store-only': { type: 'boolean' } } });
  const config = loadConfig();
  const where =
    config.store.kind === 'fs'
      ? `embedded store at ${config.store.root}`
      : `S3 bucket ${config.store.bucket}${config.store.endpoint ? ` at ${config.store.endpoint}` : ''}`;
  const report = (title: string, checks: readonly Check[]) => {
    console.log(title);
    for (const c of checks) console.log(`  ${c.ok ? 'ok  ' : 'FAIL'} ${c.name}: ${c.detail}`);
  };
  const store = await checkStore(await createObjectStore(config));
  report(`store: ${where}`, store);
  let presence: Check[] = [];
  if (!values['store-only']) {
    presence = await checkPresence(await createPresenceStore(config));
    report(
      `presence: ${config.presence.kind === 'local' ? `local records in ${config.cacheDir}` : `DynamoDB table ${config.presence.table}`}`,
      presence,
    );
  }
  const failed = [...store, ...presence].filter((c) => !c.ok);
  if (failed.length > 0) {
    console.error(
      `narwal: ${failed.length} check(s) failed; narwal must not run on this backend: it relies on conditional writes to never lose a push`,
    );
    return 1;
  }
  console.log('every check passed');
  return 0;
}
