import { createHash } from 'node:crypto';
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
