/**
 * git's proc-receive hook as a relay: receive-pack runs it with its pkt-line protocol on
 * stdin/stdout, and the narwal process that started receive-pack answers on fd 3 (a socketpair
 * inherited through receive-pack). Two `cat`s cost a millisecond; a runtime per push would not.
 */
import { join } from 'node:path';
import { ensureScript, installScript } from './installScript.js';

const PROC_RECEIVE = `#!/bin/sh
# narwal: relays git's proc-receive protocol to the process that started receive-pack (fd 3).
cat <&3 &
exec cat >&3
`;

/** Installs the hooks into `dir` (shared by the nodes of a data directory) and answers `dir`. */
export async function installHooks(dir: string): Promise<string> {
  await installScript(join(dir, 'proc-receive'), PROC_RECEIVE);
  return dir;
}

/** Puts the hooks back into `dir` if they have gone; called before each receive-pack. */
export function ensureHooks(dir: string): Promise<void> {
  return ensureScript(join(dir, 'proc-receive'), PROC_RECEIVE);
}
