/**
 * The stored form of a token, `auth/tokens/<id>.json`, and the views of it that leave the store:
 * the principal a request runs as, and the listing a person sees. Neither view carries the salt
 * or the hash, and the secret is never stored at all.
 */
import { type Grant, type Principal, parsePattern, parseScope } from './Principal.js';
import type { SecretHash } from './tokenSecret.js';

export const TOKENS_PREFIX = 'auth/tokens/';

export const tokenKey = (id: string): string => `${TOKENS_PREFIX}${id}.json`;

export interface TokenInfo {
  readonly id: string;
  readonly name: string;
  readonly owner?: string;
  readonly grants: readonly Grant[];
  readonly create: boolean;
  /** ISO 8601. */
  readonly created: string;
  /** ISO 8601, to within the store's last-used granularity; absent if never used. */
  readonly lastUsed?: string;
}

export interface TokenRecord extends TokenInfo {
  readonly hash: SecretHash;
}

/** A record that does not decode. The message names the key only, never the content. */
export class CorruptTokenRecord extends Error {
  readonly code = 'CorruptTokenRecord';
  constructor(readonly key: string) {
    super(`token record ${key} is not valid; revoke the token and issue a new one`);
  }
}

interface Stored {
  v: 1;
  id: string;
  name: string;
  owner?: string;
  grants: Grant[];
  create: boolean;
  created: string;
  lastUsed?: string;
  hash: { alg: 'hmac-sha256'; salt: string; digest: string };
}

export function encodeTokenRecord(record: TokenRecord): Buffer {
  const stored: Stored = {
    v: 1,
    ...infoOf(record),
    grants: [...record.grants],
    hash: {
      alg: 'hmac-sha256',
      salt: record.hash.salt.toString('base64'),
      digest: record.hash.digest.toString('base64'),
    },
  };
  return Buffer.from(JSON.stringify(stored));
}

export function decodeTokenRecord(id: string, body: Buffer): TokenRecord {
  const key = tokenKey(id);
  try {
    const raw: unknown = JSON.parse(body.toString('utf8'));
    if (!isObject(raw) || raw.v !== 1 || raw.id !== id || !isObject(raw.hash)) throw new Error();
    const { hash } = raw;
    if (hash.alg !== 'hmac-sha256' || typeof hash.salt !== 'string' || typeof hash.digest !== 'string')
      throw new Error();
    if (typeof raw.name !== 'string' || typeof raw.create !== 'boolean' || typeof raw.created !== 'string')
      throw new Error();
    if (!Array.isArray(raw.grants)) throw new Error();
    const grants = raw.grants.map((g: unknown): Grant => {
      if (!isObject(g) || typeof g.scope !== 'string' || typeof g.pattern !== 'string') throw new Error();
      return { scope: parseScope(g.scope), pattern: parsePattern(g.pattern) };
    });
    const digest = Buffer.from(hash.digest, 'base64');
    if (digest.length !== 32) throw new Error();
    return {
      id,
      name: raw.name,
      ...(typeof raw.owner === 'string' ? { owner: raw.owner } : {}),
      grants,
      create: raw.create,
      created: raw.created,
      ...(typeof raw.lastUsed === 'string' ? { lastUsed: raw.lastUsed } : {}),
      hash: { salt: Buffer.from(hash.salt, 'base64'), digest },
    };
  } catch {
    // The parser's own message quotes the content, which may include the hash: drop it.
    throw new CorruptTokenRecord(key);
  }
}

export function infoOf(record: TokenInfo): TokenInfo {
  return {
    id: record.id,
    name: record.name,
    ...(record.owner !== undefined ? { owner: record.owner } : {}),
    grants: record.grants,
    create: record.create,
    created: record.created,
    ...(record.lastUsed !== undefined ? { lastUsed: record.lastUsed } : {}),
  };
}

export function principalOf(record: TokenInfo): Principal {
  return {
    name: record.name,
    ...(record.owner !== undefined ? { owner: record.owner } : {}),
    tokenId: record.id,
    grants: record.grants,
    create: record.create,
  };
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
