/**
 * Repeatable fetches answered without git: once upload-pack has served a fetch with no haves
 * (a full clone, or a shallow or filtered fetch such as a CI checkout's `--depth=1`) of a
 * generation, the pack cache hook gives that pack a second name from what the fetch asked for
 * (`<key>.clone`, protocol/repeatableFetch.ts), and the lines git wrote before the pack (the
 * shallow boundary) are kept beside it (`<key>.v2.shallow` or `<key>.v0.shallow`,
 * protocol/shallowInfo.ts). The next identical fetch is answered from those files here, framed
 * exactly as upload-pack frames a pack (the lines, the preamble, the pack on sideband band 1, a
 * flush-pkt), so a storm costs file reads, not an upload-pack, a hook and a relay per fetch. A
 * generation is immutable and its cached packs go with it, so the names never go stale.
 */
import { randomBytes } from 'node:crypto';
import { constants } from 'node:fs';
import { type FileHandle, mkdir, open, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { CLONE_SUFFIX, PACK_CACHE_DIR } from '../git/packCacheHook.js';
import { encodePktLine, encodeSideband, FLUSH_PKT } from '../protocol/pktLine.js';
import type { RepeatableFetch } from '../protocol/repeatableFetch.js';
import { linesBeforePack, PACK_HEADER } from '../protocol/shallowInfo.js';
import { buffersAfter } from '../util/buffersAfter.js';
import type { RecyclingBody } from '../util/RecyclingBody.js';
import { settledWithin } from '../util/settledWithin.js';
import { KeptLines } from './KeptLines.js';

/** A pack's 12-byte header and 20-byte trailer: anything shorter is not a pack. */
const MIN_PACK_BYTES = 32;
/** Per read: 16 side-band-64k packets. A clone in flight holds about this much, where the
 * upload-pack it replaces held some 26 MiB; larger reads cost less CPU per byte. */
const READ_BYTES = 1024 * 1024;
/** Buffers per read, well under IOV_MAX (1024): the 995-byte packets of `side-band` are many. */
const MAX_SLOTS = 256;

/** A fetch whose answer is kept: what names it, and how its answer is framed. */
export interface CachedFetch {
  /** Names the pack and the lines before it (protocol/repeatableFetch.ts). */
  readonly key: string;
  /** The framing of the answer: protocol v2's sections, or v0/v1's lines. */
  readonly version: 'v2' | 'v0';
  /** The answer's packet directly before the pack: `NAK` (v0/v1) or the `packfile` header (v2). */
  readonly preamble: string;
  /** The largest data part of one sideband packet the client accepts. */
  readonly sidebandData: number;
  /**
   * The suffix of the file that keeps git's lines before the preamble (the shallow boundary), or
   * null when the answer has none (a full clone: nothing but the preamble comes before its pack).
   */
  readonly linesSuffix: string | null;
}

/** How the answer to `fetch` is kept and framed. */
export function cachedFetchOf(fetch: RepeatableFetch): CachedFetch {
  return {
    key: fetch.key,
    version: fetch.version,
    preamble: PACK_HEADER[fetch.version],
    sidebandData: fetch.sidebandData,
    // Keyed apart by version: v2 frames the boundary as a section, v0 as lines and a flush-pkt,
    // and the two write it in different cases (upload-pack.c, send_shallow_info, receive_needs).
    linesSuffix: fetch.full ? null : `.${fetch.version}${SHALLOW_SUFFIX}`,
  };
}

/** The lines before kept packs, by file: a storm of identical fetches reads them once. */
const keptLines = new KeptLines(4 * 1024 * 1024);

/** The suffix of the file that keeps the lines before a pack, after the version. */
export const SHALLOW_SUFFIX = '.shallow';

/** The kept answer to `fetch` in the generation at `dir`: its pack, open, and the lines before it. */
export async function openCachedAnswer(
  dir: string,
  fetch: CachedFetch,
): Promise<{ readonly pack: FileHandle; readonly size: number; readonly lines: Buffer } | null> {
  let lines: Buffer = Buffer.alloc(0);
  if (fetch.linesSuffix !== null) {
    // Kept before the pack is named (keepLinesBeforePack), so a pack without them is one whose
    // lines are still being written, or were lost: either way git answers.
    const path = join(dir, PACK_CACHE_DIR, `${fetch.key}${fetch.linesSuffix}`);
    const read = keptLines.get(path) ?? (await readFile(path).catch(() => null));
    if (read === null) return null;
    keptLines.set(path, read);
    lines = read;
  }
  const pack = await openClonePack(dir, fetch);
  return pack ? { pack: pack.handle, size: pack.size, lines } : null;
}

/**
 * Relays upload-pack's answer to `fetch` and keeps the lines it writes before the pack in the
 * generation at `dir`, for openCachedAnswer. `kept` settles once they are written, or once it is
 * clear that there is nothing to keep (an answer of another kind, or one abandoned early).
 */
export function keepLinesBeforePack(
  answer: Readable,
  dir: string,
  fetch: CachedFetch & { readonly linesSuffix: string },
): { readonly body: Readable; readonly kept: Promise<void> } {
  let settle = () => {};
  const kept = new Promise<void>((resolve) => {
    settle = resolve;
  });
  let start: Buffer | null = Buffer.alloc(0);
  const tap = new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      if (start !== null) {
        start = Buffer.concat([start, chunk]);
        const found = linesBeforePack(start, fetch.version);
        if (found.kind !== 'more') {
          start = null;
          if (found.kind === 'lines') void keepLines(dir, fetch, found.bytes).finally(settle);
          else settle();
        }
      }
      callback(null, chunk);
    },
  });
  tap.once('close', () => {
    if (start !== null) settle();
  });
  void pipeline(answer, tap).catch(() => {});
  return { body: tap, kept };
}

