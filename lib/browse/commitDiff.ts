/**
 * A commit's changes against its first parent (the root commit: against nothing), as one
 * `git diff-tree -r -M --raw --numstat -z -p` (git-diff-tree(1)): the raw records give each
 * file's exact paths (NUL-separated, never quoted), numstat its added and removed lines, and the
 * patches follow in the same order. Bounded at every step, so a commit that rewrote a generated
 * file of 100 MB costs the same page as one that did not:
 *
 * - git's output is read up to MAX_READ_BYTES, then git is stopped;
 * - a file whose patch is over MAX_FILE_LINES lines or MAX_FILE_BYTES bytes is "diff too large";
 * - once MAX_TOTAL_LINES lines or MAX_TOTAL_BYTES bytes are shown, the rest are listed without
 *   their patches.
 */
import type { GitRunner } from '../git/GitRunner.js';

export const LIMITS = {
  maxReadBytes: 8 * 1024 * 1024,
  maxFileLines: 2_000,
  maxFileBytes: 192 * 1024,
  maxTotalLines: 12_000,
  maxTotalBytes: 1024 * 1024,
};

export type Limits = typeof LIMITS;

export interface FileChange {
  /** git's status letter: A, D, M, R, C, T. */
  readonly status: string;
  readonly oldPath: string;
  readonly newPath: string;
  readonly oldMode: string;
  readonly newMode: string;
  readonly oldOid: string;
  readonly newOid: string;
  /** Lines added and removed; null for binary files. */
  readonly added: number | null;
  readonly removed: number | null;
  /** The patch's lines from the first hunk on; empty for a change without one. */
  readonly lines: readonly string[];
  readonly binary: boolean;
  /** Why the patch is not shown, if it is not. */
  readonly omitted: 'file-too-large' | 'total-too-large' | null;
}

export interface CommitDiff {
  readonly files: readonly FileChange[];
  /** git's output was cut at maxReadBytes: files after the last listed are not known. */
  readonly truncated: boolean;
}

export async function commitDiff(
  git: GitRunner,
  dir: string,
  commit: { oid: string; parents: readonly string[] },
  options: { owner?: string; limits?: Limits } = {},
): Promise<CommitDiff> {
  const limits = options.limits ?? LIMITS;
  const parent = commit.parents[0];
  const args = [
    '-c',
    'core.quotePath=false',
    '--git-dir',
    dir,
    'diff-tree',
    '-r',
    '-M',
    '--raw',
    '--numstat',
    '-z',
    '-p',
    '--no-color',
    '--no-ext-diff',
    '--no-textconv',
    '--full-index',
    ...(parent === undefined ? ['--root', '--no-commit-id', commit.oid] : [parent, commit.oid]),
  ];
  const child = await git.spawn(args, options.owner !== undefined ? { owner: options.owner } : {});
  child.stdin?.end();
  child.stderr?.resume();
  const chunks: Buffer[] = [];
  let bytes = 0;
  let truncated = false;
  await new Promise<void>((resolve) => {
    child.stdout?.on('data', (chunk: Buffer) => {
      if (truncated) return;
      chunks.push(chunk);
      bytes += chunk.length;
      if (bytes >= limits.maxReadBytes) {
        truncated = true;
        child.kill('SIGKILL');
      }
    });
    child.once('close', () => resolve());
    child.once('error', () => resolve());
  });
  const output = Buffer.concat(chunks).subarray(0, limits.maxReadBytes);
  return { ...parseDiffTree(output, limits, truncated), truncated };
}

interface RawRecord {
  status: string;
  oldMode: string;
  newMode: string;
  oldOid: string;
  newOid: string;
  oldPath: string;
  newPath: string;
}

/** Parses git's `-z --raw --numstat -p` output (exported for tests of odd names). */
export function parseDiffTree(
  output: Buffer,
  limits: Limits = LIMITS,
  truncated = false,
): { files: FileChange[] } {
  let at = 0;
  const token = (): string | null => {
    const end = output.indexOf(0, at);
    if (end < 0) return null;
    const value = output.toString('utf8', at, end);
    at = end + 1;
    return value;
  };
  const raws: RawRecord[] = [];
  while (at < output.length && output[at] === 0x3a /* ':' */) {
    const meta = token();
    if (meta === null) break;
    const [oldMode = '', newMode = '', oldOid = '', newOid = '', statusScore = ''] = meta.slice(1).split(' ');
    const status = statusScore.charAt(0);
    const oldPath = token() ?? '';
    const newPath = status === 'R' || status === 'C' ? (token() ?? '') : oldPath;
    raws.push({ status, oldMode, newMode, oldOid, newOid, oldPath, newPath });
  }
  const counts: { added: number | null; removed: number | null }[] = [];
  for (let i = 0; i < raws.length; i++) {
    const record = token();
    if (record === null) break;
    const [added = '-', removed = '-', path = ''] = record.split('\t');
    if (path === '') {
      // A rename: the two paths follow as tokens of their own.
      token();
      token();
    }
    counts.push({
      added: added === '-' ? null : Number(added),
      removed: removed === '-' ? null : Number(removed),
    });
  }
  if (output[at] === 0) at++;
  const patches = splitPatches(output.toString('utf8', at));
  let shownLines = 0;
  let shownBytes = 0;
  let next = 0;
  const files = raws.map((raw, i): FileChange => {
    // A change of type (a file becoming a link) is patched as a deletion and an addition.
    const want = raw.status === 'T' ? 2 : 1;
    const own = patches.slice(next, next + want);
    next += own.length;
    // Output cut short: this file's patch is missing, or the last one read and maybe incomplete.
    const cut = truncated && next >= patches.length;
    const count = counts[i] ?? { added: null, removed: null };
    const binary = count.added === null || own.some((p) => p.binary);
    const lines = own.flatMap((p) => p.lines);
    const size = lines.reduce((sum, line) => sum + line.length + 1, 0);
    let omitted: FileChange['omitted'] = null;
    if (cut) omitted = 'total-too-large';
    else if (lines.length > limits.maxFileLines || size > limits.maxFileBytes) omitted = 'file-too-large';
    else if (shownLines + lines.length > limits.maxTotalLines || shownBytes + size > limits.maxTotalBytes)
      omitted = 'total-too-large';
    if (omitted === null) {
      shownLines += lines.length;
      shownBytes += size;
    }
    return {
      ...raw,
      added: count.added,
      removed: count.removed,
      binary,
      lines: omitted === null ? lines : [],
      omitted,
    };
  });
  return { files };
}

/** Each `diff --git` section's lines from its first hunk on, and whether git called it binary. */
function splitPatches(text: string): { lines: string[]; binary: boolean }[] {
  const sections: { lines: string[]; binary: boolean }[] = [];
  let current: { lines: string[]; binary: boolean; inHunks: boolean } | null = null;
  const lines = text.split('\n');
  if (lines.at(-1) === '') lines.pop();
  for (const line of lines) {
    if (line.startsWith('diff --git ') || line.startsWith('diff --cc ')) {
      current = { lines: [], binary: false, inHunks: false };
      sections.push(current);
      continue;
    }
    if (current === null) continue;
    if (!current.inHunks) {
      if (line.startsWith('@@')) current.inHunks = true;
      else {
        if (line.startsWith('Binary files ') || line === 'GIT binary patch') current.binary = true;
        continue;
      }
    }
    current.lines.push(line);
  }
  return sections.map(({ lines, binary }) => ({ lines, binary }));
}
