/**
 * The command line's usage, written once: `narwal --help`, the usage each command prints when it
 * is called wrongly, and the README's "Command line" section (test/unit/bin/usage.test.ts keeps
 * the README's copy equal to helpText(); `npm run build && node scripts/readme-usage.mjs`
 * rewrites it).
 */

interface UsageLine {
  /** The command and its arguments, without `narwal`. */
  readonly synopsis: string;
  readonly does: string;
}

interface CommandUsage {
  readonly name: string;
  readonly lines: readonly UsageLine[];
  /** What the arguments mean, after the lines. */
  readonly notes?: readonly string[];
}

const COMMANDS: readonly CommandUsage[] = [
  {
    name: 'serve',
    lines: [
      {
        synopsis: 'serve [--port N] [--host H] [--data DIR]',
        does: 'serve git over HTTP (default http://127.0.0.1:8080)',
      },
    ],
  },
  {
    name: 'repo',
    lines: [
      {
        synopsis: 'repo create NAME [--public]',
        does: 'create an empty repository (NAME or OWNER/NAME); a public one clones without a token',
      },
      { synopsis: 'repo list', does: 'list repositories' },
    ],
  },
  {
    name: 'log',
    lines: [{ synopsis: 'log REPO [--limit N]', does: 'the newest log entries of a repository' }],
  },
  {
    name: 'who',
    lines: [
      { synopsis: 'who REPO REF [--json]', does: 'every move of a ref, newest first: who, when, old -> new' },
    ],
  },
  {
    name: 'show',
    lines: [{ synopsis: 'show REPO SEQ [--json]', does: 'the refs as they were right after entry SEQ' }],
  },
  {
    name: 'diff',
    lines: [
      {
        synopsis: 'diff REPO A B [--json]',
        does: 'refs added, removed and moved from entry A to entry B, with the commits between',
      },
    ],
  },
  {
    name: 'rewind',
    lines: [
      {
        synopsis: 'rewind REPO SEQ [--refs PATTERN] [--dry-run] [--json]',
        does: 'publish a new entry restoring the refs of entry SEQ',
      },
    ],
  },
  {
    name: 'checkpoint',
    lines: [{ synopsis: 'checkpoint REPO', does: 'make a checkpoint at the head of the log now' }],
  },
  {
    name: 'sweep',
    lines: [
      {
        synopsis: 'sweep [--dry-run] [--retention-ms N] [--verbose]',
        does: 'delete store objects no index names, once older than NARWAL_SWEEP_RETENTION_MS (24 h)',
      },
    ],
  },
  {
    name: 'doctor',
    lines: [
      {
        synopsis: 'doctor [--store-only]',
        does: 'check that the store and presence table honour conditional writes (exit 1 if not)',
      },
    ],
  },
  {
    name: 'token',
    lines: [
      {
        synopsis:
          'token create NAME [--owner O] [--read P]... [--write P]... [--admin P]... [--create] [--json]',
        does: 'issue a token and print it, once',
      },
      { synopsis: 'token list [--json]', does: 'list tokens (never their secrets)' },
      {
        synopsis: 'token revoke ID|NAME [--json]',
        does: 'revoke a token on every node within NARWAL_TOKEN_CACHE_MS',
      },
    ],
    notes: ["P: NAME, OWNER/NAME, OWNER/* or ** (every repository; --admin '**' manages the host)"],
  },
  {
    name: 'protect',
    lines: [
      { synopsis: 'protect list REPO [--json]', does: 'the protected-ref rules of a repository' },
      {
        synopsis: 'protect add REPO PATTERN [--deny-force] [--deny-delete] [--pusher TOKEN]... [--json]',
        does: 'add a rule, or replace the one of its pattern',
      },
      { synopsis: 'protect remove REPO PATTERN [--json]', does: 'remove the rule of a pattern' },
      { synopsis: 'protect clear REPO [--json]', does: 'remove every rule' },
    ],
    notes: [
      'PATTERN: a ref (refs/heads/main) or a glob: * within one path segment, ** across segments',
      'TOKEN: a token name or id; when given, only those tokens may push to matching refs',
    ],
  },
  {
    name: 'lfs',
    lines: [
      {
        synopsis: 'lfs check REPO [on|off] [--json]',
        does: 'show, or turn on or off, the refusal of pushes whose commits point at Git LFS objects the store lacks (on by default)',
      },
      { synopsis: 'lfs locks REPO [--json]', does: 'the Git LFS locks held' },
      { synopsis: 'lfs unlock REPO ID [--json]', does: 'release a lock, whoever holds it' },
    ],
  },
  {
    name: 'events',
    lines: [
      {
        synopsis: 'events replay REPO --from SEQ [--to webhook|eventbridge]... [--json]',
        does: 'deliver the events of a repository again from SEQ',
      },
      { synopsis: 'events status REPO [--json]', does: 'how far each event destination has accepted' },
    ],
  },
];

/** Where descriptions start, and where lines end. */
const COLUMN = 44;
const WIDTH = 100;

/** `narwal --help`. */
export function helpText(): string {
  const lines = ['usage: narwal <command> [options]', '', 'commands:'];
  for (const command of COMMANDS) {
    for (const line of command.lines) lines.push(...described(line));
    for (const note of command.notes ?? []) lines.push(...wrapped(note, ' '.repeat(COLUMN)));
  }
  lines.push('', 'Configuration comes from the environment: see the configuration table of the README.');
  return lines.join('\n');
}

/** The usage a command prints when it is called wrongly. */
export function usageOf(name: string): string {
  const command = COMMANDS.find((c) => c.name === name);
  if (command === undefined) throw new Error(`no usage for ${name}`);
  return ['usage:', ...command.lines.map((l) => `  narwal ${l.synopsis}`), ...(command.notes ?? [])].join(
    '\n',
  );
}

/** The names of the commands, in the order the help lists them. */
export function commandNames(): string[] {
  return COMMANDS.map((c) => c.name);
}

function described(line: UsageLine): string[] {
  const synopsis = `  ${line.synopsis}`;
  const indent = ' '.repeat(COLUMN);
  if (synopsis.length + 2 > COLUMN) return [synopsis, ...wrapped(line.does, indent)];
  const [first = '', ...rest] = wrapped(line.does, indent);
  return [synopsis.padEnd(COLUMN) + first.trimStart(), ...rest];
}

/** `text` in lines of at most WIDTH columns, each starting with `indent`. */
function wrapped(text: string, indent: string): string[] {
  const lines: string[] = [];
  let line = '';
  for (const word of text.split(' ')) {
    if (line !== '' && indent.length + line.length + 1 + word.length > WIDTH) {
      lines.push(indent + line);
      line = word;
    } else line = line === '' ? word : `${line} ${word}`;
  }
  if (line !== '') lines.push(indent + line);
  return lines;
}
