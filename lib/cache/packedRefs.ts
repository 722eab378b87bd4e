/**
 * The cache keeps every ref in one `packed-refs` file replaced by rename(2), so a reader (an
 * upload-pack process) sees the whole ref set of one log position or of the next, never a mix.
 * Format: gitrepository-layout(5) and refs/packed-backend.c; the `sorted` trait lets git
 * binary-search the file instead of sorting it.
 */
export function writePackedRefs(refs: ReadonlyMap<string, string>): string {
  const names = [...refs.keys()].sort(byBytes);
  let out = '# pack-refs with: sorted \n';
  for (const name of names) out += `${refs.get(name)} ${name}\n`;
  return out;
}

export function parsePackedRefs(text: string): Map<string, string> {
  const refs = new Map<string, string>();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#') || line.startsWith('^')) continue;
    const space = line.indexOf(' ');
    if (space > 0) refs.set(line.slice(space + 1), line.slice(0, space));
  }
  return refs;
}

function byBytes(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a), Buffer.from(b));
}
