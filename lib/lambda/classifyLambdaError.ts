/**
 * Translates an error thrown by the AWS SDK v3 Lambda client on Invoke into what the prewarm
 * trigger reports. The SDK sets `error.name` to Lambda's error code and `$metadata.httpStatusCode`
 * to the status; network failures arrive as Node errors without a status.
 * Error codes: https://docs.aws.amazon.com/lambda/latest/api/API_Invoke.html#API_Invoke_Errors
 *
 * - `throttled`: the account or function is at its concurrency or request-rate limit (429).
 * - `unavailable`: 5xx, timeouts, no answer: Lambda may or may not have queued the event.
 * - `misconfigured`: the request itself is wrong (no such function, access denied, invalid
 *   parameters): every later invocation will fail the same way until the deployment is fixed.
 */
export type PrewarmFailureKind = 'throttled' | 'unavailable' | 'misconfigured';

export class PrewarmInvokeFailed extends Error {
  readonly code = 'PrewarmInvokeFailed';
  constructor(
    readonly kind: PrewarmFailureKind,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

const THROTTLING_CODES = new Set([
  'TooManyRequestsException',
  'ThrottlingException',
  'EC2ThrottledException',
]);
const UNAVAILABLE_CODES = new Set(['ServiceException', 'ResourceNotReadyException', 'TimeoutError']);

export function classifyLambdaError(error: unknown, functionName: string): PrewarmInvokeFailed {
  const e = (typeof error === 'object' && error !== null ? error : {}) as {
    name?: unknown;
    code?: unknown;
    message?: unknown;
    $metadata?: { httpStatusCode?: unknown };
  };
  const code = [e.name, e.code].find(
    (v): v is string => typeof v === 'string' && v !== '' && v !== 'Error' && v !== 'Unknown',
  );
  const status = typeof e.$metadata?.httpStatusCode === 'number' ? e.$metadata.httpStatusCode : undefined;
  const detail = typeof e.message === 'string' && e.message !== '' ? `: ${e.message}` : '';
  const what = [code ?? 'error', status === undefined ? undefined : `HTTP ${status}`]
    .filter(Boolean)
    .join(', ');
  const message = `Lambda ${what} invoking ${functionName}${detail}`;
  let kind: PrewarmFailureKind;
  if ((code !== undefined && THROTTLING_CODES.has(code)) || status === 429) kind = 'throttled';
  else if (
    (code !== undefined && UNAVAILABLE_CODES.has(code)) ||
    (status !== undefined && status >= 500) ||
    (status === undefined && !(error instanceof TypeError))
  )
    kind = 'unavailable';
  else kind = 'misconfigured';
  return new PrewarmInvokeFailed(kind, message, { cause: error });
}
