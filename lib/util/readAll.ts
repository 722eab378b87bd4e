import type { Readable } from 'node:stream';

/** Where the bytes of a body read into memory are counted (a node's memory budget, say). */
export interface ByteAccount {
  /** Counts `bytes` more; throws when they may not be held. */
  add(bytes: number): void;
}

/** A (bounded) body read whole; each chunk is charged to `account` first, when given. */
export async function readAll(body: Readable, account?: ByteAccount): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of body) {
    const bytes = Buffer.from(chunk as Buffer);
    account?.add(bytes.length);
    chunks.push(bytes);
  }
  return Buffer.concat(chunks);
}
