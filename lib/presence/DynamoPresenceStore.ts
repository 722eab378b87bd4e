/**
 * The presence port over one DynamoDB table: partition key `pk` = record key, sort key `sk` =
 * record id; attributes `owner` (S), `expiresAtMs` (N), `ttl` (N, epoch seconds, for DynamoDB TTL),
 * `data` (M of S) and `writeId` (S, unique per tryCreate). Every state change is a single-item
 * conditional write, so DynamoDB serialises racing writers on the item:
 * https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/Expressions.ConditionExpressions.html
 *
 * Expiry is absolute and compared with the caller's clock in the condition (`:now`), never with
 * DynamoDB's: TTL deletes expired items late (typically within a few days), so every read filters
 * on `expiresAtMs` too. https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/howitworks-ttl.html
 * A record counts while `now <= expiresAtMs` ("after which it no longer counts").
 * `owner` and `ttl` are DynamoDB reserved words, hence the `#names` in expressions.
 */

import { randomUUID } from 'node:crypto';
import {
  type AttributeValue,
  type CreateTableCommandInput,
  DeleteItemCommand,
  type DynamoDBClient,
  GetItemCommand,
  PutItemCommand,
  QueryCommand,
  UpdateItemCommand,
} from '@aws-sdk/client-dynamodb';
import { classifyDynamoError } from './classifyDynamoError.js';
import type { PresenceRecord, PresenceStore } from './PresenceStore.js';

export interface DynamoPresenceStoreOptions {
  /** Configured by the caller (region, endpoint, retries, timeouts); never created here. */
  readonly client: DynamoDBClient;
  readonly table: string;
  /** Milliseconds since the epoch; every expiry check uses it. Default `Date.now`. */
  readonly now?: () => number;
}

type Item = Record<string, AttributeValue>;

/** The table the adapter expects, on demand (for tests and the deployment template). */
export function presenceTableDefinition(tableName: string): CreateTableCommandInput {
  return {
    TableName: tableName,
    BillingMode: 'PAY_PER_REQUEST',
    AttributeDefinitions: [
      { AttributeName: 'pk', AttributeType: 'S' },
      { AttributeName: 'sk', AttributeType: 'S' },
    ],
    KeySchema: [
      { AttributeName: 'pk', KeyType: 'HASH' },
      { AttributeName: 'sk', KeyType: 'RANGE' },
    ],
  };
}

export class DynamoPresenceStore implements PresenceStore {
  readonly #client: DynamoDBClient;
  readonly #table: string;
  readonly #now: () => number;

  constructor({ client, table, now = Date.now }: DynamoPresenceStoreOptions) {
    this.#client = client;
    this.#table = table;
    this.#now = now;
  }

  async tryCreate(record: PresenceRecord): Promise<boolean> {
    const writeId = randomUUID();
    try {
      await this.#client.send(
        new PutItemCommand({
          TableName: this.#table,
          Item: { ...toItem(record), writeId: { S: writeId } },
          ConditionExpression: 'attribute_not_exists(pk) OR expiresAtMs < :now',
          ExpressionAttributeValues: { ':now': number(this.#now()) },
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        }),
      );
      return true;
    } catch (error) {
      const failure = classifyDynamoError(error, `PutItem ${record.key} ${record.id}`);
      if (failure.kind !== 'conditionFailed') throw failure.error;
      // The SDK retries a PutItem whose answer was lost (5xx, timeout); if the first attempt
      // landed, the retry finds our own item in the way. Only this call wrote this writeId.
      return failure.item?.writeId?.S === writeId;
    }
  }

  async renew(key: string, id: string, owner: string, expiresAt: number): Promise<boolean> {
    try {
      await this.#client.send(
        new UpdateItemCommand({
          TableName: this.#table,
          Key: keyOf(key, id),
          UpdateExpression: 'SET expiresAtMs = :expiresAt, #ttl = :ttl',
          ConditionExpression: '#owner = :owner AND expiresAtMs >= :now',
          ExpressionAttributeNames: { '#owner': 'owner', '#ttl': 'ttl' },
          ExpressionAttributeValues: {
            ':expiresAt': number(expiresAt),
            ':ttl': number(ttlSeconds(expiresAt)),
            ':owner': { S: owner },
            ':now': number(this.#now()),
          },
        }),
      );
      return true;
    } catch (error) {
      const failure = classifyDynamoError(error, `UpdateItem ${key} ${id}`);
      if (failure.kind !== 'conditionFailed') throw failure.error;
      return false;
    }
  }

  async release(key: string, id: string, owner: string): Promise<void> {
    try {
      // Conditional on the owner, so a record someone else created over ours (after it expired)
      // is never deleted.
      await this.#client.send(
        new DeleteItemCommand({
          TableName: this.#table,
          Key: keyOf(key, id),
          ConditionExpression: '#owner = :owner',
          ExpressionAttributeNames: { '#owner': 'owner' },
          ExpressionAttributeValues: { ':owner': { S: owner } },
        }),
      );
    } catch (error) {
      const failure = classifyDynamoError(error, `DeleteItem ${key} ${id}`);
      // Gone already, or not ours: nothing to do.
      if (failure.kind !== 'conditionFailed') throw failure.error;
    }
  }

