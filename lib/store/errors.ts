/**
 * Typed store failures. Adapters translate vendor errors into exactly these, so callers act on
 * `code` and never on an SDK's error shapes.
 */
export type StoreErrorCode =
  | 'NotFound'
  | 'PreconditionFailed'
  | 'ConditionalConflict'
  | 'StoreUnavailable'
  | 'ContentMismatch';

export class StoreError extends Error {
  readonly code: StoreErrorCode;
  readonly key: string;

  constructor(code: StoreErrorCode, key: string, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = code;
    this.code = code;
    this.key = key;
  }
}

/** The key does not exist. */
export class NotFound extends StoreError {
  constructor(key: string, options?: { cause?: unknown }) {
    super('NotFound', key, `no object at ${key}`, options);
  }
}

/** The condition was evaluated and did not hold (S3 412): re-read, re-check, retry. */
export class PreconditionFailed extends StoreError {
  constructor(key: string, options?: { cause?: unknown }) {
    super('PreconditionFailed', key, `precondition failed for ${key}`, options);
  }
}

/** A racing conditional write won (S3 409 ConditionalRequestConflict): back off, re-read, retry. */
export class ConditionalConflict extends StoreError {
  constructor(key: string, options?: { cause?: unknown }) {
    super('ConditionalConflict', key, `conflicting conditional write on ${key}`, options);
  }
}

/**
 * The store failed or timed out (5xx, network). For a write the outcome is unknown: the caller
 * must re-read to learn whether it landed before retrying.
 */
export class StoreUnavailable extends StoreError {
  constructor(key: string, message: string, options?: { cause?: unknown }) {
    super('StoreUnavailable', key, message, options);
  }
}

/** A streamed body brought other bytes than announced (its size or its SHA-256): nothing was stored. */
export class ContentMismatch extends StoreError {
  constructor(
    key: string,
    readonly what: 'size' | 'sha256',
    detail: string,
  ) {
    super('ContentMismatch', key, `${key}: ${detail}`);
  }
}

export function isStoreError(error: unknown, code?: StoreErrorCode): error is StoreError {
  return error instanceof StoreError && (code === undefined || error.code === code);
}
