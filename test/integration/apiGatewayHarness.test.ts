/**
 * The API Gateway stand-in itself: the limits it enforces are the ones the routing is built on,
 * so they are checked here against handlers that produce exactly the sizes in question.
 */
import type {
  APIGatewayAuthorizerResult,
  APIGatewayProxyEvent,
  APIGatewayRequestAuthorizerEvent,
} from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import {
  LAMBDA_BUFFERED_RESPONSE_LIMIT,
  LAMBDA_REQUEST_LIMIT,
} from '../../functions/adapter/lambdaLimits.js';
import { startApiGateway } from '../helpers/aws/apiGateway.js';
import { GatewayAuthorizer } from '../helpers/aws/gatewayAuthorizer.js';
import { type LambdaResponseStream, lambdaRuntime } from '../helpers/aws/lambdaRuntime.js';
import { LambdaFunction } from '../helpers/aws/lambdaSandboxes.js';
import { AWS_STREAM_LIMITS, StreamCut, StreamPacer } from '../helpers/aws/streamLimits.js';
import { rawRequest } from '../helpers/rawHttp.js';

const runtime = lambdaRuntime();

async function withApi<T>(handler: unknown, run: (url: string) => Promise<T>): Promise<T> {
  const api = await startApiGateway({ handler });
  try {
    return await run(api.url);
  } finally {
    await api.stop();
  }
}

const echoSize = async (event: APIGatewayProxyEvent) => ({
  statusCode: 200,
  body: String(Buffer.from(event.body ?? '', 'base64').length),
});

describe('the API Gateway stand-in', () => {
  it('passes a body whose base64 event fits Lambda’s request limit and refuses one that does not', async () => {
    // base64 makes 3 bytes 4: the largest body is about three quarters of the limit.
    const fits = Math.floor((LAMBDA_REQUEST_LIMIT * 3) / 4) - 8192;
    await withApi(echoSize, async (url) => {
      const ok = await fetch(`${url}/x`, { method: 'POST', body: Buffer.alloc(fits) });
      expect(ok.status).toBe(200);
      expect(await ok.text()).toBe(String(fits));
      const refused = await fetch(`${url}/x`, { method: 'POST', body: Buffer.alloc(fits + 16_384) });
      expect(refused.status).toBe(413);
    });
  });

  it('refuses a buffered response over Lambda’s response limit with a 502', async () => {
    const sized = (bytes: number) => async () => ({ statusCode: 200, body: 'a'.repeat(bytes) });
    await withApi(sized(LAMBDA_BUFFERED_RESPONSE_LIMIT - 100), async (url) => {
      expect((await fetch(`${url}/`)).status).toBe(200);
    });
    await withApi(sized(LAMBDA_BUFFERED_RESPONSE_LIMIT), async (url) => {
      expect((await fetch(`${url}/`)).status).toBe(502);
    });
  });

  it('streams a response past the buffered limit after its prelude', async () => {
    const handler = runtime.streamifyResponse(
      async (_event: APIGatewayProxyEvent, stream: LambdaResponseStream) => {
        const out = runtime.HttpResponseStream.from(stream, { statusCode: 201, headers: { 'x-a': 'b' } });
        for (let i = 0; i < 8; i++) out.write(Buffer.alloc(1024 * 1024, i));
        out.end();
      },
    );
    await withApi(handler, async (url) => {
      const response = await fetch(`${url}/s`);
      expect(response.status).toBe(201);
      expect(response.headers.get('x-a')).toBe('b');
      const body = Buffer.from(await response.arrayBuffer());
      expect(body.length).toBe(8 * 1024 * 1024);
      expect(body[body.length - 1]).toBe(7);
    });
  });

  // "Stream | Not streaming format | InvokeWithResponseStream | ... return a 500 error response"
  // (https://docs.aws.amazon.com/apigateway/latest/developerguide/response-transfer-mode-lambda.html)
  it('answers 500 for a stream that ends before its prelude was written', async () => {
    const handler = runtime.streamifyResponse(
      async (_event: APIGatewayProxyEvent, stream: LambdaResponseStream) => {
        runtime.HttpResponseStream.from(stream, { statusCode: 200 });
        stream.end();
      },
    );
    await withApi(handler, async (url) => {
      expect((await fetch(`${url}/s`)).status).toBe(500);
    });
  });

  it('knows only the stage’s paths, and hands the function the path without the stage', async () => {
    const paths: string[] = [];
    const handler = async (event: APIGatewayProxyEvent) => {
      paths.push(event.path);
      return { statusCode: 204, body: '' };
    };
    await withApi(handler, async (url) => {
      expect((await fetch(url.replace('/prod', '/other/x'))).status).toBe(403);
      expect((await fetch(`${url}/o/r.git/info/refs?service=git-upload-pack`)).status).toBe(204);
    });
    expect(paths).toEqual(['/o/r.git/info/refs']);
  });
});

