import {
  CreateTableCommand,
  DescribeTableCommand,
  DynamoDBClient,
  GetItemCommand,
  QueryCommand,
  UpdateTimeToLiveCommand,
} from '@aws-sdk/client-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkPresence } from '../../lib/doctor/checkBackends.js';
import { DynamoPresenceStore, presenceTableDefinition } from '../../lib/presence/DynamoPresenceStore.js';
import { PresenceUnavailable } from '../../lib/presence/PresenceStore.js';
import { type DynamoLocal, startDynamoLocal } from '../helpers/dynamoLocal.js';
import { describePresenceConformance } from '../helpers/presenceConformance.js';

const TABLE = 'narwal-presence';
let local: DynamoLocal | undefined;
let client: DynamoDBClient | undefined;

function makeClient(endpoint: string, maxAttempts = 3): DynamoDBClient {
  return new DynamoDBClient({
    endpoint,
    region: 'us-east-1',
    // DynamoDB Local accepts any credentials (and keeps one database per access key and region).
    credentials: { accessKeyId: 'narwaltest', secretAccessKey: 'narwaltest' },
    maxAttempts,
    requestHandler: { connectionTimeout: 2_000, requestTimeout: 15_000 },
  });
}

beforeAll(async () => {
  local = await startDynamoLocal();
  client = makeClient(local.endpoint);
  await client.send(new CreateTableCommand(presenceTableDefinition(TABLE)));
  await client.send(
    new UpdateTimeToLiveCommand({
      TableName: TABLE,
      TimeToLiveSpecification: { AttributeName: 'ttl', Enabled: true },
    }),
  );
}, 120_000);

afterAll(async () => {
  client?.destroy();
  await local?.stop();
});

function connected(): DynamoDBClient {
  if (client === undefined) throw new Error('DynamoDB Local did not start');
  return client;
}

describePresenceConformance('DynamoDB (DynamoDB Local)', async (now) => ({
  store: new DynamoPresenceStore({ client: connected(), table: TABLE, now }),
  cleanup: async () => {},
}));

describe('DynamoPresenceStore on DynamoDB Local', () => {
  it('passes every check of narwal doctor', async () => {
    const checks = await checkPresence(new DynamoPresenceStore({ client: connected(), table: TABLE }));
    expect(checks.filter((c) => !c.ok)).toEqual([]);
    expect(checks.map((c) => c.name)).toContain('a second create of a live record is refused');
  });

  it('creates the table it expects, on demand', async () => {
    const { Table } = await connected().send(new DescribeTableCommand({ TableName: TABLE }));
    expect(Table?.BillingModeSummary?.BillingMode).toBe('PAY_PER_REQUEST');
    expect(Table?.KeySchema).toEqual(presenceTableDefinition(TABLE).KeySchema);
  });

  it('writes the item layout the table and TTL rely on', async () => {
    const presence = new DynamoPresenceStore({ client: connected(), table: TABLE });
    const expiresAt = Date.now() + 60_500;
    await presence.tryCreate({
      key: 'repo#layout',
      id: 'writer',
      owner: 'node-a',
      expiresAt,
      data: { a: 'b' },
    });
    const { Item } = await connected().send(
      new GetItemCommand({ TableName: TABLE, Key: { pk: { S: 'repo#layout' }, sk: { S: 'writer' } } }),
    );
    expect(Item).toMatchObject({
      pk: { S: 'repo#layout' },
      sk: { S: 'writer' },
      owner: { S: 'node-a' },
      expiresAtMs: { N: String(expiresAt) },
      ttl: { N: String(Math.ceil(expiresAt / 1000)) },
      data: { M: { a: { S: 'b' } } },
    });
    expect(Item?.writeId?.S).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('pages through a partition bigger than one Query page (1 MB)', async () => {
    const presence = new DynamoPresenceStore({ client: connected(), table: TABLE });
    const big = 'x'.repeat(30_000);
    const expiresAt = Date.now() + 60_000;
    for (let i = 0; i < 45; i++) {
      const id = `lease#${String(i).padStart(3, '0')}`;
      await presence.tryCreate({ key: 'repo#paged', id, owner: 'node-a', expiresAt, data: { big } });
    }
    const firstPage = await connected().send(
      new QueryCommand({
        TableName: TABLE,
        KeyConditionExpression: 'pk = :pk',
        ExpressionAttributeValues: { ':pk': { S: 'repo#paged' } },
      }),
    );
    expect(firstPage.LastEvaluatedKey).toBeDefined();
    const listed = await presence.list('repo#paged', 'lease#');
    expect(listed).toHaveLength(45);
  });

  it('answers PresenceUnavailable, with the cause, when DynamoDB cannot be reached', async () => {
    // A port nobody listens on: the connection is refused at once.
    const unreachable = makeClient('http://127.0.0.1:9', 1);
    try {
      const presence = new DynamoPresenceStore({ client: unreachable, table: TABLE });
      const error = await presence.get('repo#x', 'writer').then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(PresenceUnavailable);
      expect((error as PresenceUnavailable).cause).toBeDefined();
    } finally {
      unreachable.destroy();
    }
  });
});
