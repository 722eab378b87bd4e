/**
 * The commits push workloads send, made up front in one local repository by `git fast-import`
 * (one process for thousands of commits), so a measured push is only the push: each one sends one
 * new commit (a file changed, a tree, the commit) on top of what the server already has.
 */
import { execFile } from 'node:child_process';
import { mkdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { git, gitOk } from './gitClient.js';

export interface SourceRepo {
  readonly dir: string;
  readonly home: string;
  /** The root commit, pushed first to every fresh repository as `main`. */
  readonly root: string;
  /** Named sets of commits: `chain` (each the parent of the next) or `fan` (each a child of root). */
  readonly sets: ReadonlyMap<string, readonly string[]>;
}

export interface CommitSet {
  readonly name: string;
  readonly count: number;
  readonly shape: 'chain' | 'fan';
}

/** One repository holding every set; the refs `refs/sets/<name>/<i>` keep the commits alive. */
export async function makeSource(dir: string, home: string, sets: readonly CommitSet[]): Promise<SourceRepo> {
  await mkdir(dir, { recursive: true });
  await gitOk(['init', '--quiet', '--bare', dir], { home });
  let mark = 1;
  let time = 1_700_000_000;
  const lines: string[] = [];
  const commit = (ref: string, from: number | null, path: string, content: string): number => {
    const message = `${path}: ${content}\n`;
    lines.push(
      `commit ${ref}`,
      `mark :${mark}`,
      `committer Bench <bench@example.com> ${time++} +0000`,
      `data ${Buffer.byteLength(message)}`,
      message.slice(0, -1),
      ...(from !== null ? [`from :${from}`] : []),
      `M 644 inline ${path}`,
      `data ${Buffer.byteLength(content)}`,
      content,
      '',
    );
    return mark++;
  };
  const rootMark = commit('refs/heads/main', null, 'README', 'bench source\n');
  const marks = new Map<string, number[]>();
  for (const set of sets) {
    const own: number[] = [];
    let previous = rootMark;
    for (let i = 0; i < set.count; i++) {
      const from = set.shape === 'chain' ? previous : rootMark;
      // A chain changes one file each time; a fan gives every commit a file of its own.
      const path = set.shape === 'chain' ? `${set.name}/log.txt` : `${set.name}/${i}.txt`;
      previous = commit(`refs/sets/${set.name}/${i}`, from, path, `${set.name} ${i}\n`);
      own.push(previous);
    }
    marks.set(set.name, own);
  }
  lines.push('done', '');
  const marksFile = join(dir, 'bench-marks');
  await feed(dir, lines.join('\n'), marksFile);
  const byMark = await readMarks(marksFile);
  const oid = (m: number) => {
    const found = byMark.get(m);
    if (found === undefined) throw new Error(`fast-import did not report mark ${m}`);
    return found;
  };
  return {
    dir,
    home,
    root: oid(rootMark),
    sets: new Map([...marks].map(([name, ms]) => [name, ms.map(oid)])),
  };
}

export function commitsOf(source: SourceRepo, set: string): readonly string[] {
  const found = source.sets.get(set);
  if (found === undefined) throw new Error(`no commit set ${set}`);
  return found;
}

function feed(dir: string, stream: string, marksFile: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = execFile(
      'git',
      ['fast-import', '--quiet', '--done', `--export-marks=${marksFile}`],
      { cwd: dir, env: { PATH: process.env.PATH ?? '/usr/bin:/bin', GIT_CONFIG_NOSYSTEM: '1', HOME: dir } },
      (error) => (error ? reject(error) : resolve()),
    );
    child.stdin?.end(stream);
  });
}

async function readMarks(file: string): Promise<Map<number, string>> {
  const stdout = await readFile(file, 'utf8');
  const out = new Map<number, string>();
  for (const line of stdout.split('\n')) {
    const match = /^:(\d+) ([0-9a-f]{40})$/.exec(line);
    if (match?.[1] && match[2]) out.set(Number(match[1]), match[2]);
  }
  return out;
}

export interface PushOutcome {
  readonly ok: boolean;
  readonly ms: number;
  /** Client wall-clock start, ms since the epoch (to match server traces). */
  readonly startedAt: number;
  readonly error?: string;
}

/** One `git push` of `refspecs` from the source repository to `url`. */
export async function push(
  source: SourceRepo,
  url: string,
  refspecs: readonly string[],
  signal?: AbortSignal,
): Promise<PushOutcome> {
  const startedAt = performance.timeOrigin + performance.now();
  const out = await git(['push', '--quiet', url, ...refspecs], {
    home: source.home,
    cwd: source.dir,
    ...(signal ? { signal } : {}),
  });
  if (out.code === 0) return { ok: true, ms: out.ms, startedAt };
  return { ok: false, ms: out.ms, startedAt, error: out.stderr.trim().split('\n').slice(-3).join(' / ') };
}

/** Pushes that must land (set-up steps): throws with git's complaint otherwise. */
export async function pushOk(source: SourceRepo, url: string, refspecs: readonly string[]): Promise<void> {
  const out = await push(source, url, refspecs);
  if (!out.ok) throw new Error(`push ${refspecs.join(' ')} failed: ${out.error}`);
}