/** A handler that answers with the event it received, as JSON. */
const echoEvent = async (event: APIGatewayProxyEvent) => ({
  statusCode: 200,
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify(event),
});

describe('the API Gateway stand-in, as strict as AWS’s REST API documents', () => {
  it('remaps and drops the function’s response headers as the known-issues table says', async () => {
    const handler = async () => ({
      statusCode: 401,
      headers: {
        'WWW-Authenticate': 'Basic realm="x"',
        Authorization: 'secret',
        'User-Agent': 'fn',
        Server: 'narwal',
        Via: '1.1 fn',
        'X-Kept': 'yes',
      },
      body: '',
    });
    await withApi(handler, async (url) => {
      const response = await fetch(`${url}/x`);
      expect(response.status).toBe(401);
      expect(response.headers.get('www-authenticate')).toBeNull();
      expect(response.headers.get('x-amzn-remapped-www-authenticate')).toBe('Basic realm="x"');
      expect(response.headers.get('x-amzn-remapped-authorization')).toBe('secret');
      expect(response.headers.get('x-amzn-remapped-user-agent')).toBe('fn');
      expect(response.headers.get('x-amzn-remapped-server')).toBe('narwal');
      expect(response.headers.get('via')).toBeNull();
      expect(response.headers.get('x-kept')).toBe('yes');
      // No Content-Type from the function: API Gateway gives its own.
      expect(response.headers.get('content-type')).toBe('application/json');
    });
  });

  it('hands the function the request’s headers less the dropped ones, with a Content-Length of the body', async () => {
    await withApi(echoEvent, async (url) => {
      const response = await rawRequest(url.replace('/prod', ''), {
        head: [
          'POST /prod/x HTTP/1.1',
          `Host: ${new URL(url).host}`,
          'Content-Length: 5',
          'Max-Forwards: 3',
          'Upgrade: websocket',
          'Content-MD5: abc',
          'Authorization: Basic eDp5',
          'X-Custom: kept',
          'Connection: close',
        ].join('\r\n'),
        body: [Buffer.from('hello')],
        deadlineMs: 10_000,
      });
      const event = JSON.parse(response.body.toString()) as APIGatewayProxyEvent;
      const names = Object.keys(event.headers).map((n) => n.toLowerCase());
      for (const dropped of ['max-forwards', 'upgrade', 'content-md5', 'connection'])
        expect(names).not.toContain(dropped);
      expect(event.headers.Authorization).toBe('Basic eDp5');
      expect(event.headers['X-Custom']).toBe('kept');
      expect(event.headers['Content-Length']).toBe('5');
      expect(event.headers['X-Forwarded-For']).toBe('127.0.0.1');
      expect(Buffer.from(event.body ?? '', 'base64').toString()).toBe('hello');
    });
  });

  it('refuses headers over 10,240 bytes and URLs over 10,240 characters before invoking anything', async () => {
    let invoked = 0;
    const counting = async () => {
      invoked++;
      return { statusCode: 204, body: '' };
    };
    await withApi(counting, async (url) => {
      const big = await fetch(`${url}/x`, { headers: { 'x-big': 'a'.repeat(10_300) } });
      expect(big.status).toBe(431);
      const long = await fetch(`${url}/${'a'.repeat(10_300)}`);
      expect(long.status).toBe(414);
      expect((await fetch(`${url}/x`, { headers: { 'x-fits': 'a'.repeat(9_000) } })).status).toBe(204);
    });
    expect(invoked).toBe(1);
  });

  it('refuses a body without Content-Length (chunked), or buffers it whole when asked to', async () => {
    const chunkedPost = (url: string) =>
      rawRequest(url.replace('/prod', ''), {
        head: [
          'POST /prod/x HTTP/1.1',
          `Host: ${new URL(url).host}`,
          'Transfer-Encoding: chunked',
          'Connection: close',
        ].join('\r\n'),
        body: [Buffer.from('5\r\nhello\r\n0\r\n\r\n')],
        deadlineMs: 10_000,
      });
    const refusing = await startApiGateway({ handler: echoSize });
    try {
      expect((await chunkedPost(refusing.url)).status).toBe(411);
      expect(refusing.invocations).toEqual([]);
    } finally {
      await refusing.stop();
    }
    const buffering = await startApiGateway({ handler: echoEvent, chunkedRequests: 'buffer' });
    try {
      const response = await chunkedPost(buffering.url);
      const event = JSON.parse(response.body.toString()) as APIGatewayProxyEvent;
      expect(Buffer.from(event.body ?? '', 'base64').toString()).toBe('hello');
      expect(event.headers['Content-Length']).toBe('5');
      expect(Object.keys(event.headers).map((n) => n.toLowerCase())).not.toContain('transfer-encoding');
    } finally {
      await buffering.stop();
    }
  });

  it('answers 504 when a buffered integration outlives its timeout', async () => {
    const slow = async () => {
      await new Promise((done) => setTimeout(done, 400));
      return { statusCode: 200, body: 'late' };
    };
    const api = await startApiGateway({ handler: slow, integrationTimeoutMs: 50 });
    try {
      const response = await fetch(`${api.url}/x`);
      expect(response.status).toBe(504);
      expect(await response.json()).toEqual({ message: 'Endpoint request timed out' });
    } finally {
      await api.stop();
    }
  });

  it('cuts a stream off when the function stays silent past the idle timeout, or runs past the longest stream', async () => {
    const pausing = (pauseMs: number) =>
      runtime.streamifyResponse(async (_event: APIGatewayProxyEvent, stream: LambdaResponseStream) => {
        const out = runtime.HttpResponseStream.from(stream, { statusCode: 200 });
        out.write('first ');
        await new Promise((done) => setTimeout(done, pauseMs));
        out.write('second');
        out.end();
      });
    for (const [limits, reason] of [
      [{ idleMs: 100 }, 'stream idle past the idle timeout'],
      [{ maxMs: 100 }, 'stream past its maximum duration'],
    ] as const) {
      const api = await startApiGateway({ handler: pausing(600), stream: limits });
      try {
        const response = await fetch(`${api.url}/s`);
        expect(response.status).toBe(200);
        await expect(response.text()).rejects.toThrow();
        expect(api.refusals.map((r) => r.reason)).toContain(reason);
      } finally {
        await api.stop();
      }
    }
  });

  it('runs one invocation per sandbox at a time, starting a sandbox when all are busy', async () => {
    const ids: number[] = [];
    const fn = new LambdaFunction<unknown>('f', {
      start: async ({ id }) => ({
        handler: async () => {
          ids.push(id);
          await new Promise((done) => setTimeout(done, 100));
          return { statusCode: 200, body: String(id) };
        },
        close: async () => {},
      }),
    });
    const api = await startApiGateway({ fn });
    try {
      await Promise.all([fetch(`${api.url}/a`), fetch(`${api.url}/b`), fetch(`${api.url}/c`)]);
      expect(fn.coldStarts).toBe(3);
      await fetch(`${api.url}/d`);
      expect(fn.coldStarts).toBe(3);
      expect(new Set(ids).size).toBe(3);
    } finally {
      await api.stop();
      await fn.stop();
    }
  });
});

