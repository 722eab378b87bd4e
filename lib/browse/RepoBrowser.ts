/**
 * What the repository pages read from git: revisions resolved against the log's refs, commits,
 * trees and blobs read through a generation's cat-file (ObjectReaders.ts). Every read goes to the
 * generation built for exactly the index the request read (docs/architecture.md invariant 5);
 * its object store holds every object the log ever published, so commits of past entries
 * (`@SEQ`) and ids no ref names any more are read there too.
 *
 * Parsed commits and trees are kept in memory by repository incarnation and object id: an object
 * never changes, and keying by repository keeps one repository's objects from ever being
 * answered through another's URL.
 */
import type { RepoCache } from '../cache/RepoCache.js';
import type { GitRunner } from '../git/GitRunner.js';
import type { RefValue } from '../protocol/refValue.js';
import { refsAt } from '../wal/stateAt.js';
import type { LoadedIndex, RepoIndex } from '../wal/types.js';
import type { Wal } from '../wal/Wal.js';
import type { CatFile, GitObject, ObjectInfo } from './CatFile.js';
import { type WalkPage, walkCommits } from './commitWalk.js';
import { InvalidBrowsePath, NoSuchPath, NoSuchRevision } from './errors.js';
import { type Commit, parseCommit, parseTag, parseTree, type TreeEntry } from './gitObjects.js';
import { Lru } from './Lru.js';
import type { ObjectReaders, Reader } from './ObjectReaders.js';
import { warmUpBrowse } from './warmUp.js';

/** A revision of a page URL, resolved. */
export interface Resolved {
  /** As the URL names it: a branch, a tag, a commit id, `@SEQ` or `NAME@SEQ`. */
  readonly rev: string;
  /** The full ref it named, if any. */
  readonly ref: string | null;
  /** The entry whose state it was read in (`@SEQ`), if any. */
  readonly at: number | null;
  readonly commit: string;
  /** Path segments after the revision. */
  readonly path: readonly string[];
  /** Whether the revision is an object id (its pages never change). */
  readonly immutable: boolean;
}

export interface PathTarget {
  /** null for the root tree. */
  readonly entry: TreeEntry | null;
  /** The tree's oid for trees (the commit's tree at the root). */
  readonly oid: string;
}

type Parsed = { kind: 'commit'; value: Commit } | { kind: 'tree'; value: TreeEntry[] };

const HEX = /^[0-9a-f]{4,64}$/;

export class RepoBrowser {
  readonly #wal: Wal;
  readonly #cache: RepoCache;
  readonly #readers: ObjectReaders;
  readonly #parsed: Lru<Parsed>;

