import { Readable } from 'node:stream';
import type { APIGatewayProxyEvent } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import { toCoreRequest } from '../../../functions/adapter/apiGatewayRequest.js';
import { toBufferedResult } from '../../../functions/adapter/bufferedResult.js';
import { toStreamedResult } from '../../../functions/adapter/streamedResult.js';
import { type Logger, silentLogger } from '../../../lib/log.js';

function event(partial: Partial<APIGatewayProxyEvent>): APIGatewayProxyEvent {
  return {
    httpMethod: 'POST',
    path: '/o/r.git/git-upload-pack',
    resource: '/{proxy+}',
    headers: {},
    multiValueHeaders: {},
    queryStringParameters: null,
    multiValueQueryStringParameters: null,
    pathParameters: null,
    stageVariables: null,
    body: null,
    isBase64Encoded: false,
    requestContext: {
      requestId: 'req-9',
      identity: { sourceIp: '198.51.100.7' },
    } as APIGatewayProxyEvent['requestContext'],
    ...partial,
  };
}

async function bodyOf(stream: Readable): Promise<Buffer[]> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk as Buffer);
  return chunks;
}

describe('toCoreRequest', () => {
  it('decodes a base64 body byte for byte', async () => {
    const bytes = Buffer.from([0, 1, 2, 0xff, 0xfe, 0x80, 10]);
    const request = toCoreRequest(event({ body: bytes.toString('base64'), isBase64Encoded: true }));
    expect(Buffer.concat(await bodyOf(request.body))).toEqual(bytes);
  });

  it('takes a text body as UTF-8 and a missing body as empty', async () => {
    expect(Buffer.concat(await bodyOf(toCoreRequest(event({ body: 'héllo' })).body)).toString()).toBe(
      'héllo',
    );
    expect(Buffer.concat(await bodyOf(toCoreRequest(event({ body: null })).body)).length).toBe(0);
  });

  it('lower-cases header names and joins repeated values, preferring the multi-value form', () => {
    const request = toCoreRequest(
      event({
        headers: { 'Git-Protocol': 'version=2', Accept: 'b' },
        multiValueHeaders: { Accept: ['a', 'b'], 'Content-Type': ['application/x-git-upload-pack-request'] },
      }),
    );
    expect(request.headers).toEqual({
      accept: 'a, b',
      'content-type': 'application/x-git-upload-pack-request',
      'git-protocol': 'version=2',
    });
  });

  it('keeps every value of a repeated query parameter', () => {
    const request = toCoreRequest(
      event({
        queryStringParameters: { service: 'git-upload-pack', x: '2' },
        multiValueQueryStringParameters: { service: ['git-upload-pack'], x: ['1', '2'] },
      }),
    );
    expect(request.query.getAll('x')).toEqual(['1', '2']);
    expect(toCoreRequest(event({ queryStringParameters: { service: 's' } })).query.get('service')).toBe('s');
  });

  it('carries the request id, the client address, the method and the path without the stage', () => {
    const request = toCoreRequest(event({ httpMethod: 'GET', path: '/o/r.git/info/refs' }));
    expect(request).toMatchObject({
      method: 'GET',
      path: '/o/r.git/info/refs',
      requestId: 'req-9',
      remoteAddress: '198.51.100.7',
    });
  });
});

describe('toBufferedResult', () => {
  const response = (body: Buffer | Readable) => ({
    status: 200,
    headers: { 'content-type': 'application/x-git-upload-pack-result' },
    body,
  });

  it('returns the body base64-encoded with status and headers', async () => {
    const bytes = Buffer.from([0, 255, 1]);
    const result = await toBufferedResult(response(Readable.from([bytes])), {
      requestId: 'r',
      logger: silentLogger,
    });
    expect(result).toEqual({
      statusCode: 200,
      headers: { 'content-type': 'application/x-git-upload-pack-result' },
      body: bytes.toString('base64'),
      isBase64Encoded: true,
    });
  });

  it('refuses what would not fit with a 503 naming the pool, and stops reading the body', async () => {
    let produced = 0;
    const endless = new Readable({
      read() {
        produced += 1024;
        this.push(Buffer.alloc(1024));
      },
    });
    const errors: string[] = [];
    const logger: Logger = { ...silentLogger, error: (message) => errors.push(message) };
    const result = await toBufferedResult(response(endless), {
      requestId: 'r',
      logger,
      poolUrl: 'https://pool.example',
      limit: 64 * 1024,
    });
    expect(result.statusCode).toBe(503);
    expect(Buffer.from(result.body, 'base64').toString()).toBe(
      'narwal: this response is larger than a Lambda function can return; use the pool at https://pool.example, or ask for it with: git -c http.extraHeader="x-narwal-route: pool"\n',
    );
    expect(endless.destroyed).toBe(true);
    expect(produced).toBeLessThan(128 * 1024);
    expect(errors).toContain('response too large for Lambda');
  });

  it('counts the JSON around the body against the limit', async () => {
    const body = Buffer.alloc(3000);
    const fits = await toBufferedResult(response(body), {
      requestId: 'r',
      logger: silentLogger,
      limit: 4200,
    });
    expect(fits.statusCode).toBe(200);
    const tight = await toBufferedResult(response(body), {
      requestId: 'r',
      logger: silentLogger,
      limit: 4050,
    });
    expect(tight.statusCode).toBe(503);
  });
});

describe('toStreamedResult', () => {
  it('leads every body with an empty write, so the runtime sends the prelude even for an empty body', async () => {
    const empty = toStreamedResult({ status: 200, headers: {}, body: Buffer.alloc(0) }, 'POST');
    expect((await bodyOf(empty.body)).map((c) => c.length)).toEqual([0, 0]);
    const streamed = toStreamedResult(
      { status: 200, headers: { a: 'b' }, body: Readable.from([Buffer.from('ab'), Buffer.from('c')]) },
      'GET',
    );
    expect(streamed.statusCode).toBe(200);
    expect(streamed.headers).toEqual({ a: 'b' });
    expect(Buffer.concat(await bodyOf(streamed.body)).toString()).toBe('abc');
  });

  it('sends no body for HEAD and lets go of the one it was given', async () => {
    const source = Readable.from([Buffer.from('x')]);
    const head = toStreamedResult({ status: 200, headers: {}, body: source }, 'HEAD');
    expect(Buffer.concat(await bodyOf(head.body)).length).toBe(0);
    expect(source.destroyed).toBe(true);
  });
});