describe('the stand-in’s REQUEST authorizer', () => {
  const allowOnly = (resource: (arn: string) => string, context?: Record<string, unknown>) => {
    let calls = 0;
    return {
      calls: () => calls,
      invoke: async (event: APIGatewayRequestAuthorizerEvent): Promise<APIGatewayAuthorizerResult> => {
        calls++;
        if (event.headers?.authorization === 'Basic bad') throw new Error('Unauthorized');
        return {
          principalId: 'p',
          policyDocument: {
            Version: '2012-10-17',
            Statement: [
              { Action: 'execute-api:Invoke', Effect: 'Allow', Resource: resource(event.methodArn) },
            ],
          },
          ...(context ? { context: context as Record<string, string> } : {}),
        };
      },
    };
  };
  const unauthorized = {
    UNAUTHORIZED: {
      ResponseParameters: { 'gatewayresponse.header.WWW-Authenticate': `'Basic realm="t"'` },
    },
  };

  async function withAuthorizer<T>(
    authorizer: GatewayAuthorizer,
    run: (url: string) => Promise<T>,
  ): Promise<T> {
    const api = await startApiGateway({ handler: echoEvent, authorizer, gatewayResponses: unauthorized });
    try {
      return await run(api.url);
    } finally {
      await api.stop();
    }
  }

  it('answers its refusal with the UNAUTHORIZED gateway response and its headers, and passes its context on', async () => {
    const fn = allowOnly((arn) => arn, { who: 'p', n: 3 });
    const authorizer = new GatewayAuthorizer({ invoke: fn.invoke, identitySources: [], resultTtlSeconds: 0 });
    await withAuthorizer(authorizer, async (url) => {
      const refused = await fetch(`${url}/x`, { headers: { authorization: 'Basic bad' } });
      expect(refused.status).toBe(401);
      expect(refused.headers.get('www-authenticate')).toBe('Basic realm="t"');
      const allowed = await fetch(`${url}/x`);
      const event = (await allowed.json()) as APIGatewayProxyEvent;
      expect(event.requestContext.authorizer).toEqual({ principalId: 'p', who: 'p', n: '3' });
    });
  });

  it('asks nothing of the function when an identity source is missing: 401 at once', async () => {
    const fn = allowOnly((arn) => arn);
    const authorizer = new GatewayAuthorizer({
      invoke: fn.invoke,
      identitySources: ['method.request.header.Authorization'],
      resultTtlSeconds: 300,
    });
    await withAuthorizer(authorizer, async (url) => {
      expect((await fetch(`${url}/x`)).status).toBe(401);
      expect(fn.calls()).toBe(0);
    });
  });

  it('applies a cached policy to every path of the same identity: one naming only the first path refuses the next', async () => {
    const narrow = allowOnly((arn) => arn);
    const cached = new GatewayAuthorizer({
      invoke: narrow.invoke,
      identitySources: ['method.request.header.Authorization'],
      resultTtlSeconds: 300,
    });
    await withAuthorizer(cached, async (url) => {
      const headers = { authorization: 'Basic eDp5' };
      expect((await fetch(`${url}/a`, { headers })).status).toBe(200);
      expect((await fetch(`${url}/b`, { headers })).status).toBe(403);
      expect(narrow.calls()).toBe(1);
    });
    const wide = allowOnly((arn) => `${arn.split('/').slice(0, 2).join('/')}/*`);
    const cachedWide = new GatewayAuthorizer({
      invoke: wide.invoke,
      identitySources: ['method.request.header.Authorization'],
      resultTtlSeconds: 300,
    });
    await withAuthorizer(cachedWide, async (url) => {
      const headers = { authorization: 'Basic eDp5' };
      expect((await fetch(`${url}/a`, { headers })).status).toBe(200);
      expect((await fetch(`${url}/b`, { headers })).status).toBe(200);
      expect(wide.calls()).toBe(1);
    });
  });

  it('refuses a context value that is an object with AUTHORIZER_CONFIGURATION_ERROR (500)', async () => {
    const fn = allowOnly((arn) => arn, { nested: { a: 1 } });
    const authorizer = new GatewayAuthorizer({ invoke: fn.invoke, identitySources: [], resultTtlSeconds: 0 });
    await withAuthorizer(authorizer, async (url) => {
      expect((await fetch(`${url}/x`)).status).toBe(500);
    });
  });
});

describe('the pace of a streamed response', () => {
  it('lets the first bytes go at once, then holds the rest to the bandwidth limit, and stops at the largest stream', () => {
    let now = 0;
    const pacer = new StreamPacer(
      { ...AWS_STREAM_LIMITS, burstBytes: 1000, bytesPerSecond: 100, maxBytes: 2000 },
      () => now,
    );
    expect(pacer.delayFor(1000)).toBe(0);
    expect(pacer.delayFor(100)).toBe(1000);
    now = 1000;
    expect(pacer.delayFor(100)).toBe(1000);
    expect(() => pacer.delayFor(1000)).toThrow(StreamCut);
  });

  it('follows AWS: 6 MB at full speed (Lambda’s burst, the smaller), then 2 MB/s, 5 minutes idle, 15 minutes, 200 MB', () => {
    expect(AWS_STREAM_LIMITS).toEqual({
      burstBytes: 6_000_000,
      bytesPerSecond: 2_000_000,
      idleMs: 300_000,
      maxMs: 900_000,
      maxBytes: 200 * 1024 * 1024,
    });
  });
});
