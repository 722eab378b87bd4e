/**
 * An API Gateway REST proxy event (payload format 1.0) as the core handler's request. API Gateway
 * has already read the whole body: with binaryMediaTypes covering the request's Content-Type it
 * arrives base64-encoded (`isBase64Encoded`), otherwise as text.
 * https://docs.aws.amazon.com/apigateway/latest/developerguide/set-up-lambda-proxy-integrations.html
 */
import { randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';
import type { APIGatewayProxyEvent } from 'aws-lambda';
import type { CoreRequest } from '../../lib/http/types.js';

export function toCoreRequest(event: APIGatewayProxyEvent): CoreRequest {
  const body =
    event.body === null || event.body === undefined
      ? Buffer.alloc(0)
      : Buffer.from(event.body, event.isBase64Encoded ? 'base64' : 'utf8');
  const sourceIp = event.requestContext?.identity?.sourceIp;
  return {
    method: event.httpMethod,
    path: event.path,
    query: queryOf(event),
    headers: headersOf(event),
    body: Readable.from([body]),
    requestId: event.requestContext?.requestId ?? randomBytes(8).toString('hex'),
    ...(sourceIp ? { remoteAddress: sourceIp } : {}),
  };
}

/**
 * Lower-case names; repeated headers joined with ", " as HTTP allows. `multiValueHeaders` has every
 * value, `headers` only the last of each.
 */
function headersOf(event: APIGatewayProxyEvent): Record<string, string> {
  const headers: Record<string, string> = {};
  const multi = event.multiValueHeaders ?? {};
  for (const [name, values] of Object.entries(multi)) {
    if (values && values.length > 0) headers[name.toLowerCase()] = values.join(', ');
  }
  for (const [name, value] of Object.entries(event.headers ?? {})) {
    const key = name.toLowerCase();
    if (value !== undefined && headers[key] === undefined) headers[key] = value;
  }
  return headers;
}

function queryOf(event: APIGatewayProxyEvent): URLSearchParams {
  const query = new URLSearchParams();
  const multi = event.multiValueQueryStringParameters;
  if (multi) {
    for (const [name, values] of Object.entries(multi))
      for (const value of values ?? []) query.append(name, value);
    return query;
  }
  for (const [name, value] of Object.entries(event.queryStringParameters ?? {}))
    if (value !== undefined) query.append(name, value);
  return query;
}
