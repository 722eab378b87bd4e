/**
 * Reads git's trace2 event files (GIT_TRACE2_EVENT pointing at a directory: one file per git
 * process; git-config(1) trace2, and Documentation/technical/api-trace2.txt for the events):
 * every git process as a span - its command (`cmd_name`'s hierarchy, e.g. `receive-pack/index-pack`),
 * when it started and how long it lived - and the hooks it ran (`child_start` of class `hook`,
 * `child_exit`'s `t_rel`).
 */
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';

export interface GitSpan {
  /** The command hierarchy, e.g. `receive-pack`, `receive-pack/index-pack`, `hook:proc-receive`. */
  readonly name: string;
  /** Start, ms since the epoch. */
  readonly start: number;
  readonly ms: number;
}

/** An ISO time with microseconds (`2026-12-03T07:39:34.604335Z`) as fractional ms since the epoch. */
export function isoMicros(text: string): number {
  const match = /^(.*T\d\d:\d\d:\d\d)(?:\.(\d+))?Z$/.exec(text);
  if (!match?.[1]) return Number.NaN;
  const fraction = match[2] ? Number(`0.${match[2]}`) : 0;
  return Date.parse(`${match[1]}Z`) + fraction * 1000;
}

/** The spans in one process's event file. */
export function parseTrace2(text: string): GitSpan[] {
  let name: string | undefined;
  let argv: string[] = [];
  let exitTime: number | undefined;
  let exitAbs: number | undefined;
  const children = new Map<number, { name: string; start: number }>();
  const spans: GitSpan[] = [];
  for (const line of text.split('\n')) {
    if (line === '') continue;
    let event: Record<string, unknown>;
    try {
      event = JSON.parse(line) as Record<string, unknown>;
    } catch {
      continue; // a file still being written ends mid-line
    }
    const time = typeof event.time === 'string' ? isoMicros(event.time) : Number.NaN;
    switch (event.event) {
      case 'start':
        argv = Array.isArray(event.argv) ? event.argv.map(String) : [];
        break;
      case 'cmd_name':
        name = String(event.hierarchy ?? event.name ?? 'git');
        break;
      case 'atexit':
        exitTime = time;
        exitAbs = Number(event.t_abs);
        break;
      case 'child_start':
        if (event.child_class === 'hook')
          children.set(Number(event.child_id), {
            name: `hook:${String(event.hook_name ?? '?')}`,
            start: time,
          });
        break;
      case 'child_exit': {
        const child = children.get(Number(event.child_id));
        if (child) spans.push({ name: child.name, start: child.start, ms: Number(event.t_rel) * 1000 });
        break;
      }
    }
  }
  const command = commandName(name, argv);
  // `git receive-pack` run by http-backend is a wrapper that execs git-receive-pack: the same
  // process twice, counted once.
  if (
    command !== '_run_dashed_' &&
    exitTime !== undefined &&
    exitAbs !== undefined &&
    Number.isFinite(exitAbs)
  )
    spans.push({ name: command, start: exitTime - exitAbs * 1000, ms: exitAbs * 1000 });
  return spans;
}

/** The command hierarchy without the dashed wrapper; the subcommand from argv when git named none. */
function commandName(name: string | undefined, argv: readonly string[]): string {
  if (name !== undefined) return name.replace(/^_run_dashed_\//, '');
  for (let i = 1; i < argv.length; i++) {
    const arg = argv[i] ?? '';
    if (arg === '-c' || arg === '-C') i++;
    else if (!arg.startsWith('-')) return arg;
  }
  const exe = argv[0] ?? 'git';
  return exe.slice(exe.lastIndexOf('/') + 1).replace(/^git-/, '');
}

export async function readTrace2Dir(dir: string): Promise<GitSpan[]> {
  const files = await readdir(dir).catch(() => [] as string[]);
  const spans: GitSpan[] = [];
  for (const file of files) spans.push(...parseTrace2(await readFile(join(dir, file), 'utf8')));
  return spans.sort((a, b) => a.start - b.start);
}
