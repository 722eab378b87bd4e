/**
 * A pack directory keeps one reachability bitmap. git 2.39 uses the first bitmap it finds among a
 * repository's packs and, for every other, prints "warning: ignoring extra bitmap file" from
 * upload-pack to the client: every fetch and clone would show it once a second checkpoint (each
 * a pack with its bitmap) lands in a cache. When a checkpoint's bitmap arrives, or a generation
 * after it is built, the older bitmaps go; their packs stay. A newer one stays too: a generation
 * of a past state names an older checkpoint, and must not take the newest bitmap away. A git
 * process that has a dropped bitmap mapped keeps it, and one that lists the packs before the
 * unlink and opens the bitmap after finds it gone and moves on to the next pack.
 */
import { readdir, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';

/** Removes the bitmaps in `packDir` older than those of the packs in `keep` (when one of those is there). */
export async function dropOtherBitmaps(packDir: string, keep: readonly string[]): Promise<void> {
  const kept = new Set(keep.map((name) => `${name}.bitmap`));
  const modified = (name: string) =>
    stat(join(packDir, name)).then(
      (s) => s.mtimeMs,
      () => null,
    );
  let newest: number | null = null;
  for (const name of kept) {
    const at = await modified(name);
    if (at !== null && (newest === null || at > newest)) newest = at;
  }
  // Without the new bitmap (its download or link failed), an older one still serves.
  if (newest === null) return;
  for (const name of await readdir(packDir)) {
    if (!name.endsWith('.bitmap') || kept.has(name)) continue;
    const at = await modified(name);
    if (at !== null && at <= newest) await rm(join(packDir, name), { force: true });
  }
}
