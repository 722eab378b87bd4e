/**
 * What API Gateway (REST API, Lambda proxy integration) does to headers on their way to the
 * function and back, from the table in "Amazon API Gateway important notes for REST APIs":
 * https://docs.aws.amazon.com/apigateway/latest/developerguide/api-gateway-known-issues.html#api-gateway-known-issues-rest-apis
 * ("Remapped" renames `<name>` to `X-Amzn-Remapped-<name>`; "Remapped Overwritten" does that and
 * writes a value of the gateway's own.) The column that applies is "lambda". The page does not say
 * whether the response rules hold for streamed responses (responseTransferMode STREAM); the
 * stand-in applies them there too, the stricter choice.
 */

/** Request headers that never reach a Lambda proxy integration. */
const DROPPED_FROM_REQUESTS = new Set([
  'connection',
  'content-md5',
  'expect',
  'max-forwards',
  'proxy-authenticate',
  'server',
  'te',
  'trailer',
  'upgrade',
  'www-authenticate',
  // "Exception" in the table: the body is buffered and handed over whole, so no framing header
  // survives; Content-Length is "generated based on body".
  'transfer-encoding',
  'content-length',
]);

/** Response headers of the function that the client receives as `X-Amzn-Remapped-<name>`. */
const REMAPPED_IN_RESPONSES = new Set([
  'authorization',
  'connection',
  'content-md5',
  'max-forwards',
  'user-agent',
  'www-authenticate',
]);

/** Remapped, and the gateway writes its own value under the original name. */
const OVERWRITTEN_IN_RESPONSES = new Set(['date', 'server']);

/** Response headers of the function that the client never receives. */
const DROPPED_FROM_RESPONSES = new Set([
  'expect',
  'host',
  'proxy-authenticate',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  'via',
]);

export interface HeaderPair {
  readonly name: string;
  readonly value: string;
}

/** The request's headers as the function sees them (client spelling kept, as API Gateway does). */
export function requestHeadersForFunction(raw: readonly HeaderPair[], bodyLength: number): HeaderPair[] {
  const kept = raw.filter((h) => !DROPPED_FROM_REQUESTS.has(h.name.toLowerCase()));
  return bodyLength > 0 ? [...kept, { name: 'Content-Length', value: String(bodyLength) }] : kept;
}

/**
 * The function's response headers as the client receives them. API Gateway adds a Content-Type
 * of `application/json` when the integration gave none ("API Gateway includes a Content-Type
 * header for all integration responses", same page).
 */
export function responseHeadersForClient(
  fromFunction: readonly HeaderPair[],
  requestId: string,
): HeaderPair[] {
  const out: HeaderPair[] = [];
  for (const { name, value } of fromFunction) {
    const lower = name.toLowerCase();
    if (DROPPED_FROM_RESPONSES.has(lower)) continue;
    if (REMAPPED_IN_RESPONSES.has(lower) || OVERWRITTEN_IN_RESPONSES.has(lower))
      out.push({ name: `x-amzn-Remapped-${name}`, value });
    else out.push({ name, value });
  }
  if (!out.some((h) => h.name.toLowerCase() === 'content-type'))
    out.push({ name: 'Content-Type', value: 'application/json' });
  out.push({ name: 'Date', value: new Date().toUTCString() });
  out.push({ name: 'x-amzn-RequestId', value: requestId });
  out.push({ name: 'x-amz-apigw-id', value: requestId.slice(0, 16) });
  return out;
}

/** A proxy result's `headers` and `multiValueHeaders` as one list, repeated names kept. */
export function headerPairs(
  single: Record<string, unknown> | undefined | null,
  multi: Record<string, unknown[]> | undefined | null,
): HeaderPair[] {
  const pairs: HeaderPair[] = [];
  for (const [name, value] of Object.entries(single ?? {})) pairs.push({ name, value: String(value) });
  for (const [name, values] of Object.entries(multi ?? {}))
    for (const value of values ?? []) pairs.push({ name, value: String(value) });
  return pairs;
}

/** node:http takes repeated headers as one flat [name, value, name, value, ...] list. */
export function flat(pairs: readonly HeaderPair[]): string[] {
  return pairs.flatMap((p) => [p.name, p.value]);
}
