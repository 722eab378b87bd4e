/**
 * Translates an error thrown by the AWS SDK v3 S3 client into the store's typed errors.
 *
 * The SDK sets `error.name` to S3's error code and `$metadata.httpStatusCode` to the status.
 * The code wins over the status: S3 can report an error inside a 200 on
 * CompleteMultipartUpload (https://docs.aws.amazon.com/AmazonS3/latest/API/API_CompleteMultipartUpload.html),
 * and the SDK's throw-200-exceptions middleware then rewrites the status to 503 while keeping
 * the code, so `PreconditionFailed` must stay a precondition failure whatever the status says.
 * Conditional writes: https://docs.aws.amazon.com/AmazonS3/latest/userguide/conditional-writes.html
 */
import {
  ConditionalConflict,
  NotFound,
  PreconditionFailed,
  type StoreError,
  StoreUnavailable,
} from './errors.js';

export interface ClassifyS3Options {
  /**
   * The request was a put with `If-Match`: AWS answers 404 NoSuchKey when the key is missing,
   * which for a compare-and-swap means "not the version you expected".
   */
  readonly ifMatch?: boolean;
}

const PRECONDITION_CODES = new Set(['PreconditionFailed']);
// OperationAborted (409): "A conflicting conditional operation is currently in progress against
// this resource" — the same advice as ConditionalRequestConflict: re-read and retry.
const CONFLICT_CODES = new Set(['ConditionalRequestConflict', 'OperationAborted']);
const NOT_FOUND_CODES = new Set(['NoSuchKey', 'NotFound']);

interface ErrorShape {
  readonly code: string | undefined;
  readonly status: number | undefined;
  readonly message: string;
}

function shapeOf(error: unknown): ErrorShape {
  if (typeof error !== 'object' || error === null) {
    return { code: undefined, status: undefined, message: String(error) };
  }
  const e = error as {
    name?: unknown;
    Code?: unknown;
    code?: unknown;
    message?: unknown;
    $metadata?: { httpStatusCode?: unknown };
  };
  const named = (value: unknown) =>
    typeof value === 'string' && value !== '' && value !== 'Error' && value !== 'Unknown' ? value : undefined;
  const status = e.$metadata?.httpStatusCode;
  return {
    // `Code` is parsed from the XML body; `code` is a Node system error (ECONNRESET, ETIMEDOUT).
    code: named(e.Code) ?? named(e.name) ?? named(e.code),
    status: typeof status === 'number' ? status : undefined,
    message: typeof e.message === 'string' ? e.message : '',
  };
}

export function classifyS3Error(error: unknown, key: string, options: ClassifyS3Options = {}): StoreError {
  const cause = { cause: error };
  const { code, status, message } = shapeOf(error);

  if (code !== undefined) {
    if (PRECONDITION_CODES.has(code)) return new PreconditionFailed(key, cause);
    if (CONFLICT_CODES.has(code)) return new ConditionalConflict(key, cause);
    if (NOT_FOUND_CODES.has(code))
      return options.ifMatch ? new PreconditionFailed(key, cause) : new NotFound(key, cause);
  }
  // A known code decided above; otherwise fall back to the status, unless the code says the
  // 404 is about the bucket, which is a deployment fault and not a missing object.
  if (status === 412) return new PreconditionFailed(key, cause);
  if (status === 409) return new ConditionalConflict(key, cause);
  if (status === 404 && code !== 'NoSuchBucket') {
    return options.ifMatch ? new PreconditionFailed(key, cause) : new NotFound(key, cause);
  }

  // Everything else — 5xx, throttling (503 SlowDown, 429), timeouts, aborted or reset
  // connections, auth and configuration faults, and anything unrecognised — means the store could
  // not answer. For a write the outcome is unknown, which is exactly StoreUnavailable's contract.
  const what = [code ?? 'error', status === undefined ? undefined : `HTTP ${status}`]
    .filter(Boolean)
    .join(', ');
  return new StoreUnavailable(key, `S3 ${what} for ${key}${message ? `: ${message}` : ''}`, cause);
}
