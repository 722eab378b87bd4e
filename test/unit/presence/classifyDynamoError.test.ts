import {
  ConditionalCheckFailedException,
  DeleteItemCommand,
  DynamoDBClient,
  DynamoDBServiceException,
  GetItemCommand,
  InternalServerError,
  ProvisionedThroughputExceededException,
  PutItemCommand,
  QueryCommand,
  ResourceNotFoundException,
  UpdateItemCommand,
} from '@aws-sdk/client-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import { beforeEach, describe, expect, it } from 'vitest';
import { classifyDynamoError } from '../../../lib/presence/classifyDynamoError.js';
import { DynamoPresenceStore } from '../../../lib/presence/DynamoPresenceStore.js';
import { PresenceUnavailable } from '../../../lib/presence/PresenceStore.js';

/** An error shaped as the SDK v3 deserialiser throws it: name = DynamoDB error code, plus $metadata. */
function dynamoError(code: string, status: number): DynamoDBServiceException {
  return new DynamoDBServiceException({
    name: code,
    $fault: status < 500 ? 'client' : 'server',
    $metadata: { httpStatusCode: status, attempts: 3 },
    message: `${code} from DynamoDB`,
  });
}

function networkError(code: string): Error {
  return Object.assign(new Error(`connect ${code} 127.0.0.1:8000`), { code, $metadata: { attempts: 3 } });
}

const conditionFailed = (item?: ConditionalCheckFailedException['Item']) =>
  new ConditionalCheckFailedException({
    $metadata: { httpStatusCode: 400 },
    message: 'The conditional request failed',
    Item: item,
  });

describe('classifyDynamoError', () => {
  it('reports a failed condition with the item in the way', () => {
    const item = { pk: { S: 'k' }, sk: { S: 'writer' } };
    expect(classifyDynamoError(conditionFailed(item), 'PutItem k writer')).toEqual({
      kind: 'conditionFailed',
      item,
    });
    expect(classifyDynamoError(conditionFailed(), 'PutItem k writer')).toEqual({
      kind: 'conditionFailed',
      item: undefined,
    });
  });

  it.each([
    [
      'a modelled throughput error',
      new ProvisionedThroughputExceededException({ $metadata: {}, message: 'slow' }),
    ],
    ['a modelled 500', new InternalServerError({ $metadata: { httpStatusCode: 500 }, message: 'boom' })],
    ['ProvisionedThroughputExceededException', dynamoError('ProvisionedThroughputExceededException', 400)],
    ['ThrottlingException', dynamoError('ThrottlingException', 400)],
    ['RequestLimitExceeded', dynamoError('RequestLimitExceeded', 400)],
    ['TransactionConflictException', dynamoError('TransactionConflictException', 400)],
    ['InternalServerError', dynamoError('InternalServerError', 500)],
    ['ServiceUnavailable', dynamoError('ServiceUnavailable', 503)],
    ['an unknown 5xx', dynamoError('Unknown', 502)],
    ['a bare 429', dynamoError('Unknown', 429)],
    ['ECONNRESET', networkError('ECONNRESET')],
    ['ECONNREFUSED', networkError('ECONNREFUSED')],
    ['ETIMEDOUT', networkError('ETIMEDOUT')],
    ['the SDK request timeout', Object.assign(new Error('Request timed out'), { name: 'TimeoutError' })],
    ['a non-Error rejection', 'socket hang up'],
  ])('makes %s PresenceUnavailable with the cause', (_, error) => {
    const failure = classifyDynamoError(error, 'GetItem k writer');
    expect(failure.kind).toBe('unavailable');
    if (failure.kind !== 'unavailable') return;
    expect(failure.error).toBeInstanceOf(PresenceUnavailable);
    expect(failure.error.code).toBe('PresenceUnavailable');
    expect(failure.error.cause).toBe(error);
    expect(failure.error.message).toContain('GetItem k writer');
  });

  it.each([
    ['ValidationException', dynamoError('ValidationException', 400)],
    [
      'a missing table',
      new ResourceNotFoundException({ $metadata: { httpStatusCode: 400 }, message: 'no table' }),
    ],
    ['AccessDeniedException', dynamoError('AccessDeniedException', 400)],
    ['UnrecognizedClientException', dynamoError('UnrecognizedClientException', 400)],
    ['a TypeError from our own code', new TypeError('Cannot read properties of undefined')],
  ])('keeps %s as a fault, unchanged: retrying cannot help', (_, error) => {
    const failure = classifyDynamoError(error, 'PutItem k writer');
    expect(failure).toEqual({ kind: 'fault', error });
  });
});

