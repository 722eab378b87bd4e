/**
 * Full clones answered without git: once upload-pack has served a full clone of a generation,
 * the pack cache hook gives that pack a second name from what the clone asked for
 * (`<key>.clone`, protocol/fullClone.ts). The next identical clone is answered from that file
 * here, framed exactly as upload-pack frames a pack (the preamble, the pack on sideband band 1,
 * a flush-pkt), so a clone storm costs file reads, not an upload-pack, a hook and a relay per
 * clone. A generation is immutable and its cached packs go with it, so the name never goes stale.
 */
import { constants } from 'node:fs';
import { type FileHandle, open } from 'node:fs/promises';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { CLONE_SUFFIX, PACK_CACHE_DIR } from '../git/packCacheHook.js';
import type { FullClone } from '../protocol/fullClone.js';
import { encodePktLine, encodeSideband, FLUSH_PKT } from '../protocol/pktLine.js';
import type { RecyclingBody } from '../util/RecyclingBody.js';

/** A pack's 12-byte header and 20-byte trailer: anything shorter is not a pack. */
const MIN_PACK_BYTES = 32;
/** Per read: 16 side-band-64k packets. A clone in flight holds about this much, where the
 * upload-pack it replaces held some 26 MiB; larger reads cost less CPU per byte. */
const READ_BYTES = 1024 * 1024;
/** Buffers per read, well under IOV_MAX (1024): the 995-byte packets of `side-band` are many. */
const MAX_SLOTS = 256;

/** The cached pack of `clone` in the generation at `dir`, open for reading; null if none. */
export async function openClonePack(dir: string, clone: FullClone): Promise<FileHandle | null> {
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
  if (size >= MIN_PACK_BYTES) return handle;
  await handle.close();
  return null;
}

/**
 * upload-pack's answer to `clone`, read from `pack`; the handle is closed and `done` called once
 * the answer is sent or abandoned. A read failure midway is reported on band 3, which git prints
 * and fails on.
 */
export function clonePackBody(
  clone: FullClone,
  pack: FileHandle,
  done: () => void,
): Readable & RecyclingBody {
  // Buffers given out, by their memory, and those given back to be filled again.
  const lent = new Map<ArrayBufferLike, Buffer>();
  const spare: Buffer[] = [];
  async function* frames(): AsyncGenerator<Buffer> {
    yield encodePktLine(clone.preamble);
    // The file is read straight into the packets' data parts, several per read and all in one
    // buffer, so no byte of the pack is copied in this process and each read is one chunk.
    const size = HEADER + clone.sidebandData;
    const slots = Math.min(MAX_SLOTS, Math.ceil(READ_BYTES / clone.sidebandData));
    try {
      for (;;) {
        const chunk = spare.pop() ?? Buffer.allocUnsafeSlow(slots * size);
        const parts = Array.from({ length: slots }, (_, i) =>
          chunk.subarray(i * size + HEADER, (i + 1) * size),
        );
        const { bytesRead } = await pack.readv(parts);
        if (bytesRead === 0) break;
        let left = bytesRead;
        let end = 0;
        while (left > 0) {
          const data = Math.min(left, clone.sidebandData);
          chunk.write((HEADER + data).toString(16).padStart(4, '0'), end, 'latin1');
          chunk[end + 4] = 1;
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
      if (spare.length < SPARE_CHUNKS) spare.push(whole);
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
 * The full clones this node is answering with upload-pack, by generation and clone key. An
 * identical clone arriving meanwhile waits for the file the pack cache hook names when that pack
 * is done, and is then answered from it, instead of starting an upload-pack of its own that would
 * only wait inside the hook for the same pack: a clone storm meeting a new generation costs one
 * upload-pack, not one per clone in flight (each holding a git slot and relaying through pipes).
 */
export class ClonePacking {
  readonly #running = new Map<string, Promise<void>>();

  constructor(private readonly options: { readonly pollMs: number; readonly maxWaitMs: number }) {}

  /**
   * The cached pack of `clone` in `dir`, waiting for it (at most maxWaitMs) while an identical
   * clone of this node is making it. Without a pack the caller runs upload-pack; when `packing` is
   * given, identical clones wait for it, and the caller must pass it its upload-pack's exit (or
   * any settled promise if upload-pack did not start).
   */
  async open(
    dir: string,
    clone: FullClone,
  ): Promise<{ readonly pack: FileHandle | null; readonly packing?: (exit: Promise<unknown>) => void }> {
    const key = `${dir}\0${clone.key}`;
    const started = performance.now();
    for (;;) {
      const pack = await openClonePack(dir, clone);
      if (pack) return { pack };
      const running = this.#running.get(key);
      if (running && performance.now() - started >= this.options.maxWaitMs) return { pack: null };
      if (!running) {
        // Claimed before any await, so two clones arriving together do not both pack.
        let settle = () => {};
        const claim = new Promise<void>((resolve) => {
          settle = resolve;
        });
        this.#running.set(key, claim);
        const release = () => {
          settle();
          if (this.#running.get(key) === claim) this.#running.delete(key);
        };
        return { pack: null, packing: (exit) => void exit.then(release, release) };
      }
      await Promise.race([running, sleep(this.options.pollMs)]);
    }
  }
}

/** Chunks kept to be filled again: one being written while the next is read is the steady state. */
const SPARE_CHUNKS = 2;

/** A sideband packet's pkt-len and band byte. */
const HEADER = 5;
