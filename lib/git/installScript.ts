/**
 * Installs an executable script where running gits may be executing the one in place: hooks live
 * in a data directory that several nodes share, and each node installs them when it starts while
 * its siblings' receive-packs run them.
 *
 * Writing the file in place fails both ways: open(2) for writing a file that is being executed
 * fails with ETXTBSY (the node then dies at start-up), and execve(2) of a file open for writing
 * fails with ETXTBSY too, while a shell that starts between the truncation and the end of the
 * write runs an empty or partial script (git then reports "proc-receive failed to report status").
 * So the script is written under a private name in the same directory and renamed into place:
 * rename(2) replaces the name atomically, a git that already runs the old file keeps its inode, and
 * every exec sees one complete file or the other. A file that already holds the same script is
 * left alone, so starts of the same version write nothing at all.
 */
import { randomBytes } from 'node:crypto';
import { constants } from 'node:fs';
import { access, chmod, mkdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';

const EXECUTABLE = 0o755;

export async function installScript(path: string, content: string): Promise<void> {
  if (await holds(path, content)) return;
  const dir = dirname(path);
  await mkdir(dir, { recursive: true });
  // A dot-name: git runs hooks by their exact names only, so a leftover is never executed.
  const temp = join(dir, `.${basename(path)}.${randomBytes(6).toString('hex')}`);
  try {
    await writeFile(temp, content, { mode: EXECUTABLE, flag: 'wx' });
    // The mode given to open(2) is cut by the umask.
    await chmod(temp, EXECUTABLE);
    await rename(temp, path);
  } finally {
    await rm(temp, { force: true });
  }
}

/**
 * Installs the script again if it has gone (its directory deleted under a running node, say);
 * one access(2) when it is there. A script that is there is never rewritten here.
 */
export async function ensureScript(path: string, content: string): Promise<void> {
  const present = await access(path, constants.X_OK).then(
    () => true,
    () => false,
  );
  if (!present) await installScript(path, content);
}

async function holds(path: string, content: string): Promise<boolean> {
  try {
    const [current, info] = await Promise.all([readFile(path, 'utf8'), stat(path)]);
    return current === content && (info.mode & 0o777) === EXECUTABLE;
  } catch {
    return false;
  }
}
