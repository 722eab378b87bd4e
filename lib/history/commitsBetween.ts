/**
 * For a moved ref: the commits between its old and new value, `git log`-style one-liners capped
 * with a count of the rest, and whether the move was a fast-forward. Runs the real git in a
 * complete generation, whose object store holds every object the log ever published.
 */
import type { GitRunner } from '../git/GitRunner.js';
import { mapLimit } from '../util/mapLimit.js';
import type { RefChange } from './diffStates.js';

export interface CommitLine {
  readonly oid: string;
  readonly author: string;
  readonly subject: string;
}

export interface MoveDetail {
  readonly ref: string;
  readonly old: string;
  readonly new: string;
  /** false when the ref or its target is not a commit (a tag of a tree, say). */
  readonly commits: boolean;
  readonly fastForward: boolean;
  /** The newest `cap` commits reachable from new and not from old. */
  readonly added: readonly CommitLine[];
  /** How many commits new has that old has not, and the other way round (0 for a fast-forward). */
  readonly addedCount: number;
  readonly removedCount: number;
}

export const DEFAULT_COMMIT_CAP = 20;
/** Moved refs detailed per diff; the rest are listed without commits. */
export const MAX_DETAILED_MOVES = 50;

export async function commitsBetween(
  git: GitRunner,
  dir: string,
  moved: readonly RefChange[],
  cap = DEFAULT_COMMIT_CAP,
): Promise<MoveDetail[]> {
  return mapLimit(moved.slice(0, MAX_DETAILED_MOVES), 2, (change) => detail(git, dir, change, cap));
}

async function detail(git: GitRunner, dir: string, change: RefChange, cap: number): Promise<MoveDetail> {
  const old = change.old as string;
  const next = change.new as string;
  const none = {
    ref: change.ref,
    old,
    new: next,
    commits: false,
    fastForward: false,
    added: [],
    addedCount: 0,
    removedCount: 0,
  };
  const peeled = await git.run(['--git-dir', dir, 'rev-parse', `${old}^{commit}`, `${next}^{commit}`]);
  if (peeled.code !== 0) return none;
  const [a, b] = peeled.stdout.toString('utf8').trim().split('\n');
  if (a === undefined || b === undefined) return none;
  const counts = await git.check(['--git-dir', dir, 'rev-list', '--left-right', '--count', `${a}...${b}`]);
  const [removedCount, addedCount] = counts.toString('utf8').trim().split(/\s+/).map(Number);
  const log = await git.check([
    '--git-dir',
    dir,
    'log',
    `--max-count=${cap}`,
    '--format=%H%x00%an%x00%s',
    `${a}..${b}`,
  ]);
  const added = log
    .toString('utf8')
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => {
      const [oid = '', author = '', subject = ''] = line.split('\0');
      return { oid, author, subject };
    });
  return {
    ref: change.ref,
    old,
    new: next,
    commits: true,
    fastForward: removedCount === 0,
    added,
    addedCount: addedCount ?? 0,
    removedCount: removedCount ?? 0,
  };
}
