/**
 * A pack directory keeps one reachability bitmap. git 2.39 uses the first bitmap it finds among a
 * repository's packs and, for every other, prints "warning: ignoring extra bitmap file" from
 * upload-pack to the client: every fetch and clone would show it once a second checkpoint (each
 * a pack with its bitmap) lands in a cache. When a checkpoint's bitmap arrives, the others go;
 * their packs stay. A git process that has a dropped bitmap mapped keeps it, and one that lists
 * the packs before the unlink and opens the bitmap after finds it gone and moves on to the next.
 */
import { access, readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';

/** Removes the bitmaps in `packDir` of packs not in `keep`, once one of `keep`'s is there. */
export async function dropOtherBitmaps(packDir: string, keep: readonly string[]): Promise<void> {
  const kept = new Set(keep.map((name) => `${name}.bitmap`));
  let present = false;
  for (const name of kept) {
    if (
      await access(join(packDir, name)).then(
        () => true,
        () => false,
      )
    )
      present = true;
  }
  // Without the new bitmap (its download or link failed), an older one still serves.
  if (!present) return;
  for (const name of await readdir(packDir)) {
    if (name.endsWith('.bitmap') && !kept.has(name)) await rm(join(packDir, name), { force: true });
  }
}
