/**
 * git's object formats, parsed: commits and tags are header lines then a message; a tree is a
 * sequence of `<mode> <name>\0<raw oid>` records (gitformat-*(5); "git cat-file -p" shows the
 * same). Names are bytes; they are shown as UTF-8, which is what git itself assumes for paths.
 */

export interface Signature {
  readonly name: string;
  readonly email: string;
  /** Seconds since the epoch. */
  readonly time: number;
  /** `+0200`. */
  readonly zone: string;
}

export interface Commit {
  readonly oid: string;
  readonly tree: string;
  readonly parents: readonly string[];
  readonly author: Signature;
  readonly committer: Signature;
  /** The message, without the blank line that separates it from the headers. */
  readonly message: string;
}

export interface TreeEntry {
  readonly mode: string;
  readonly name: string;
  readonly oid: string;
  readonly kind: 'tree' | 'blob' | 'symlink' | 'submodule';
}

export interface Tag {
  readonly oid: string;
  readonly object: string;
  readonly type: string;
  readonly tag: string;
  readonly tagger: Signature | null;
  readonly message: string;
}

const EMPTY_SIGNATURE: Signature = { name: '', email: '', time: 0, zone: '+0000' };

export function parseSignature(value: string): Signature {
  const match = /^(.*?) ?<([^>]*)> (\d+) ([+-]\d{4})$/.exec(value);
  if (match === null) return { ...EMPTY_SIGNATURE, name: value };
  return {
    name: match[1] as string,
    email: match[2] as string,
    time: Number(match[3]),
    zone: match[4] as string,
  };
}

/** Header lines until the first blank line; continuation lines (a leading space) are folded in. */
function headers(text: string): { fields: [string, string][]; message: string } {
  const end = text.indexOf('\n\n');
  const head = end < 0 ? text : text.slice(0, end);
  const message = end < 0 ? '' : text.slice(end + 2);
  const fields: [string, string][] = [];
  for (const line of head.split('\n')) {
    if (line.startsWith(' ') && fields.length > 0) {
      const last = fields[fields.length - 1] as [string, string];
      last[1] += `\n${line.slice(1)}`;
      continue;
    }
    const space = line.indexOf(' ');
    fields.push(space < 0 ? [line, ''] : [line.slice(0, space), line.slice(space + 1)]);
  }
  return { fields, message };
}

export function parseCommit(oid: string, data: Buffer): Commit {
  const { fields, message } = headers(data.toString('utf8'));
  let tree = '';
  const parents: string[] = [];
  let author = EMPTY_SIGNATURE;
  let committer = EMPTY_SIGNATURE;
  for (const [key, value] of fields) {
    if (key === 'tree') tree = value;
    else if (key === 'parent') parents.push(value);
    else if (key === 'author') author = parseSignature(value);
    else if (key === 'committer') committer = parseSignature(value);
  }
  return { oid, tree, parents, author, committer, message };
}

export function parseTag(oid: string, data: Buffer): Tag {
  const { fields, message } = headers(data.toString('utf8'));
  const get = (key: string) => fields.find(([k]) => k === key)?.[1];
  const tagger = get('tagger');
  return {
    oid,
    object: get('object') ?? '',
    type: get('type') ?? '',
    tag: get('tag') ?? '',
    tagger: tagger === undefined ? null : parseSignature(tagger),
    message,
  };
}

/** A tree's entries in git's order; `hashBytes` is 20 (SHA-1) or 32 (SHA-256). */
export function parseTree(data: Buffer, hashBytes = 20): TreeEntry[] {
  const entries: TreeEntry[] = [];
  let at = 0;
  while (at < data.length) {
    const space = data.indexOf(32, at);
    const nul = data.indexOf(0, space + 1);
    if (space < 0 || nul < 0 || nul + 1 + hashBytes > data.length) break;
    const mode = data.toString('latin1', at, space);
    const name = data.toString('utf8', space + 1, nul);
    const oid = data.toString('hex', nul + 1, nul + 1 + hashBytes);
    entries.push({ mode, name, oid, kind: kindOf(mode) });
    at = nul + 1 + hashBytes;
  }
  return entries;
}

function kindOf(mode: string): TreeEntry['kind'] {
  if (mode === '40000' || mode === '040000') return 'tree';
  if (mode === '160000') return 'submodule';
  if (mode === '120000') return 'symlink';
  return 'blob';
}

/** The first line of a message. */
export function subjectOf(message: string): string {
  const line = message.split('\n', 1)[0] ?? '';
  return line.trim();
}
