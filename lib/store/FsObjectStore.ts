/**
 * The embedded default store: S3's semantics on a local directory, safe for several processes
 * sharing it.
 * - Every write lands by rename(2) from a private temp file, so readers see old or new, never half.
 * - Create-only is link(2), which fails atomically when the key exists (412).
 * - If-Match takes a per-key lock file with O_EXCL; a second conditional writer that finds the lock
 *   held answers 409 ConditionalConflict at once, exactly as S3 does for racing conditional writes.
 * - Etags are the quoted MD5 of the content, as S3 gives for single-part objects.
 * Unconditional writes do not take the lock (S3 gives them last-writer-wins too); narwal never
 * writes a compare-and-swapped key unconditionally.
 *
 * The steps that touch no more than a small object - a link, a rename, an unlink, a read or write
 * of up to SMALL_BYTES - are synchronous calls. An asynchronous one is handed to libuv's thread
 * pool and back, which on a 2-core machine costs 30-40 microseconds of CPU in thread wake-ups
 * against 2-3 for the call itself, and a push makes dozens of them (its entry, its index, the
 * presence records of its leases). Large bodies, file bodies and walks stay asynchronous.
 */
import { createHash, randomBytes } from 'node:crypto';
import {
  createReadStream,
  linkSync,
  mkdirSync,
  readFileSync,
  renameSync,
  rmdirSync,
  statSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs';
import {
  access,
  copyFile,
  link,
  mkdir,
  open,
  readdir,
  readFile,
  rename,
  stat,
  unlink,
  utimes,
  writeFile,
} from 'node:fs/promises';
import { dirname, join, relative, sep } from 'node:path';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { isCode } from '../util/isCode.js';
import { ContentCheck } from './ContentCheck.js';
import { DurableFileWriter } from './DurableFileWriter.js';
import {
  ConditionalConflict,
  isStoreError,
  NotFound,
  PreconditionFailed,
  StoreUnavailable,
} from './errors.js';
import type {
  FileBody,
  GetOptions,
  HeadResult,
  ListPage,
  NotModified,
  ObjectInfo,
  ObjectStore,
  ObjectStream,
  PutBody,
  PutOptions,
  PutResult,
  PutStreamOptions,
  StoredObject,
  StreamOptions,
} from './ObjectStore.js';

/** Bodies and objects up to this size are written and read with synchronous calls (see above). */
const SMALL_BYTES = 1024 * 1024;

/** A lock older than this belongs to a crashed writer (a conditional write takes milliseconds). */
const STALE_LOCK_MS = 30_000;

/**
 * Chunks a streamed body is written in: writes of 64 KiB (a socket's chunks) cost a system call
 * and a trip to libuv's pool each, which at hundreds of MB/s is much of the time.
 */
const STREAM_WRITE_BYTES = 4 * 1024 * 1024;
/** Bytes of a streamed body between background flushes to disk (DurableFileWriter.ts). */
const STREAM_SYNC_BYTES = 16 * 1024 * 1024;

export class FsObjectStore implements ObjectStore {
  readonly #objects: string;
  readonly #tmp: string;
  readonly #locks: string;
  readonly #keepEmptyDirs: boolean;

  /**
   * `keepEmptyDirs`: leave the directories a delete empties, for a store whose keys come and go
   * under a bounded set of prefixes (presence records, one directory per repository): making and
   * removing a directory costs more than the record itself.
   */
  constructor(root: string, options: { keepEmptyDirs?: boolean } = {}) {
    this.#keepEmptyDirs = options.keepEmptyDirs ?? false;
    this.#objects = join(root, 'objects');
    this.#tmp = join(root, 'tmp');
    this.#locks = join(root, 'locks');
  }

  async get(key: string, options?: GetOptions): Promise<StoredObject | NotModified> {
    const body = await this.#read(key);
    const etag = etagOf(body);
    if (options?.ifNoneMatch !== undefined && sameEtag(options.ifNoneMatch, etag)) {
      return { notModified: true, etag };
    }
    return { notModified: false, body, etag };
  }

  async getStream(key: string, options?: StreamOptions): Promise<ObjectStream> {
    const path = this.#path(key);
    try {
      const handle = await open(path, 'r');
      const { size } = await handle.stat();
      const range = options?.range;
      if (range === undefined) return { body: handle.createReadStream({ highWaterMark: 1024 * 1024 }), size };
      const end = Math.min(range.end ?? size - 1, size - 1);
      return {
        body: handle.createReadStream({ start: range.start, end, highWaterMark: 1024 * 1024 }),
        size: Math.max(0, end - range.start + 1),
      };
    } catch (error) {
      throw this.#translate(error, key);
    }
  }

  async stat(key: string): Promise<ObjectInfo> {
    try {
      const { size, mtimeMs } = await stat(this.#path(key));
      return { size, modified: Math.floor(mtimeMs) };
    } catch (error) {
      throw this.#translate(error, key);
    }
  }

  /**
   * Hashes while it writes to a private temp file, then links it into place like any create-only
   * put. The file is flushed to disk (fsync) before it is linked: a client may drop its own
   * copy once told the upload is done.
   */
  async putStream(key: string, body: Readable, options: PutStreamOptions): Promise<void> {
    const path = this.#path(key);
    await mkdir(this.#tmp, { recursive: true });
    const temp = join(this.#tmp, `${process.pid}-${randomBytes(8).toString('hex')}`);
    try {
      await pipeline(
        body,
        new ContentCheck(key, options),
        // On disk (fsync(2)) before it finishes, flushed as it goes (DurableFileWriter.ts).
        new DurableFileWriter(temp, { writeBytes: STREAM_WRITE_BYTES, syncBytes: STREAM_SYNC_BYTES }),
      );
      for (let attempt = 1; ; attempt++) {
        try {
          await mkdir(dirname(path), { recursive: true });
          if (options.ifNoneMatch === '*') this.#createOnly(temp, path, key);
          else await rename(temp, path);
          return;
        } catch (error) {
          const parentGone =
            isCode(error, 'ENOENT') || (error instanceof NotFound && isCode(error.cause, 'ENOENT'));
          if (!parentGone || attempt >= 5) throw error;
        }
      }
    } catch (error) {
      if (isStoreError(error)) throw error;
      throw this.#translate(error, key);
    } finally {
      await unlink(temp).catch(() => {});
    }
  }

  async head(key: string): Promise<HeadResult> {
    // Hashed as a stream: a HEAD of a pack must not load the pack into memory.
    const path = this.#path(key);
    try {
      const { size, mtimeMs } = await stat(path);
      return { etag: await fileEtag({ path, size }), size, modified: Math.floor(mtimeMs) };
    } catch (error) {
      throw this.#translate(error, key);
    }
  }

  async put(key: string, body: PutBody, options?: PutOptions): Promise<PutResult> {
    const path = this.#path(key);
    const temp = await this.#stage(body);
    let moved = false;
    try {
      // The parent directory is made when it is missing, which is rare: a concurrent delete may
      // also remove it (emptied) just before the write, so make it and retry.
      for (let attempt = 1; ; attempt++) {
        try {
          if (options?.ifNoneMatch === '*') {
            this.#createOnly(temp.path, path, key);
          } else if (options?.ifMatch !== undefined) {
            this.#replaceIfMatch(temp.path, path, key, options.ifMatch);
            moved = true;
          } else {
            renameSync(temp.path, path);
            moved = true;
          }
          return { etag: temp.etag };
        } catch (error) {
          const parentGone =
            isCode(error, 'ENOENT') || (error instanceof NotFound && isCode(error.cause, 'ENOENT'));
          if (!parentGone || attempt >= 5) throw error;
          mkdirSync(dirname(path), { recursive: true });
        }
      }
    } finally {
      // A rename took the staged name along; a link left it behind.
      if (!moved) quietly(() => unlinkSync(temp.path));
    }
  }

  async list(prefix: string, options?: { startAfter?: string; limit?: number }): Promise<ListPage> {
    const limit = options?.limit ?? 1000;
    // Walk only the directory that holds the prefix, not the whole store.
    const slash = prefix.lastIndexOf('/');
    const baseKey = slash < 0 ? '' : prefix.slice(0, slash);
    const keys: string[] = [];
    await this.#walk(baseKey === '' ? this.#objects : this.#path(baseKey), keys);
    const startAfter = options?.startAfter;
    const matching = keys
      .filter((k) => k.startsWith(prefix) && (startAfter === undefined || k > startAfter))
      .sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    const page = matching.slice(0, limit);
    return matching.length > limit ? { keys: page, next: page[page.length - 1] } : { keys: page };
  }

  async renew(key: string): Promise<void> {
    const now = new Date();
    try {
      await utimes(this.#path(key), now, now);
    } catch (error) {
      throw this.#translate(error, key);
    }
  }

  async delete(key: string): Promise<void> {
    const path = this.#path(key);
    try {
      unlinkSync(path);
    } catch (error) {
      if (!isCode(error, 'ENOENT')) throw this.#translate(error, key);
    }
    if (this.#keepEmptyDirs) return;
    // S3 has no directories: don't leave empty ones behind (short-lived keys would pile them up).
    for (let dir = dirname(path); dir.startsWith(`${this.#objects}${sep}`); dir = dirname(dir)) {
      if (!quietly(() => rmdirSync(dir))) break;
    }
  }

  #createOnly(tempPath: string, path: string, key: string): void {
    try {
      linkSync(tempPath, path);
    } catch (error) {
      if (isCode(error, 'EEXIST')) throw new PreconditionFailed(key);
      throw this.#translate(error, key);
    }
  }

  #replaceIfMatch(tempPath: string, path: string, key: string, ifMatch: string): void {
    const lock = join(this.#locks, createHash('sha1').update(key).digest('hex'));
    this.#acquire(lock, key, tempPath);
    try {
      let current: Buffer;
      try {
        current = readFileSync(path);
      } catch (error) {
        if (isCode(error, 'ENOENT')) throw new PreconditionFailed(key);
        throw this.#translate(error, key);
      }
      if (!sameEtag(ifMatch, etagOf(current))) throw new PreconditionFailed(key);
      renameSync(tempPath, path);
    } finally {
      quietly(() => unlinkSync(lock));
    }
  }

  /**
   * Takes the key's lock: a hard link to the staged body, made only if no lock is there (a link
   * is atomic like O_EXCL, and costs a fraction of creating a file). Its age is the staged
   * body's, written moments before.
   */
  #acquire(lock: string, key: string, staged: string): void {
    for (let attempt = 0; attempt < 3; attempt++) {
      try {
        linkSync(staged, lock);
        return;
      } catch (error) {
        if (isCode(error, 'ENOENT')) {
          mkdirSync(this.#locks, { recursive: true });
          continue;
        }
        if (!isCode(error, 'EEXIST')) throw this.#translate(error, key);
        let age = 0;
        try {
          age = Date.now() - statSync(lock).mtimeMs;
        } catch {}
        if (age < STALE_LOCK_MS) throw new ConditionalConflict(key);
        quietly(() => unlinkSync(lock));
      }
    }
    throw new ConditionalConflict(key);
  }

  /** Writes the body to a private temp file and returns its etag. */
  async #stage(body: PutBody): Promise<{ path: string; etag: string }> {
    const path = join(this.#tmp, `${process.pid}-${randomBytes(8).toString('hex')}`);
    // The staging directory is made when it is missing (the first write, or deleted since).
    for (let attempt = 1; ; attempt++) {
      try {
        if (Buffer.isBuffer(body)) {
          if (body.length <= SMALL_BYTES) writeFileSync(path, body);
          else await writeFile(path, body);
          return { path, etag: etagOf(body) };
        }
        if (body.size <= SMALL_BYTES) return { path, etag: stageSmallFile(body, path) };
        if (!(body.immutable && (await linked(body.path, path)))) await copyFile(body.path, path);
        return { path, etag: await fileEtag(body) };
      } catch (error) {
        // The body's own file missing is the caller's error, not a missing directory.
        const sourceGone = !Buffer.isBuffer(body) && !(await exists(body.path));
        if (!isCode(error, 'ENOENT') || attempt >= 3 || sourceGone) throw error;
        await mkdir(this.#tmp, { recursive: true });
      }
    }
  }

  async #read(key: string): Promise<Buffer> {
    const path = this.#path(key);
    try {
      // Read whole either way (the caller parses it at once): a small one without the thread pool.
      const { size } = statSync(path);
      return size <= SMALL_BYTES ? readFileSync(path) : await readFile(path);
    } catch (error) {
      throw this.#translate(error, key);
    }
  }

  /**
   * Adds the keys under `dir` to `into`. A store that keeps emptied directories removes the empty
   * ones below `dir` it walks through: directories its deletes left (once one per presence lease,
   * when a lease's id took two path segments) would otherwise cost every later list a readdir
   * each. A write racing into one finds its parent gone and makes it again (put). True when `dir`
   * was empty.
   */
  async #walk(dir: string, into: string[]): Promise<boolean> {
    let entries: import('node:fs').Dirent[];
    try {
      entries = await readdir(dir, { withFileTypes: true });
    } catch (error) {
      if (isCode(error, 'ENOENT') || isCode(error, 'ENOTDIR')) return false;
      throw error;
    }
    let left = entries.length;
    for (const entry of entries) {
      const full = join(dir, entry.name);
      if (!entry.isDirectory()) into.push(relative(this.#objects, full).split(sep).join('/'));
      else if ((await this.#walk(full, into)) && this.#keepEmptyDirs && quietly(() => rmdirSync(full)))
        left--;
    }
    return left === 0;
  }

  #path(key: string): string {
    if (
      key === '' ||
      key.startsWith('/') ||
      key.split('/').some((part) => part === '' || part === '.' || part === '..')
    ) {
      throw new StoreUnavailable(key, `invalid object key: ${JSON.stringify(key)}`);
    }
    return join(this.#objects, ...key.split('/'));
  }

  #translate(error: unknown, key: string): Error {
    if (isCode(error, 'ENOENT') || isCode(error, 'ENOTDIR') || isCode(error, 'EISDIR')) {
      return new NotFound(key, { cause: error });
    }
    if (
      error instanceof Error &&
      'code' in error &&
      typeof error.code === 'string' &&
      error.code !== 'StoreUnavailable'
    ) {
      return new StoreUnavailable(key, `filesystem store: ${error.message}`, { cause: error });
    }
    return error instanceof Error ? error : new StoreUnavailable(key, String(error));
  }
}

function etagOf(body: Buffer): string {
  return `"${createHash('md5').update(body).digest('hex')}"`;
}

async function fileEtag(body: FileBody): Promise<string> {
  const hash = createHash('md5');
  await pipeline(createReadStream(body.path), hash);
  return `"${hash.digest('hex')}"`;
}

/**
 * Stages a small file body without the thread pool (a push's pack and index are a few KB, and a
 * stream's open, reads and close are a trip to the pool and back each): linked when it is
 * immutable and the file system allows, else copied from the bytes read for its etag.
 */
function stageSmallFile(body: FileBody, to: string): string {
  const bytes = readFileSync(body.path);
  if (!(body.immutable && linkedSync(body.path, to))) writeFileSync(to, bytes);
  return etagOf(bytes);
}

/** S3 accepts etags with or without their quotes. */
function sameEtag(a: string, b: string): boolean {
  return a.replace(/"/g, '') === b.replace(/"/g, '');
}

/** Links `from` at `to`; false when the file system cannot (another device, no hard links). */
async function linked(from: string, to: string): Promise<boolean> {
  try {
    await link(from, to);
    return true;
  } catch (error) {
    if (cannotLink(error)) return false;
    throw error;
  }
}

/** linked, without the thread pool. */
function linkedSync(from: string, to: string): boolean {
  try {
    linkSync(from, to);
    return true;
  } catch (error) {
    if (cannotLink(error)) return false;
    throw error;
  }
}

function cannotLink(error: unknown): boolean {
  return isCode(error, 'EXDEV') || isCode(error, 'EPERM') || isCode(error, 'EMLINK');
}

/** Runs a call whose failure does not matter; says whether it succeeded. */
function quietly(call: () => void): boolean {
  try {
    call();
    return true;
  } catch {
    return false;
  }
}

async function exists(path: string): Promise<boolean> {
  return access(path).then(
    () => true,
    () => false,
  );
}
