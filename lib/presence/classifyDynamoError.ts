/**
 * Translates an error thrown by the AWS SDK v3 DynamoDB client into what the presence adapter acts
 * on. The SDK sets `error.name` to DynamoDB's error code and `$metadata.httpStatusCode` to the
 * status; network failures and timeouts arrive as Node errors (`code` = ECONNRESET, ...) or the
 * SDK's `TimeoutError`, without a status.
 * Error codes: https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/Programming.Errors.html
 *
 * - `conditionFailed`: the condition was evaluated and did not hold. With
 *   `ReturnValuesOnConditionCheckFailure: ALL_OLD` the item in the way comes back on the error.
 * - `unavailable`: throttling, 5xx, timeouts, connection failures: the caller may retry. For a
 *   write the outcome is unknown.
 * - `fault`: DynamoDB answered that the request itself is wrong (validation, missing table,
 *   credentials, access denied). Retrying cannot help; the original error is kept so it surfaces
 *   as a 500 with its real cause rather than as a "busy" the client would retry forever.
 */
import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import { PresenceUnavailable } from './PresenceStore.js';

export type DynamoFailure =
  | { readonly kind: 'conditionFailed'; readonly item: Record<string, AttributeValue> | undefined }
  | { readonly kind: 'unavailable'; readonly error: PresenceUnavailable }
  | { readonly kind: 'fault'; readonly error: Error };

/** 400s that mean "try again later", not "your request is wrong". */
const RETRYABLE_CODES = new Set([
  'ProvisionedThroughputExceededException',
  'ThrottlingException',
  'RequestLimitExceeded',
  // An item is being changed by a transaction; retrying after it settles succeeds.
  'TransactionConflictException',
  // Multi-region strongly consistent global tables: a concurrent write in another region.
  'ReplicatedWriteConflictException',
  'InternalServerError',
  'InternalFailure',
  'ServiceUnavailable',
  'TimeoutError',
  'RequestTimeout',
  'RequestTimeoutException',
]);

/** JavaScript's own errors: a bug on our side, even when no status says so. */
const PROGRAMMING_ERRORS = new Set(['TypeError', 'RangeError', 'SyntaxError', 'ReferenceError']);

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
    code?: unknown;
    message?: unknown;
    $metadata?: { httpStatusCode?: unknown };
  };
  const named = (value: unknown) =>
    typeof value === 'string' && value !== '' && value !== 'Error' && value !== 'Unknown' ? value : undefined;
  const status = e.$metadata?.httpStatusCode;
  return {
    // `code` is a Node system error (ECONNRESET, ETIMEDOUT) from the HTTP handler.
    code: named(e.name) ?? named(e.code),
    status: typeof status === 'number' ? status : undefined,
    message: typeof e.message === 'string' ? e.message : '',
  };
}

/** `operation` names the call for the message, e.g. `PutItem repo#a/writer`. */
export function classifyDynamoError(error: unknown, operation: string): DynamoFailure {
  const { code, status, message } = shapeOf(error);
  if (code === 'ConditionalCheckFailedException') {
    const item = (error as { Item?: Record<string, AttributeValue> }).Item;
    return { kind: 'conditionFailed', item };
  }
  const what = [code ?? 'error', status === undefined ? undefined : `HTTP ${status}`]
    .filter(Boolean)
    .join(', ');
  const text = `DynamoDB ${what} on ${operation}${message ? `: ${message}` : ''}`;

  const retryable =
    (code !== undefined && RETRYABLE_CODES.has(code)) ||
    status === 429 ||
    (status !== undefined && status >= 500) ||
    // No answer at all: a reset, refused or timed-out connection, DNS, an aborted socket.
    (status === undefined && !(code !== undefined && PROGRAMMING_ERRORS.has(code)));
  if (retryable) return { kind: 'unavailable', error: new PresenceUnavailable(text, { cause: error }) };
  return { kind: 'fault', error: error instanceof Error ? error : new Error(text, { cause: error }) };
}
