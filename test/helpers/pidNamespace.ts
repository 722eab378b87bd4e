/**
 * Launchers that start a `narwal serve` node in a PID namespace of its own, as every Lambda
 * sandbox and pool container is (unshare(1), as root): its pids mean nothing to other nodes, and
 * `kill(pid, 0)` there answers about processes of its own namespace only.
 */
import { readFileSync } from 'node:fs';

const UNSHARE = ['unshare', '--pid', '--fork', '--mount-proc', '--kill-child=SIGKILL'];

/**
 * `pid1`: unshare's forked child execs node, so node is PID 1 of its namespace (a pool
 * container's init). Otherwise a shell is PID 1 and starts a hundred processes before node, so
 * node's pid is well above anything another namespace of a few processes has (a Lambda sandbox).
 */
export function ownPidNamespace({ pid1 }: { pid1: boolean }): string[] {
  if (pid1) return UNSHARE;
  return [...UNSHARE, 'sh', '-c', 'for i in $(seq 100); do /bin/true; done; "$0" "$@"; exit $?'];
}

/** The pid of `pid` inside its own namespace (the last NSpid field of /proc/PID/status). */
export function namespacePid(pid: number): number {
  const line = readFileSync(`/proc/${pid}/status`, 'utf8')
    .split('\n')
    .find((l) => l.startsWith('NSpid:'));
  const last = line?.trim().split(/\s+/).pop();
  if (last === undefined) throw new Error(`no NSpid for ${pid}`);
  return Number(last);
}
