/**
 * The API Gateway stand-in itself: the limits it enforces are the ones the routing is built on,
 * so they are checked here against handlers that produce exactly the sizes in question.
 */
import type { APIGatewayProxyEvent } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import {
  LAMBDA_BUFFERED_RESPONSE_LIMIT,
  LAMBDA_REQUEST_LIMIT,
} from '../../functions/adapter/lambdaLimits.js';
import { startApiGateway } from '../helpers/aws/apiGateway.js';
import { type LambdaResponseStream, lambdaRuntime } from '../helpers/aws/lambdaRuntime.js';

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