/** Writes the lines under their name whole or not at all (a rename), so a reader never sees a part. */
async function keepLines(dir: string, fetch: CachedFetch & { readonly linesSuffix: string }, lines: Buffer) {
  const cache = join(dir, PACK_CACHE_DIR);
  const part = join(cache, `.${fetch.key}.${randomBytes(6).toString('hex')}`);
  try {
    await mkdir(cache, { recursive: true });
    await writeFile(part, lines);
    await rename(part, join(cache, `${fetch.key}${fetch.linesSuffix}`));
  } catch {
    // Not kept: the next identical fetch goes to git, which writes them again.
    await rm(part, { force: true });
  }
}

/** The cached pack of `clone` in the generation at `dir`, open for reading, and its size; null if none. */
export async function openClonePack(
  dir: string,
  clone: Pick<CachedFetch, 'key'>,
): Promise<{ readonly handle: FileHandle; readonly size: number } | null> {
  let handle: FileHandle;
  try {
    handle = await open(join(dir, PACK_CACHE_DIR, `${clone.key}${CLONE_SUFFIX}`), constants.O_RDONLY);
  } catch {
    return null;
  }
  const size = await handle.stat().then(
    (s) => s.size,
    () => 0,
  );
  if (size >= MIN_PACK_BYTES) return { handle, size };
  await handle.close();
  return null;
}

/**
 * The bytes of clonePackBody's answer to `clone` for a pack of `size` bytes after `lines`: what
 * an answer kept whole in memory holds (wholeClonePackAnswer).
 */
export function wholeAnswerBytes(
  clone: Pick<CachedFetch, 'preamble' | 'sidebandData'>,
  size: number,
  lines: Buffer,
): number {
  const preamble = PKT_LEN + Buffer.byteLength(clone.preamble);
  return lines.length + preamble + Math.ceil(size / clone.sidebandData) * HEADER + size + FLUSH_PKT.length;
}

/**
 * The same answer as clonePackBody's, whole in one buffer, for an answer small enough to be kept
 * in memory (StateAnswers.ts). Reads `size` bytes of `pack` and throws if there are fewer (a
 * kept pack is written whole and never changes, so fewer means the file is not the one named).
 * The caller closes `pack`.
 */
