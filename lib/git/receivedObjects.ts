/**
 * What a push's checks ask about objects - types, sizes, a few contents - answered from its
 * received packs read in this process (packObjects.ts) and, for anything else (an object the
 * repository already had, packs too large to read here), by one `git cat-file` per question in
 * the repository the push was received into.
 */
import type { GitRunner } from './GitRunner.js';
import {
  DEFAULT_PACK_READ_LIMITS,
  type ObjectInfo,
  type ObjectType,
  type PackFiles,
  PackObjects,
  type PackReadLimits,
  packIndexOids,
} from './packObjects.js';

const OBJECT_TYPES: ReadonlySet<string> = new Set(['commit', 'tree', 'blob', 'tag']);

export class ReceivedObjects {
  readonly #git: GitRunner;
  readonly #dir: string;
  readonly #packs: readonly PackFiles[];
  readonly #packed: PackObjects | null;

  private constructor(git: GitRunner, dir: string, packs: readonly PackFiles[], packed: PackObjects | null) {
    this.#git = git;
    this.#dir = dir;
    this.#packs = packs;
    this.#packed = packed;
  }

  static async open(
    git: GitRunner,
    dir: string,
    packs: readonly PackFiles[],
    limits: PackReadLimits = DEFAULT_PACK_READ_LIMITS,
  ): Promise<ReceivedObjects> {
    const packed = packs.length > 0 ? await PackObjects.read(packs, limits) : null;
    return new ReceivedObjects(git, dir, packs, packed);
  }

  /** The repository the push was received into. */
  get dir(): string {
    return this.#dir;
  }

  /** The names of the objects the push sent (those of its packs). */
  async received(): Promise<string[]> {
    if (this.#packed) return this.#packed.oids();
    return (await Promise.all(this.#packs.map((p) => packIndexOids(p.idxPath)))).flat();
  }

  /** The type and size of each of `oids` that exists. */
  async infos(oids: readonly string[]): Promise<Map<string, ObjectInfo>> {
    const { found, rest } = lookUp(oids, (oid) => this.#packed?.info(oid));
    if (rest.length === 0) return found;
    const out = await this.#git.check(
      ['cat-file', '--batch-check=%(objectname) %(objecttype) %(objectsize)'],
      {
        cwd: this.#dir,
        withinSlot: true,
        input: `${rest.join('\n')}\n`,
      },
    );
    for (const line of out.toString('utf8').split('\n')) {
      const [oid, type, size] = line.split(' ');
      if (oid !== undefined && type !== undefined && OBJECT_TYPES.has(type) && size !== undefined)
        found.set(oid, { type: type as ObjectType, size: Number(size) });
    }
    return found;
  }

  /** The contents of each of `oids` that exists: meant for small objects. */
  async contents(oids: readonly string[]): Promise<Map<string, Buffer>> {
    const { found, rest } = lookUp(oids, (oid) => this.#packed?.contents(oid));
    if (rest.length === 0) return found;
    const out = await this.#git.check(['cat-file', '--batch'], {
      cwd: this.#dir,
      withinSlot: true,
      input: `${rest.join('\n')}\n`,
    });
    // `<oid> <type> <size>\n<contents>\n` per object, `<oid> missing\n` for an absent one
    // (git-cat-file(1), BATCH OUTPUT).
    for (let at = 0; at < out.length; ) {
      const eol = out.indexOf(10, at);
      if (eol < 0) break;
      const [oid, type, sizeText] = out.toString('utf8', at, eol).split(' ');
      if (oid === undefined || type === 'missing' || sizeText === undefined) {
        at = eol + 1;
        continue;
      }
      const size = Number(sizeText);
      if (!Number.isSafeInteger(size)) break;
      found.set(oid, out.subarray(eol + 1, eol + 1 + size));
      at = eol + 1 + size + 1;
    }
    return found;
  }
}

/** What `find` knows of each of `oids` (once each), and the ones it does not: for git to answer. */
function lookUp<T>(
  oids: readonly string[],
  find: (oid: string) => T | undefined,
): { found: Map<string, T>; rest: string[] } {
  const found = new Map<string, T>();
  const rest: string[] = [];
  for (const oid of new Set(oids)) {
    const value = find(oid);
    if (value) found.set(oid, value);
    else rest.push(oid);
  }
  return { found, rest };
}