describe('DynamoPresenceStore error handling (mocked client)', () => {
  const ddb = mockClient(DynamoDBClient);
  const client = new DynamoDBClient({ region: 'us-east-1' });
  const presence = new DynamoPresenceStore({ client, table: 't', now: () => 1_000 });
  const record = { key: 'repo#a', id: 'writer', owner: 'node-a', expiresAt: 61_000 };

  beforeEach(() => ddb.reset());

  it('answers false when a live record is in the way', async () => {
    ddb.on(PutItemCommand).rejects(conditionFailed({ writeId: { S: 'someone-else' } }));
    expect(await presence.tryCreate(record)).toBe(false);
  });

  it('answers true when the item in the way is its own earlier attempt (an SDK retry)', async () => {
    // The first attempt landed but its answer was lost; the retry finds our writeId there.
    ddb.on(PutItemCommand).callsFake((input: { Item: Record<string, { S?: string }> }) => {
      throw conditionFailed({ writeId: { S: input.Item.writeId?.S ?? '' } });
    });
    expect(await presence.tryCreate(record)).toBe(true);
  });

  it('answers false to renew and ignores release when the condition fails', async () => {
    ddb.on(UpdateItemCommand).rejects(conditionFailed());
    ddb.on(DeleteItemCommand).rejects(conditionFailed());
    expect(await presence.renew('repo#a', 'writer', 'node-a', 99_000)).toBe(false);
    await presence.release('repo#a', 'writer', 'node-a');
  });

  it('sends the conditions and the caller clock DynamoDB evaluates', async () => {
    ddb.on(PutItemCommand).resolves({});
    ddb.on(UpdateItemCommand).resolves({});
    await presence.tryCreate(record);
    await presence.renew('repo#a', 'writer', 'node-a', 99_000);
    const put = ddb.commandCalls(PutItemCommand)[0]?.args[0].input;
    expect(put?.ConditionExpression).toBe('attribute_not_exists(pk) OR expiresAtMs < :now');
    expect(put?.ExpressionAttributeValues).toEqual({ ':now': { N: '1000' } });
    expect(put?.Item?.ttl).toEqual({ N: '61' });
    const update = ddb.commandCalls(UpdateItemCommand)[0]?.args[0].input;
    expect(update?.ConditionExpression).toBe('#owner = :owner AND expiresAtMs >= :now');
    expect(update?.ExpressionAttributeValues?.[':ttl']).toEqual({ N: '99' });
  });

  it('filters expired items on read even when DynamoDB returns them', async () => {
    const item = (id: string, expiresAtMs: number) => ({
      pk: { S: 'repo#a' },
      sk: { S: id },
      owner: { S: 'node-a' },
      expiresAtMs: { N: String(expiresAtMs) },
    });
    ddb.on(GetItemCommand).resolves({ Item: item('writer', 999) });
    ddb
      .on(QueryCommand)
      .resolvesOnce({ Items: [item('a', 999), item('b', 1_000)], LastEvaluatedKey: { pk: { S: 'repo#a' } } })
      .resolvesOnce({ Items: [item('c', 5_000)] });
    expect(await presence.get('repo#a', 'writer')).toBeNull();
    expect((await presence.list('repo#a')).map((r) => r.id)).toEqual(['b', 'c']);
    expect(ddb.commandCalls(QueryCommand)[1]?.args[0].input.ExclusiveStartKey).toEqual({
      pk: { S: 'repo#a' },
    });
  });

  it.each([
    ['tryCreate', () => presence.tryCreate(record)],
    ['renew', () => presence.renew('repo#a', 'writer', 'node-a', 99_000)],
    ['release', () => presence.release('repo#a', 'writer', 'node-a')],
    ['get', () => presence.get('repo#a', 'writer')],
    ['list', () => presence.list('repo#a', 'lease#')],
  ])('turns throttling during %s into PresenceUnavailable', async (_, call) => {
    const throttled = dynamoError('ThrottlingException', 400);
    ddb.onAnyCommand().rejects(throttled);
    const error = await call().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(PresenceUnavailable);
    expect((error as PresenceUnavailable).cause).toBe(throttled);
  });
});