export async function wholeClonePackAnswer(
  clone: Pick<CachedFetch, 'preamble' | 'sidebandData'>,
  pack: FileHandle,
  size: number,
  lines: Buffer = Buffer.alloc(0),
): Promise<Buffer> {
  // The pack is read straight into its packets' data parts (scatter reads of up to MAX_SLOTS
  // packets each), so the answer is the only buffer made and no byte is copied here: on a
  // virtual machine the first writes to fresh memory cost more than the copy itself (3.6 MB read
  // whole and then framed took 30 ms of CPU on a 2-core one, half of it in the second buffer).
  const answer = Buffer.allocUnsafe(wholeAnswerBytes(clone, size, lines));
  let end = lines.copy(answer, 0);
  end += encodePktLine(clone.preamble).copy(answer, end);
  const parts: Buffer[] = [];
  for (let from = 0; from < size; from += clone.sidebandData) {
    const data = Math.min(clone.sidebandData, size - from);
    writeBand1Header(answer, end, data);
    parts.push(answer.subarray(end + HEADER, end + HEADER + data));
    end += HEADER + data;
  }
  for (let i = 0, position = 0; i < parts.length; i += MAX_SLOTS) {
    const batch = parts.slice(i, i + MAX_SLOTS);
    await readFully(pack, batch, position, size);
    position += batch.reduce((sum, part) => sum + part.length, 0);
  }
  FLUSH_PKT.copy(answer, end);
  return answer;
}

/**
 * Fills `parts` from `pack` at `position` and on, one scatter read at a time, or throws if the
 * file ends first (at most `size` bytes were expected of it).
 */
async function readFully(
  pack: FileHandle,
  parts: readonly Buffer[],
  position: number,
  size: number,
): Promise<void> {
  let left = parts;
  for (let at = position; left.length > 0; ) {
    const { bytesRead } = await pack.readv(left, at);
    if (bytesRead === 0) throw new Error(`the cached pack ended at ${at} of its ${size} bytes`);
    at += bytesRead;
    left = buffersAfter(left, bytesRead);
  }
}

/**
 * upload-pack's answer to `clone`, read from `pack` after the `lines` git wrote before its
 * preamble; the handle is closed and `done` called once the answer is sent or abandoned. A read
 * failure midway is reported on band 3, which git prints and fails on.
 */
export function clonePackBody(
  clone: Pick<CachedFetch, 'preamble' | 'sidebandData'>,
  pack: FileHandle,
  done: () => void,
  lines: Buffer = Buffer.alloc(0),
): Readable & RecyclingBody {
  // Buffers given out, by their memory, to be given back to the pool once written.
  const lent = new Map<ArrayBufferLike, Buffer>();
  async function* frames(): AsyncGenerator<Buffer> {
    yield Buffer.concat([lines, encodePktLine(clone.preamble)]);
    // The file is read straight into the packets' data parts, several per read and all in one
    // buffer, so no byte of the pack is copied in this process and each read is one chunk.
    const size = HEADER + clone.sidebandData;
    const slots = Math.min(MAX_SLOTS, Math.ceil(READ_BYTES / clone.sidebandData));
    try {
      for (;;) {
        const chunk = chunks.take(slots * size);
        const parts = Array.from({ length: slots }, (_, i) =>
          chunk.subarray(i * size + HEADER, (i + 1) * size),
        );
        const { bytesRead } = await pack.readv(parts);
        if (bytesRead === 0) break;
        let left = bytesRead;
        let end = 0;
        while (left > 0) {
          const data = Math.min(left, clone.sidebandData);
          writeBand1Header(chunk, end, data);
          end += HEADER + data;
          left -= data;
        }
        lent.set(chunk.buffer, chunk);
        yield chunk.subarray(0, end);
      }
    } catch (error) {
      yield* encodeSideband(
        3,
        `narwal: reading the cached pack failed (${String(error)}); retry the clone\n`,
      );
      return;
    }
    yield FLUSH_PKT;
  }
  const body = Object.assign(Readable.from(frames(), { objectMode: false }), {
    recycle(chunk: Buffer) {
      const whole = lent.get(chunk.buffer);
      if (!whole) return;
      lent.delete(chunk.buffer);
      chunks.give(whole);
    },
  });
  let finished = false;
  body.once('close', () => {
    if (finished) return;
    finished = true;
    void pack.close().finally(done);
  });
  return body;
}

/**
 * The repeatable fetches this node is answering with upload-pack, by generation and key. An
 * identical fetch arriving meanwhile waits for the files that keep that answer (the pack the pack
 * cache hook names when it is done, and the lines before it), and is then answered from them,
 * instead of starting an upload-pack of its own that would only wait inside the hook for the same
 * pack: a clone or CI storm meeting a new generation costs one upload-pack, not one per fetch in
 * flight (each holding a git slot and relaying through pipes).
 */
