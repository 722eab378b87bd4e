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

const USAGE = `usage: narwal <command> [options]

commands:
  serve [--port N] [--host H] [--data DIR]   serve git over HTTP (default http://127.0.0.1:8080)
  repo create NAME [--public]                create an empty repository (NAME or OWNER/NAME)
  repo list                                  list repositories
  log REPO [--limit N]                       print the newest log entries of a repository
  who REPO REF [--json]                      every move of a ref, newest first: who, when, old -> new
  show REPO SEQ [--json]                     the refs as they were right after entry SEQ
  diff REPO A B [--json]                     refs added, removed and moved from entry A to entry B
  rewind REPO SEQ [--refs PATTERN] [--dry-run] [--json]
                                             publish a new entry restoring the refs of entry SEQ
  checkpoint REPO                            make a checkpoint at the head of the log now
  sweep [--dry-run] [--retention-ms N] [--verbose]
                                             delete store objects no index names, older than
                                             NARWAL_SWEEP_RETENTION_MS (default 24 h)
  doctor [--store-only]                      check that the store and presence table honour
                                             conditional writes (exit 1 when they do not)
  protect list|add|remove|clear REPO [PATTERN] [--deny-force] [--deny-delete] [--pusher TOKEN]...
                                             protected-ref rules (patterns: refs/heads/main, refs/heads/release/*)
  lfs check REPO [on|off]                    show or set whether pushes pointing at LFS objects the
                                             store lacks are refused (on by default)
  lfs locks REPO | lfs unlock REPO ID        the LFS locks held; release one, whoever holds it
  events replay REPO --from SEQ [--to DEST]...  deliver the events of a repository again from SEQ
  events status REPO                         how far each event destination has accepted
  token create NAME [--owner O] [--read P]... [--write P]... [--admin P]... [--create] [--json]
                                             issue a token; patterns like "team/*" or "**"
  token list [--json]                        list tokens (never their secrets)
  token revoke ID|NAME [--json]              revoke a token on every node within NARWAL_TOKEN_CACHE_MS

Configuration comes from the environment; see the README.`;

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
