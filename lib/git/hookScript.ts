/**
 * git's proc-receive hook: receive-pack runs it with its pkt-line protocol on stdin/stdout, and the
 * narwal process that started receive-pack answers. The hook tells that process its pid on fd 3 (a
 * socketpair inherited through receive-pack) and waits: the process either takes the hook's pipes
 * over through /proc and the hook exits, or asks for a relay by two `cat`s (hookChannel.ts). One
 * shell per push; a runtime per push would cost tens of milliseconds.
 */
import { join } from 'node:path';
import { HOOK_STDIN, HOOK_STDOUT } from './hookChannel.js';
import { ensureScript, installScript } from './installScript.js';

const PROC_RECEIVE = `#!/bin/sh
# narwal: git's proc-receive protocol is answered by the process that started receive-pack (fd 3),
# on this hook's own pipes, or through a relay when it asks for one.
exec ${HOOK_STDIN}<&0 ${HOOK_STDOUT}>&1
echo $$ >&3
read -r how <&3 || exit 1
[ "$how" = direct ] && exit 0
exec ${HOOK_STDIN}<&- ${HOOK_STDOUT}>&-
cat <&3 &
exec cat >&3
`;

/** Names the hooks' directory: a new one whenever a hook speaks to narwal in a new way. */
export const HOOKS_VERSION = 'v2';

/** Installs the hooks into `dir` (shared by the nodes of a data directory) and answers `dir`. */
export async function installHooks(dir: string): Promise<string> {
  await installScript(join(dir, 'proc-receive'), PROC_RECEIVE);
  return dir;
}

/** Puts the hooks back into `dir` if they have gone; called before each receive-pack. */
export function ensureHooks(dir: string): Promise<void> {
  return ensureScript(join(dir, 'proc-receive'), PROC_RECEIVE);
}
