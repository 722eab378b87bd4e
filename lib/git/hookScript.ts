/**
 * git's proc-receive hook as a relay: receive-pack runs it with its pkt-line protocol on
 * stdin/stdout, and the narwal process that started receive-pack answers on fd 3 (a socketpair
 * inherited through receive-pack). Two `cat`s cost a millisecond; a runtime per push would not.
 */
import { chmod, mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

const PROC_RECEIVE = `#!/bin/sh
# narwal: relays git's proc-receive protocol to the process that started receive-pack (fd 3).
cat <&3 &
exec cat >&3
`;

export async function installHooks(dir: string): Promise<string> {
  await mkdir(dir, { recursive: true });
  const path = join(dir, 'proc-receive');
  await writeFile(path, PROC_RECEIVE);
  await chmod(path, 0o755);
  return dir;
}
