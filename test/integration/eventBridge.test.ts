/**
 * The EventBridge adapter against a real HTTP endpoint receiving the SDK's real PutEvents
 * requests (signed, awsJson1_1): entries as the adapter builds them, partial failures, whole
 * failures, and a real `narwal serve` delivering the events of git pushes in order.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EventBridgeClient } from '@aws-sdk/client-eventbridge';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EventBridgeSink } from '../../lib/events/EventBridgeSink.js';
import { DeliveryFailed } from '../../lib/events/EventSink.js';
import type { PushEvent } from '../../lib/events/PushEvent.js';
import { EventBridgeEndpoint } from '../helpers/eventBridgeEndpoint.js';
import { commitFile, gitOk, makeHome, workRepo } from '../helpers/gitClient.js';
import { startProcess } from '../helpers/narwalServer.js';

let endpoint: EventBridgeEndpoint;
beforeAll(async () => {
  endpoint = new EventBridgeEndpoint();
  await endpoint.listen();
});
afterAll(async () => {
  await endpoint?.close();
});

const CREDENTIALS = { accessKeyId: 'AKIDNARWALTEST', secretAccessKey: 'narwal-test-secret' };

function event(seq: number): PushEvent {
  return {
    id: `team/app@abc#${seq}`,
    repo: 'team/app',
    incarnation: 'abc',
    seq,
    kind: 'push',
    time: '2026-01-02T03:04:05.000Z',
    who: { token: 'dev' },
    updates: [{ ref: 'refs/heads/main', old: '0'.repeat(40), new: `${seq}`.padStart(40, 'a') }],
    atomic: false,
  };
}

function sink(): EventBridgeSink {
  const client = new EventBridgeClient({
    endpoint: endpoint.url,
    region: 'eu-west-1',
    credentials: CREDENTIALS,
    maxAttempts: 1,
  });
  return new EventBridgeSink({ client, bus: 'narwal-bus', source: 'narwal.test' });
}

describe('EventBridgeSink', () => {
  it('puts each event as an entry the SDK signs and sends as PutEvents', async () => {
    const from = endpoint.accepted.length;
    expect(await sink().deliver([event(1), event(2), event(3)])).toBe(3);
    const last = endpoint.requests[endpoint.requests.length - 1];
    expect(last?.target).toBe('AWSEvents.PutEvents');
    expect(last?.authorization).toMatch(
      /^AWS4-HMAC-SHA256 Credential=AKIDNARWALTEST\/\d{8}\/eu-west-1\/events\/aws4_request/,
    );
    const entries = endpoint.accepted.slice(from);
    expect(entries.map((e) => [e.EventBusName, e.Source, e.DetailType])).toEqual([
      ['narwal-bus', 'narwal.test', 'narwal.push'],
      ['narwal-bus', 'narwal.test', 'narwal.push'],
      ['narwal-bus', 'narwal.test', 'narwal.push'],
    ]);
    expect(entries.map((e) => JSON.parse(e.Detail ?? '{}'))).toEqual([event(1), event(2), event(3)]);
    expect(entries[0]?.Time).toBe(Date.parse('2026-01-02T03:04:05.000Z') / 1000);
  });

  it('counts only the accepted prefix when PutEvents fails some entries', async () => {
    endpoint.failNext({ failEntries: [1] });
    expect(await sink().deliver([event(4), event(5), event(6)])).toBe(1);
    endpoint.failNext({ failEntries: [0] });
    await expect(sink().deliver([event(5), event(6)])).rejects.toThrow(/event 5 refused \(InternalFailure/);
  });

  it('turns a refused request into DeliveryFailed', async () => {
    endpoint.failNext({ status: 400, type: 'ThrottlingException' });
    const failed = sink().deliver([event(7)]);
    await expect(failed).rejects.toBeInstanceOf(DeliveryFailed);
    await expect(failed).rejects.toThrow('PutEvents failed (ThrottlingException)');
  });
});

describe('events of git pushes on EventBridge', () => {
  it('delivers every published entry in order, once, after the endpoint failed at first', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'narwal-eb-'));
    const home = await makeHome();
    const server = await startProcess({
      dataDir,
      env: {
        NARWAL_EVENTBRIDGE_BUS: 'narwal-bus',
        NARWAL_EVENTBRIDGE_ENDPOINT: endpoint.url,
        AWS_REGION: 'eu-west-1',
        AWS_ACCESS_KEY_ID: CREDENTIALS.accessKeyId,
        AWS_SECRET_ACCESS_KEY: CREDENTIALS.secretAccessKey,
        NARWAL_EVENTS_BACKOFF_MS: '10',
        NARWAL_EVENTS_BACKOFF_CAP_MS: '50',
      },
    });
    try {
      const from = endpoint.accepted.length;
      // The SDK retries a 500 itself (3 attempts): the first delivery attempt fails whole.
      endpoint.failNext(
        { status: 500, type: 'InternalException' },
        { status: 500, type: 'InternalException' },
        { status: 500, type: 'InternalException' },
        { status: 500, type: 'InternalException' },
      );
      const work = await workRepo(home, 1);
      const url = `${server.authUrl}/team/bridged.git`;
      await gitOk(['push', url, 'main'], { cwd: work, home });
      for (let i = 0; i < 3; i++) {
        await commitFile(work, home, `f${i}.txt`, `${i}\n`);
        await gitOk(['push', url, 'main'], { cwd: work, home });
      }
      const deadline = Date.now() + 30_000;
      while (endpoint.accepted.length - from < 4 && Date.now() < deadline)
        await new Promise((done) => setTimeout(done, 50));
      const details = endpoint.accepted.slice(from).map((e) => JSON.parse(e.Detail ?? '{}') as PushEvent);
      expect(details.map((d) => d.seq)).toEqual([1, 2, 3, 4]);
      expect(details.every((d) => d.repo === 'team/bridged' && d.kind === 'push')).toBe(true);
      expect(new Set(details.map((d) => d.id)).size).toBe(4);
    } finally {
      await server.stop();
      await rm(dataDir, { recursive: true, force: true });
    }
  });
});
