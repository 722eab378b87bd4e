/**
 * The payload limits of Lambda and API Gateway (REST) that shape the adapters and the routing.
 * https://docs.aws.amazon.com/lambda/latest/dg/gettingstarted-limits.html
 * https://docs.aws.amazon.com/apigateway/latest/developerguide/limits.html
 * https://docs.aws.amazon.com/apigateway/latest/developerguide/response-transfer-mode.html
 */

/**
 * A synchronous invocation's request: the whole event as JSON, so a binary body counts after
 * API Gateway's base64 (4/3 of its size) plus the headers. Lambda answers a larger one with
 * RequestEntityTooLargeException ("Request must be smaller than 6291456 bytes").
 */
export const LAMBDA_REQUEST_LIMIT = 6 * 1024 * 1024;

/** A buffered response, again as JSON with a base64 body; Lambda allows 100 bytes more than requests. */
export const LAMBDA_BUFFERED_RESPONSE_LIMIT = 6 * 1024 * 1024 + 100;

/** A streamed response (InvokeWithResponseStream). */
export const LAMBDA_STREAMED_RESPONSE_LIMIT = 200 * 1024 * 1024;

/** API Gateway REST refuses larger request bodies with 413 before invoking anything. */
export const API_GATEWAY_PAYLOAD_LIMIT = 10 * 1024 * 1024;