  async get(key: string, id: string): Promise<PresenceRecord | null> {
    let item: Item | undefined;
    try {
      const res = await this.#client.send(
        new GetItemCommand({ TableName: this.#table, Key: keyOf(key, id), ConsistentRead: true }),
      );
      item = res.Item;
    } catch (error) {
      throw failed(error, `GetItem ${key} ${id}`);
    }
    if (item === undefined) return null;
    const record = fromItem(item);
    return this.#now() <= record.expiresAt ? record : null;
  }

  async list(key: string, idPrefix?: string): Promise<PresenceRecord[]> {
    const now = this.#now();
    const byPrefix = idPrefix !== undefined && idPrefix !== '';
    const values: Item = { ':pk': { S: key }, ':now': number(now) };
    if (byPrefix) values[':prefix'] = { S: idPrefix };
    const records: PresenceRecord[] = [];
    let startKey: Item | undefined;
    do {
      let res: { Items?: Item[]; LastEvaluatedKey?: Item };
      try {
        res = await this.#client.send(
          new QueryCommand({
            TableName: this.#table,
            ConsistentRead: true,
            KeyConditionExpression: byPrefix ? 'pk = :pk AND begins_with(sk, :prefix)' : 'pk = :pk',
            // Saves the transfer, not the read capacity: DynamoDB filters after reading.
            FilterExpression: 'expiresAtMs >= :now',
            ExpressionAttributeValues: values,
            ExclusiveStartKey: startKey,
          }),
        );
      } catch (error) {
        throw failed(error, `Query ${key} ${idPrefix ?? ''}`);
      }
      for (const item of res.Items ?? []) {
        const record = fromItem(item);
        if (now <= record.expiresAt) records.push(record);
      }
      startKey = res.LastEvaluatedKey;
    } while (startKey !== undefined);
    return records;
  }
}

function failed(error: unknown, operation: string): Error {
  const failure = classifyDynamoError(error, operation);
  // A read has no condition; keep the shape total anyway.
  return failure.kind === 'conditionFailed'
    ? new Error(`unexpected condition failure on ${operation}`)
    : failure.error;
}

function keyOf(key: string, id: string): Item {
  return { pk: { S: key }, sk: { S: id } };
}

function number(value: number): AttributeValue {
  return { N: String(value) };
}

/** DynamoDB TTL reads epoch seconds; round up so TTL never deletes a record while it counts. */
function ttlSeconds(expiresAtMs: number): number {
  return Math.ceil(expiresAtMs / 1000);
}

function toItem(record: PresenceRecord): Item {
  const item: Item = {
    ...keyOf(record.key, record.id),
    owner: { S: record.owner },
    expiresAtMs: number(record.expiresAt),
    ttl: number(ttlSeconds(record.expiresAt)),
  };
  if (record.data !== undefined) {
    item.data = { M: Object.fromEntries(Object.entries(record.data).map(([k, v]) => [k, { S: v }])) };
  }
  return item;
}

function fromItem(item: Item): PresenceRecord {
  const key = item.pk?.S;
  const id = item.sk?.S;
  const owner = item.owner?.S;
  const expiresAt = Number(item.expiresAtMs?.N);
  if (key === undefined || id === undefined || owner === undefined || !Number.isFinite(expiresAt)) {
    throw new Error(`presence item ${JSON.stringify(item.pk)} ${JSON.stringify(item.sk)} is malformed`);
  }
  const map = item.data?.M;
  if (map === undefined) return { key, id, owner, expiresAt };
  const data: Record<string, string> = {};
  for (const [name, value] of Object.entries(map)) {
    if (value.S === undefined) throw new Error(`presence item ${key} ${id} has a non-string data.${name}`);
    data[name] = value.S;
  }
  return { key, id, owner, expiresAt, data };
}
