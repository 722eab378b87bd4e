/**
 * API Gateway (REST, proxy integration) -> the core handler, buffered. The app is built once per
 * container from the environment. Streaming responses, middy middleware and routing of long
 * transfers to the pool come with the serverless deployment; this adapter already shares all of
 * the core's behaviour.
 */
import { randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';
import type { APIGatewayProxyEvent, APIGatewayProxyResult } from 'aws-lambda';
import { type App, createApp } from '../lib/app.js';
import { loadConfig } from '../lib/config.js';
import type { CoreHandler, CoreRequest } from '../lib/http/types.js';
import { jsonLogger } from '../lib/log.js';

let app: Promise<App> | undefined;

export async function handler(event: APIGatewayProxyEvent): Promise<APIGatewayProxyResult> {
  if (app === undefined) {
    const config = loadConfig();
    app = createApp(config, jsonLogger({ secrets: [config.adminToken] }));
  }
  return handleEvent((await app).handler, event);
}

export async function handleEvent(
  core: CoreHandler,
  event: APIGatewayProxyEvent,
): Promise<APIGatewayProxyResult> {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(event.headers ?? {}))
    if (value !== undefined) headers[name.toLowerCase()] = value;
  const query = new URLSearchParams();
  for (const [name, value] of Object.entries(event.queryStringParameters ?? {}))
    if (value !== undefined) query.set(name, value);
  const body =
    event.body === null
      ? Buffer.alloc(0)
      : Buffer.from(event.body, event.isBase64Encoded ? 'base64' : 'utf8');
  const request: CoreRequest = {
    method: event.httpMethod,
    path: event.path,
    query,
    headers,
    body: Readable.from([body]),
    requestId: event.requestContext?.requestId ?? randomBytes(8).toString('hex'),
    ...(event.requestContext?.identity?.sourceIp
      ? { remoteAddress: event.requestContext.identity.sourceIp }
      : {}),
  };
  const response = await core(request);
  const chunks: Buffer[] = [];
  if (Buffer.isBuffer(response.body)) chunks.push(response.body);
  else for await (const chunk of response.body) chunks.push(Buffer.from(chunk as Buffer));
  return {
    statusCode: response.status,
    headers: { ...response.headers },
    body: Buffer.concat(chunks).toString('base64'),
    isBase64Encoded: true,
  };
}