  constructor(options: { wal: Wal; cache: RepoCache; readers: ObjectReaders; parsedBytes?: number }) {
    this.#wal = options.wal;
    this.#cache = options.cache;
    this.#readers = options.readers;
    this.#parsed = new Lru<Parsed>(options.parsedBytes ?? 32 * 1024 * 1024, (p) =>
      p.kind === 'commit' ? 200 + p.value.message.length : 80 * p.value.length,
    );
  }

  /** A session on the generation of the current index `loaded`; `done()` when finished. */
  async open(loaded: LoadedIndex): Promise<BrowseSession> {
    const reader = await this.#readers.open(this.#cache.target(loaded));
    return new BrowseSession(this.#wal, loaded.index, reader, this.#parsed);
  }

  /** Loads and runs once what the first page would otherwise wait for (warmUp.ts). */
  async warmUp(git: GitRunner): Promise<void> {
    await warmUpBrowse(git, await this.#cache.emptyRepo());
  }

  close(): void {
    this.#readers.close();
  }
}

export class BrowseSession {
  readonly index: RepoIndex;
  readonly #wal: Wal;
  readonly #reader: Reader;
  readonly #parsed: Lru<Parsed>;
  readonly #prefix: string;

  constructor(wal: Wal, index: RepoIndex, reader: Reader, parsed: Lru<Parsed>) {
    this.#wal = wal;
    this.index = index;
    this.#reader = reader;
    this.#parsed = parsed;
    this.#prefix = `${index.repo}\0${index.created}\0`;
  }

  get dir(): string {
    return this.#reader.dir;
  }

  get catFile(): CatFile {
    return this.#reader.catFile;
  }

  done(): void {
    this.#reader.done();
  }

  info(oid: string): Promise<ObjectInfo | null> {
    return this.#reader.catFile.info(oid);
  }

  contents(oid: string): Promise<GitObject | null> {
    return this.#reader.catFile.contents(oid);
  }

  /** The commit `oid`; a tag is peeled to the commit it names. */
  async commit(oid: string, rev = oid): Promise<Commit> {
    const key = this.#prefix + oid;
    const known = this.#parsed.get(key);
    if (known?.kind === 'commit') return known.value;
    let object = await this.#reader.catFile.contents(oid);
    for (let depth = 0; object?.type === 'tag' && depth < 8; depth++)
      object = await this.#reader.catFile.contents(parseTag(object.oid, object.data).object);
    if (object === null || object.type !== 'commit') throw new NoSuchRevision(this.index.repo, rev);
    const commit = parseCommit(object.oid, object.data);
    this.#parsed.set(key, { kind: 'commit', value: commit });
    if (object.oid !== oid) this.#parsed.set(this.#prefix + object.oid, { kind: 'commit', value: commit });
    return commit;
  }

  async tree(oid: string): Promise<TreeEntry[]> {
    const key = this.#prefix + oid;
    const known = this.#parsed.get(key);
    if (known?.kind === 'tree') return known.value;
    const object = await this.#reader.catFile.contents(oid);
    if (object === null || object.type !== 'tree') throw new NoSuchPath(oid, '', 'not a tree');
    const entries = parseTree(object.data, oid.length === 64 ? 32 : 20);
    this.#parsed.set(key, { kind: 'tree', value: entries });
    return entries;
  }

  /** Up to `limit` commits of `git log` order from `starts`, and where the next page starts. */
  walk(starts: readonly string[], limit: number): Promise<WalkPage> {
    return walkCommits((oid) => this.commit(oid), starts, limit);
  }

  /**
   * `segments` of a page URL after the page kind: a revision, then a path. The revision is the
   * longest run of leading segments that names a branch (`refs/heads/...`), else a tag, a full
   * ref name (`refs/...`), `@SEQ` (the default branch after entry SEQ), `NAME@SEQ` (that branch or
   * tag after entry SEQ), or a commit id (full or abbreviated).
   */
  async resolve(segments: readonly string[]): Promise<Resolved> {
    checkSegments(segments);
    const repo = this.index.repo;
    if (segments.length === 0) throw new NoSuchRevision(repo, '');
    const first = segments[0] as string;
    const seqOnly = /^@(\d{1,12})$/.exec(first);
    if (seqOnly) {
      const at = Number(seqOnly[1]);
      const refs = await refsAt(this.#wal, this.index, at);
      const value = refs.get(this.index.head);
      if (value === undefined) throw new NoSuchRevision(repo, first);
      return this.#resolved(first, this.index.head, at, value, segments.slice(1));
    }
    const prefixes = segments.map((_, i) => segments.slice(0, i + 1).join('/'));
    const names = prefixes.flatMap(candidates);
    const values = await this.#wal.refValues(this.index, names);
    for (let i = prefixes.length - 1; i >= 0; i--) {
      for (const ref of candidates(prefixes[i] as string)) {
        const value = values.get(ref);
        if (value) return this.#resolved(prefixes[i] as string, ref, null, value, segments.slice(i + 1));
      }
    }
    for (let i = prefixes.length - 1; i >= 0; i--) {
      const past = /^(.+)@(\d{1,12})$/.exec(prefixes[i] as string);
      if (past === null) continue;
      const at = Number(past[2]);
      if (at > this.index.seq) continue;
      const refs = await refsAt(this.#wal, this.index, at);
      for (const ref of candidates(past[1] as string)) {
        const value = refs.get(ref);
        if (value) return this.#resolved(prefixes[i] as string, ref, at, value, segments.slice(i + 1));
      }
    }
    if (HEX.test(first)) {
      const info = await this.#reader.catFile.info(first);
      if (info !== null) {
        const commit = await this.commit(info.oid, first);
        return {
          rev: first,
          ref: null,
          at: null,
          commit: commit.oid,
          path: segments.slice(1),
          immutable: first === info.oid,
        };
      }
    }
    throw new NoSuchRevision(repo, prefixes.at(-1) ?? first);
  }

  async #resolved(
    rev: string,
    ref: string,
    at: number | null,
    value: RefValue,
    path: readonly string[],
  ): Promise<Resolved> {
    const commit = await this.commit(value.peeled ?? value.oid, rev);
    return { rev, ref, at, commit: commit.oid, path, immutable: false };
  }

  /** What `path` names in the commit's tree (the root tree for no path). */
  async lookup(commit: Commit, path: readonly string[], rev: string): Promise<PathTarget> {
    let oid = commit.tree;
    let entry: TreeEntry | null = null;
    for (const [i, name] of path.entries()) {
      if (entry !== null && entry.kind !== 'tree') throw new NoSuchPath(rev, path.join('/'));
      const found = (await this.tree(oid)).find((e) => e.name === name);
      if (found === undefined) throw new NoSuchPath(rev, path.slice(0, i + 1).join('/'));
      entry = found;
      oid = found.oid;
    }
    return { entry, oid };
  }

  /** Sizes of the blobs among `entries` (pipelined on the one cat-file). */
  async sizes(entries: readonly TreeEntry[]): Promise<Map<string, number>> {
    const blobs = entries.filter((e) => e.kind === 'blob');
    const infos = await Promise.all(blobs.map((e) => this.#reader.catFile.info(e.oid)));
    const sizes = new Map<string, number>();
    for (const info of infos) if (info) sizes.set(info.oid, info.size);
    return sizes;
  }

  /** The refs after entry `at`, or now. */
  refs(at: number | null): Promise<Map<string, RefValue>> {
    return at === null ? this.#wal.allRefs(this.index) : refsAt(this.#wal, this.index, at);
  }
}

function candidates(name: string): string[] {
  const names = [`refs/heads/${name}`, `refs/tags/${name}`];
  if (name.startsWith('refs/')) names.push(name);
  return names;
}

/** No tree holds an empty, `.` or `..` name; such a URL is refused rather than searched. */
export function checkSegments(segments: readonly string[]): void {
  for (const s of segments) {
    if (s === '' || s === '.' || s === '..')
      throw new InvalidBrowsePath(`invalid path segment ${JSON.stringify(s)}`);
  }
}
