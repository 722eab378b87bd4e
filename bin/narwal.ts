/**
 * The narwal command line: `serve` runs the local (or pool) server; the other commands work on the
 * configured store directly, so they behave the same against the embedded store and against S3.
 * Each command lives in bin/commands/.
 */
import { checkpoint } from './commands/checkpoint.js';
import { type ExitCode, UsageError } from './commands/context.js';
import { doctor } from './commands/doctor.js';
import { events } from './commands/events.js';
import { diff, rewind, show, who } from './commands/history.js';
import { lfs } from './commands/lfs.js';
import { log } from './commands/log.js';
import { protect } from './commands/protect.js';
import { repo } from './commands/repo.js';
import { serve } from './commands/serve.js';
import { sweep } from './commands/sweep.js';
import { token } from './commands/token.js';
import { helpText } from './usage.js';

const USAGE = helpText();

async function main(argv: string[]): Promise<ExitCode> {
  const [command, ...rest] = argv;
  switch (command) {
    case 'serve':
      return serve(rest);
    case 'repo':
      return repo(rest);
    case 'log':
      return log(rest);
    case 'token':
      return token(rest);
    case 'checkpoint':
      return checkpoint(rest);
    case 'sweep':
      return sweep(rest);
    case 'doctor':
      return doctor(rest);
    case 'who':
      return who(rest);
    case 'show':
      return show(rest);
    case 'diff':
      return diff(rest);
    case 'rewind':
      return rewind(rest);
    case 'protect':
      return protect(rest);
    case 'events':
      return events(rest);
    case 'lfs':
      return lfs(rest);
    case undefined:
    case 'help':
    case '--help':
    case '-h':
      console.log(USAGE);
      return command === undefined ? 2 : 0;
    default:
      console.error(`narwal: unknown command ${JSON.stringify(command)}\n\n${USAGE}`);
      return 2;
  }
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    console.error(`narwal: ${error instanceof Error ? error.message : String(error)}`);
    process.exitCode = error instanceof UsageError ? 2 : 1;
  },
);
