import type { GitRunner } from './GitRunner.js';

/**
 * What each annotated tag among `oids` peels to (one `git cat-file` for all of them; other
 * objects are absent from the result), asked in the repository at `dir`. The log records it so
 * that a generation's packed-refs can carry peeled values and git can advertise refs before any
 * pack is downloaded.
 */
export async function peelTags(
  git: GitRunner,
  dir: string,
  oids: readonly string[],
): Promise<Map<string, string>> {
  const unique = [...new Set(oids)];
  if (unique.length === 0) return new Map();
  const output = await git.check(['cat-file', '--batch-check=%(objectname)'], {
    cwd: dir,
    withinSlot: true,
    input: unique.map((oid) => `${oid}^{}\n`).join(''),
  });
  const lines = output.toString('utf8').split('\n');
  const peeled = new Map<string, string>();
  unique.forEach((oid, i) => {
    const target = lines[i]?.trim();
    if (target && /^[0-9a-f]{40,64}$/.test(target) && target !== oid) peeled.set(oid, target);
  });
  return peeled;
}
