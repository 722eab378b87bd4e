/**
 * Debian's git-lfs (3.3) as a client: a home with its filters installed, repositories that carry
 * their credentials in a helper of their own (so two clones can speak for two tokens), and large
 * files written on the fly from random bytes and removed afterwards.
 */
import { createHash, randomBytes } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, stat } from 'node:fs/promises';
import { dirname } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { gitOk, makeHome } from './gitClient.js';
import { ensureInstalled, GIT_LFS_CLIENT } from './systemPackages.js';

export const GIT_LFS = '/usr/bin/git-lfs';

/** A client home where `git lfs install --skip-repo` has put the filters in ~/.gitconfig. */
export async function makeLfsHome(): Promise<string> {
  await ensureInstalled(GIT_LFS_CLIENT);
  const home = await makeHome();
  await gitOk(['lfs', 'install', '--skip-repo'], { home });
  return home;
}

/** A credential helper that answers with `token` (any user name works). */
export function credentialHelper(token: string): string {
  return `!f() { echo username=lfs; echo password=${token}; }; f`;
}

/** Environment that gives every git (and git-lfs) started with it `token` as credentials, for a clone. */
export function withToken(token: string): Record<string, string> {
  return {
    GIT_CONFIG_COUNT: '1',
    GIT_CONFIG_KEY_0: 'credential.helper',
    GIT_CONFIG_VALUE_0: credentialHelper(token),
  };
}

/** Makes `dir` speak for `token` to every host: its own credential helper, nothing global. */
export async function useToken(dir: string, home: string, token: string): Promise<void> {
  await gitOk(['config', 'credential.helper', ''], { cwd: dir, home });
  await gitOk(['config', '--add', 'credential.helper', credentialHelper(token)], { cwd: dir, home });
}

/**
 * Writes `size` random bytes to `path` in 1 MiB pieces (never the whole file in memory) and
 * returns their SHA-256, which is the file's LFS oid.
 */
export async function writeRandomFile(path: string, size: number): Promise<string> {
  await mkdir(dirname(path), { recursive: true });
  const hash = createHash('sha256');
  async function* pieces() {
    for (let left = size; left > 0; ) {
      const piece = randomBytes(Math.min(left, 1024 * 1024));
      hash.update(piece);
      left -= piece.length;
      yield piece;
    }
  }
  await pipeline(pieces, createWriteStream(path));
  return hash.digest('hex');
}

/** The SHA-256 of a file, read as a stream. */
export async function fileSha256(path: string): Promise<string> {
  const hash = createHash('sha256');
  await pipeline(createReadStream(path), hash);
  return hash.digest('hex');
}

export async function fileSize(path: string): Promise<number> {
  return (await stat(path)).size;
}

/** The pointer file git-lfs commits for an object (https://github.com/git-lfs/git-lfs/blob/main/docs/spec.md). */
export function pointerText(oid: string, size: number): string {
  return `version https://git-lfs.github.com/spec/v1\noid sha256:${oid}\nsize ${size}\n`;
}