export class ClonePacking {
  /** This node's packers, by generation and key: settled once their files are kept (or never will be). */
  readonly #running = new Map<string, { readonly done: Promise<void>; waiting: number }>();

  constructor(private readonly options: { readonly maxWaitMs: number }) {}

  /** The longest a fetch waits for an identical one of this node to be packed. */
  get maxWaitMs(): number {
    return this.options.maxWaitMs;
  }

  /**
   * The kept answer to `fetch` in `dir`, waiting for it (at most maxWaitMs) while an identical
   * fetch of this node is making it. Without a pack the caller runs upload-pack; when `packing` is
   * given, identical fetches wait for it, and the caller must pass it its upload-pack's exit (or
   * any settled promise if upload-pack did not start), once the lines before the pack are kept;
   * `waited` says whether any fetch has waited for it so far.
   *
   * A fetch waits for the packer itself, not for its files: they are named by the pack cache hook
   * only once the pack is whole, and looking for them over and over cost a storm's waiting fetches
   * more CPU than the answers they then got from memory.
   */
  async open(
    dir: string,
    fetch: CachedFetch,
  ): Promise<
    | {
        readonly pack: FileHandle;
        readonly size: number;
        readonly lines: Buffer;
        readonly packing?: undefined;
        readonly waited?: undefined;
      }
    | {
        readonly pack: null;
        readonly packing?: (exit: Promise<unknown>) => void;
        readonly waited?: () => boolean;
      }
  > {
    const key = `${dir}\0${fetch.key}${fetch.linesSuffix ?? ''}`;
    const running = this.#running.get(key);
    if (running) {
      running.waiting++;
      const settled = await settledWithin(running.done, this.options.maxWaitMs);
      const found = await openCachedAnswer(dir, fetch);
      if (found) return found;
      // The packer is still at it after the longest wait: this fetch goes to git on its own.
      if (!settled) return { pack: null };
      // It ended without kept files: the first fetch to get here packs in its place.
      if (this.#running.has(key)) return this.open(dir, fetch);
    } else {
      const found = await openCachedAnswer(dir, fetch);
      if (found) return found;
      if (this.#running.has(key)) return this.open(dir, fetch);
    }
    // Claimed before any await, so two clones arriving together do not both pack.
    let settle = () => {};
    const claim = {
      done: new Promise<void>((resolve) => {
        settle = resolve;
      }),
      waiting: 0,
    };
    this.#running.set(key, claim);
    const release = () => {
      if (this.#running.get(key) === claim) this.#running.delete(key);
      settle();
    };
    return {
      pack: null,
      packing: (exit) => void exit.then(release, release),
      waited: () => claim.waiting > 0,
    };
  }
}

/**
 * Chunks kept to be filled again, by every answer of this process: one being written while the
 * next is read is the steady state of one clone, and a storm of small cached answers would
 * otherwise allocate a fresh megabyte each, outside V8's heap, whose growth alone sets off a full
 * garbage collection every few dozen answers.
 */
const SPARE_CHUNKS = 8;

/** A bounded pool of read buffers, by size (side-band and side-band-64k frame them differently). */
class ChunkPool {
  readonly #spare = new Map<number, Buffer[]>();
  #count = 0;

  take(bytes: number): Buffer {
    const chunk = this.#spare.get(bytes)?.pop();
    if (chunk === undefined) return Buffer.allocUnsafeSlow(bytes);
    this.#count--;
    return chunk;
  }

  give(chunk: Buffer): void {
    if (this.#count >= SPARE_CHUNKS) return;
    const list = this.#spare.get(chunk.length) ?? [];
    list.push(chunk);
    this.#spare.set(chunk.length, list);
    this.#count++;
  }
}

const chunks = new ChunkPool();

/** A pkt-line's length prefix. */
const PKT_LEN = 4;
/** A sideband packet's pkt-len and band byte. */
const HEADER = PKT_LEN + 1;

/** Writes the pkt-len and band byte of a band-1 (pack data) packet of `data` bytes at `at`. */
function writeBand1Header(buffer: Buffer, at: number, data: number): void {
  buffer.write((HEADER + data).toString(16).padStart(PKT_LEN, '0'), at, 'latin1');
  buffer[at + PKT_LEN] = 1;
}
