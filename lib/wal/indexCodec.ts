import { createHash } from 'node:crypto';
import { promisify } from 'node:util';
import { gunzip, gzip } from 'node:zlib';
import type { RepoIndex } from './types.js';

export class CorruptLog extends Error {
  readonly code = 'CorruptLog';
  constructor(key: string, reason: string, options?: { cause?: unknown }) {
    super(`corrupt log object ${key}: ${reason}`, options);
  }
}

export function encodeJson(value: unknown): Buffer {
  return Buffer.from(JSON.stringify(value));
}

const gzipAsync = promisify(gzip);
const gunzipAsync = promisify(gunzip);

/**
 * The stored form of a bulk immutable object (ref tables, pages, chunks): gzip'd JSON, about a
 * third of the bytes for rows of names and hex object ids. `decodeImmutable` reads both forms.
 */
export async function encodeImmutable(value: unknown, json = encodeJson(value)): Promise<Buffer> {
  return gzipAsync(json);
}

export function sha256(body: Buffer): string {
  return createHash('sha256').update(body).digest('hex');
}

export function decodeJson<T>(key: string, body: Buffer): T {
  try {
    return JSON.parse(body.toString('utf8')) as T;
  } catch (error) {
    throw new CorruptLog(key, 'not JSON', { cause: error });
  }
}

/** An immutable object as stored: gzip'd JSON, or plain JSON (entries, and objects from before). */
export async function decodeImmutable<T>(key: string, body: Buffer): Promise<T> {
  if (body[0] !== 0x1f || body[1] !== 0x8b) return decodeJson<T>(key, body);
  let json: Buffer;
  try {
    json = await gunzipAsync(body);
  } catch (error) {
    throw new CorruptLog(key, 'not valid gzip', { cause: error });
  }
  return decodeJson<T>(key, json);
}

export function decodeIndex(key: string, body: Buffer): RepoIndex {
  const index = decodeJson<RepoIndex>(key, body);
  if (
    index === null ||
    typeof index !== 'object' ||
    index.v !== 2 ||
    !Number.isSafeInteger(index.seq) ||
    !Number.isSafeInteger(index.paged) ||
    !Array.isArray(index.tail) ||
    !Array.isArray(index.tables) ||
    !Array.isArray(index.recent) ||
    (index.protection !== undefined && !Array.isArray(index.protection))
  ) {
    throw new CorruptLog(key, 'not a version 2 index');
  }
  return index;
}

export function emptyIndex(repo: string, options: { public: boolean; now: Date }): RepoIndex {
  return {
    v: 2,
    repo,
    created: options.now.toISOString(),
    seq: 0,
    head: 'refs/heads/main',
    public: options.public,
    tables: [],
    recent: [],
    paged: 0,
    pagedCheckpoint: null,
    tail: [],
    checkpoint: null,
  };
}
