/**
 * What `git push --porcelain` told its user, per ref. The porcelain format (git-push(1), OUTPUT):
 * `<flag> TAB <from>:<to> TAB <summary> [(<reason>)]`, flag ` ` fast-forward, `+` forced, `-`
 * deleted, `*` new, `=` up to date, `!` rejected or failed.
 */
import type { Outcome } from './history.js';

export interface RefReport {
  readonly outcome: Outcome;
  readonly reason?: string;
}

/**
 * git failed on its first request (`GET info/refs`), before sending a command: nothing can have
 * been published. A failure of the POST (`RPC failed`) is never taken as this.
 */
const NOT_SENT = /^fatal: unable to access '[^']*': /;

/** narwal's refusal when the CAS failed and the index could not be read back. */
const OUTCOME_UNKNOWN = /outcome is unknown/;

/** The outcome of each of `refs` (destination ref names) from a finished push. */
export function parsePushReport(
  refs: readonly string[],
  output: { code: number | null; stdout: string; stderr: string; timedOut?: boolean },
): Map<string, RefReport> {
  const lines = new Map<string, RefReport>();
  for (const line of output.stdout.split('\n')) {
    const match = /^([ +\-*=!])\t([^\t]*):([^\t]+)\t(.*)$/.exec(line);
    if (match === null) continue;
    const [, flag, , to = '', summary = ''] = match;
    const reason = /\((.*)\)\s*$/.exec(summary)?.[1];
    if (flag !== '!') lines.set(to, { outcome: 'ok' });
    else if (OUTCOME_UNKNOWN.test(summary)) lines.set(to, { outcome: 'unknown', reason: reason ?? summary });
    else lines.set(to, { outcome: 'ng', reason: reason ?? summary });
  }
  const fallback: RefReport =
    output.timedOut !== true && NOT_SENT.test(firstError(output.stderr)) && !/RPC failed/.test(output.stderr)
      ? { outcome: 'error', reason: firstError(output.stderr) }
      : { outcome: 'unknown', reason: firstError(output.stderr) || `exit ${output.code}` };
  return new Map(refs.map((ref) => [ref, lines.get(ref) ?? fallback]));
}

/** The first line git printed as an error (`fatal:`, `error:`), which says what failed first. */
function firstError(stderr: string): string {
  return (
    stderr
      .split('\n')
      .map((l) => l.trim())
      .find((l) => /^(fatal|error):/.test(l)) ?? ''
  );
}
