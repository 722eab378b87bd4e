/** `narwal sweep [--dry-run] [--retention-ms N]`: delete store objects no index names. */
import { parseArgs } from 'node:util';
import { loadConfig } from '../../lib/config.js';
import { sweepOrphans } from '../../lib/wal/sweepOrphans.js';
import { cliContext, type ExitCode } from './context.js';

export async function sweep(args: string[]): Promise<ExitCode> {
  const { values } = parseArgs({
    args,
    options: {
      'dry-run': { type: 'boolean' },
      'retention-ms': { type: 'string' },
      verbose: { type: 'boolean' },
    },
  });
  const config = loadConfig();
  const raw = values['retention-ms'];
  const retentionMs = raw === undefined ? config.sweepRetentionMs : Number(raw);
  if (!/^\d+$/.test(raw ?? '0') || !Number.isSafeInteger(retentionMs)) {
    console.error(
      `narwal: --retention-ms must be a whole number of milliseconds, not ${JSON.stringify(raw)}`,
    );
    return 2;
  }
  const dryRun = values['dry-run'] ?? false;
  const app = await cliContext();
  const report = await sweepOrphans(app.wal, {
    retentionMs,
    dryRun,
    onOrphan: (key, ageMs) => {
      if (values.verbose || dryRun)
        console.log(`${dryRun ? 'would delete' : 'deleted'} ${key} (${Math.round(ageMs / 1000)} s old)`);
    },
  });
  for (const r of report.repos) {
    for (const key of r.missing) console.error(`narwal: ${r.repo}: the log names ${key}, which is missing`);
  }
  for (const key of report.unknown) console.error(`narwal: left alone, not a log object: ${key}`);
  console.log(
    `${report.repos.length} repositories: ${report.orphans} orphan(s) ${dryRun ? 'would be deleted' : `deleted`}, ` +
      `${report.young} unnamed object(s) kept (younger than ${retentionMs} ms)`,
  );
  return report.repos.some((r) => r.missing.length > 0) ? 1 : 0;
}
