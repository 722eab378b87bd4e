import {
  InvokeCommand,
  LambdaClient,
  LambdaServiceException,
  ResourceNotFoundException,
  ServiceException,
  TooManyRequestsException,
} from '@aws-sdk/client-lambda';
import { mockClient } from 'aws-sdk-client-mock';
import { beforeEach, describe, expect, it } from 'vitest';
import { classifyLambdaError } from '../../../lib/lambda/classifyLambdaError.js';
import { LambdaPrewarmTrigger } from '../../../lib/lambda/LambdaPrewarmTrigger.js';
import type { Logger } from '../../../lib/log.js';
import type { LoadedIndex } from '../../../lib/wal/types.js';

const lambda = mockClient(LambdaClient);

interface Line {
  readonly level: 'info' | 'warn' | 'error';
  readonly message: string;
  readonly fields: Record<string, unknown> | undefined;
}

function recordingLogger(): Logger & { lines: Line[] } {
  const lines: Line[] = [];
  return {
    lines,
    info: (message, fields) => lines.push({ level: 'info', message, fields }),
    warn: (message, fields) => lines.push({ level: 'warn', message, fields }),
    error: (message, fields) => lines.push({ level: 'error', message, fields }),
  };
}

const loaded = { etag: '"e1"', index: { seq: 7 } } as unknown as LoadedIndex;

function trigger(logger: Logger): LambdaPrewarmTrigger {
  return new LambdaPrewarmTrigger({
    client: new LambdaClient({ region: 'us-east-1' }),
    functionName: 'narwal-prewarm',
    logger,
  });
}

beforeEach(() => lambda.reset());

describe('LambdaPrewarmTrigger', () => {
  it('invokes the prewarm function asynchronously with the repository and the published index', async () => {
    lambda.on(InvokeCommand).resolves({ StatusCode: 202 });
    const logger = recordingLogger();
    await trigger(logger).trigger('team/app', loaded);
    const calls = lambda.commandCalls(InvokeCommand);
    expect(calls).toHaveLength(1);
    const input = calls[0]?.args[0].input;
    expect(input?.FunctionName).toBe('narwal-prewarm');
    expect(input?.InvocationType).toBe('Event');
    expect(JSON.parse(Buffer.from(input?.Payload as Uint8Array).toString())).toEqual({
      repo: 'team/app',
      seq: 7,
      etag: '"e1"',
    });
    expect(logger.lines).toEqual([]);
  });

  it('logs an invocation Lambda did not queue', async () => {
    lambda.on(InvokeCommand).resolves({ StatusCode: 200 });
    const logger = recordingLogger();
    await trigger(logger).trigger('r', loaded);
    expect(logger.lines).toEqual([
      {
        level: 'warn',
        message: 'prewarm not queued',
        fields: { repo: 'r', function: 'narwal-prewarm', status: 200 },
      },
    ]);
  });

  it.each([
    [
      'throttling',
      new TooManyRequestsException({ $metadata: { httpStatusCode: 429 }, message: 'Rate exceeded' }),
      'warn',
      'throttled',
    ],
    [
      'a 5xx',
      new ServiceException({ $metadata: { httpStatusCode: 500 }, message: 'boom' }),
      'warn',
      'unavailable',
    ],
    [
      'a missing function',
      new ResourceNotFoundException({ $metadata: { httpStatusCode: 404 }, message: 'Function not found' }),
      'error',
      'misconfigured',
    ],
  ])('never fails the push on %s, and logs it by kind', async (_name, error, level, kind) => {
    lambda.on(InvokeCommand).rejects(error);
    const logger = recordingLogger();
    await expect(trigger(logger).trigger('r', loaded)).resolves.toBeUndefined();
    expect(logger.lines).toHaveLength(1);
    expect(logger.lines[0]).toMatchObject({
      level,
      message: 'prewarm invoke failed',
      fields: { repo: 'r', kind },
    });
  });
});

function lambdaError(code: string, status: number): LambdaServiceException {
  return new LambdaServiceException({
    name: code,
    $fault: status < 500 ? 'client' : 'server',
    $metadata: { httpStatusCode: status },
    message: `${code} from Lambda`,
  });
}

describe('classifyLambdaError', () => {
  it.each([
    [lambdaError('TooManyRequestsException', 429), 'throttled'],
    [lambdaError('EC2ThrottledException', 502), 'throttled'],
    [lambdaError('SomethingNew', 429), 'throttled'],
    [lambdaError('ServiceException', 500), 'unavailable'],
    [lambdaError('ResourceNotReadyException', 502), 'unavailable'],
    [lambdaError('EFSMountTimeoutException', 504), 'unavailable'],
    [Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' }), 'unavailable'],
    [lambdaError('ResourceNotFoundException', 404), 'misconfigured'],
    [lambdaError('AccessDeniedException', 403), 'misconfigured'],
    [lambdaError('InvalidParameterValueException', 400), 'misconfigured'],
    [new TypeError('x is not a function'), 'misconfigured'],
  ])('classifies %s as %s', (error, kind) => {
    const failure = classifyLambdaError(error, 'f');
    expect(failure.kind).toBe(kind);
    expect(failure.code).toBe('PrewarmInvokeFailed');
    expect(failure.cause).toBe(error);
  });

  it('names the code, the status and the function in its message', () => {
    expect(classifyLambdaError(lambdaError('AccessDeniedException', 403), 'narwal-prewarm').message).toBe(
      'Lambda AccessDeniedException, HTTP 403 invoking narwal-prewarm: AccessDeniedException from Lambda',
    );
  });
});
