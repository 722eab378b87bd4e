/**
 * Every push is received into a private repository of its own whose object store borrows the
 * cache's (objects/info/alternates) and whose refs are a snapshot of the cache's. receive-pack
 * moves the pushed objects out of git's quarantine into this private repository, never into the
 * cache, so the cache only ever holds objects that the log names: a refused or failed push leaves
 * nothing behind that a later connectivity check or push negotiation could mistake for published.
 */
import { randomUUID } from 'node:crypto';
import { link, mkdir, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

export interface ReceivedPack {
  readonly name: string;
  readonly packPath: string;
  readonly idxPath: string;
  readonly packSize: number;
  readonly idxSize: number;
}

export interface ScratchRepo {
  readonly dir: string;
  packs(): Promise<ReceivedPack[]>;
  remove(): Promise<void>;
}

/**
 * The base a push to a repository that does not exist yet is received against: no refs, no
 * objects. It lives under `root` and is removed on release, so such a push (which may be refused
 * and create nothing) leaves nothing in the shared cache either.
 */
export async function createEmptyBase(
  root: string,
): Promise<{ dir: string; name: string; objects: string; release(): Promise<void> }> {
  const dir = join(root, `${randomUUID()}.base`);
  const objects = join(dir, 'objects');
  await mkdir(objects, { recursive: true });
  await writeFile(join(dir, 'packed-refs'), '');
  return { dir, name: 'unborn', objects, release: () => rm(dir, { recursive: true, force: true }) };
}

export async function createScratchRepo(
  root: string,
  generation: { dir: string; objects: string },
): Promise<ScratchRepo> {
  const dir = join(root, `${randomUUID()}.git`);
  await mkdir(join(dir, 'objects', 'info'), { recursive: true });
  await mkdir(join(dir, 'objects', 'pack'));
  await mkdir(join(dir, 'refs'));
  await writeFile(join(dir, 'HEAD'), 'ref: refs/heads/main\n');
  await writeFile(join(dir, 'config'), '[core]\n\trepositoryformatversion = 0\n\tbare = true\n');
  await writeFile(join(dir, 'objects', 'info', 'alternates'), `${generation.objects}\n`);
  // A generation never changes, so a hard link of its refs is a stable snapshot.
  await link(join(generation.dir, 'packed-refs'), join(dir, 'packed-refs'));
  return {
    dir,
    async packs() {
      const names = await readdir(join(dir, 'objects', 'pack'));
      return Promise.all(
        names
          .filter((n) => n.endsWith('.pack'))
          .map(async (n) => {
            const name = n.slice(0, -'.pack'.length);
            const base = join(dir, 'objects', 'pack', name);
            const [pack, idx] = await Promise.all([stat(`${base}.pack`), stat(`${base}.idx`)]);
            return {
              name,
              packPath: `${base}.pack`,
              idxPath: `${base}.idx`,
              packSize: pack.size,
              idxSize: idx.size,
            };
          }),
      );
    },
    remove: () => rm(dir, { recursive: true, force: true }),
  };
}
