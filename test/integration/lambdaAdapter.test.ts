import type { APIGatewayProxyEvent } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { handleEvent } from '../../functions/http.js';
import type { App } from '../../lib/app.js';
import { silentLogger } from '../../lib/log.js';
import { gitOk, makeHome, workRepo } from '../helpers/gitClient.js';
import { ADMIN_TOKEN, type RunningNarwal, startInProcess } from '../helpers/narwalServer.js';

let server: RunningNarwal & { app: App };

beforeAll(async () => {
  server = await startInProcess();
  const home = await makeHome();
  const work = await workRepo(home, 1);
  await gitOk(['push', `${server.authUrl}/lambda/repo.git`, 'main'], { cwd: work, home });
});
afterAll(async () => {
  await server?.stop();
});

function event(partial: Partial<APIGatewayProxyEvent>): APIGatewayProxyEvent {
  return {
    httpMethod: 'GET',
    path: '/',
    headers: {},
    multiValueHeaders: {},
    queryStringParameters: null,
    multiValueQueryStringParameters: null,
    pathParameters: null,
    stageVariables: null,
    body: null,
    isBase64Encoded: false,
    resource: '/{proxy+}',
    requestContext: {
      requestId: 'req-1',
      identity: { sourceIp: '203.0.113.9' },
    } as APIGatewayProxyEvent['requestContext'],
    ...partial,
  };
}

describe('the Lambda adapter', () => {
  it('answers info/refs with a base64 body carrying the advertisement', async () => {
    const result = await handleEvent(
      server.app.handler,
      event({
        path: '/lambda/repo.git/info/refs',
        queryStringParameters: { service: 'git-upload-pack' },
        headers: { Authorization: `Basic ${Buffer.from(`x:${ADMIN_TOKEN}`).toString('base64')}` },
      }),
      { logger: silentLogger },
    );
    expect(result.statusCode).toBe(200);
    expect(result.isBase64Encoded).toBe(true);
    const body = Buffer.from(result.body, 'base64').toString();
    expect(body.startsWith('001e# service=git-upload-pack\n0000')).toBe(true);
    expect(body).toContain('refs/heads/main');
  });

  it('maps errors to the same responses as the local server', async () => {
    const result = await handleEvent(
      server.app.handler,
      event({ path: '/lambda/repo.git/info/refs', queryStringParameters: { service: 'git-upload-pack' } }),
      { logger: silentLogger },
    );
    expect(result.statusCode).toBe(401);
    expect(result.headers?.['www-authenticate']).toMatch(/^Basic/);
  });
});
