/**
 * Push events to a webhook through real git pushes: the receiver fails the first deliveries
 * (5xx, a timeout, then refused connections) and then accepts. Every seq is then accepted
 * exactly once by its idempotency key, in order, each signature verified; a refused push makes
 * no event; a replay from a seq delivers those events again with the same keys.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { App } from '../../lib/app.js';
import { commitFile, git, gitOk, makeHome, workRepo } from '../helpers/gitClient.js';
import { narwalCli } from '../helpers/narwalCli.js';
import { ADMIN_TOKEN, type RunningNarwal, startInProcess } from '../helpers/narwalServer.js';
import { WebhookReceiver } from '../helpers/webhookReceiver.js';

const SECRET = 'webhook-secret-for-tests';
const REPO = 'team/hooked';
let receiver: WebhookReceiver;
let server: RunningNarwal & { app: App };
let env: Record<string, string>;
let home: string;

beforeAll(async () => {
  receiver = new WebhookReceiver(SECRET);
  await receiver.listen();
  env = {
    NARWAL_WEBHOOK_URL: receiver.url,
    // The receiver listens on this machine's loopback.
    NARWAL_WEBHOOK_ALLOW_PRIVATE: 'true',
    NARWAL_WEBHOOK_SECRET: SECRET,
    NARWAL_WEBHOOK_TIMEOUT_MS: '300',
    NARWAL_EVENTS_ATTEMPTS: '3',
    NARWAL_EVENTS_BACKOFF_MS: '10',
    NARWAL_EVENTS_BACKOFF_CAP_MS: '50',
  };
  server = await startInProcess({ env });
  home = await makeHome();
});
afterAll(async () => {
  await server?.stop();
  await receiver?.close();
});

async function head(): Promise<number> {
  return (await server.app.wal.readIndexFully(REPO))?.index.seq ?? 0;
}

describe('webhook events', () => {
  it('delivers every seq exactly once, in order, after the receiver failed the first deliveries', async () => {
    const url = `${server.authUrl}/${REPO}.git`;
    const work = await workRepo(home, 1);
    // The receiver answers 500, then hangs past the timeout, then 503: three attempts, all failed.
    receiver.failNext(500, 'hang', 503);
    await gitOk(['push', url, 'main'], { cwd: work, home });
    await server.app.idle();
    expect(receiver.deliveries.map((d) => d.answer)).toEqual([500, 'hang', 503]);
    expect(receiver.accepted).toEqual([]);

    // Now nothing listens: connections are refused.
    await receiver.close();
    await commitFile(work, home, 'two.txt', '2\n');
    await gitOk(['push', url, 'main', 'main:refs/heads/keep'], { cwd: work, home });
    const protect = await fetch(`${server.url}/api/v1/repos/${REPO}/-/protection`, {
      method: 'PUT',
      headers: {
        authorization: `Basic ${Buffer.from(`admin:${ADMIN_TOKEN}`).toString('base64')}`,
        'content-type': 'application/json',
      },
      body: JSON.stringify({ rule: { pattern: 'refs/heads/keep', denyDelete: true } }),
    });
    expect(protect.status).toBe(200);
    await server.app.idle();
    // A refused push writes no entry, so there is no event for it.
    const refused = await git(['push', url, ':refs/heads/keep'], { cwd: work, home });
    expect(refused.stderr).toContain('protected: refs/heads/keep may not be deleted');
    expect(await head()).toBe(3);

    await receiver.listen();
    const last = await commitFile(work, home, 'three.txt', '3\n');
    await gitOk(['push', url, 'main'], { cwd: work, home });
    await server.app.idle();

    expect(await head()).toBe(4);
    expect(receiver.accepted.map((e) => e.seq)).toEqual([1, 2, 3, 4]);
    expect(receiver.accepted.map((e) => e.kind)).toEqual(['push', 'push', 'protect', 'push']);
    expect(new Set(receiver.accepted.map((e) => e.id)).size).toBe(4);
    expect(receiver.duplicates).toEqual([]);
    expect(receiver.deliveries.every((d) => d.signed)).toBe(true);
    const [first, second, rules, fourth] = receiver.accepted;
    expect(first).toMatchObject({ repo: REPO, who: { token: 'admin' }, atomic: false });
    expect(first?.updates.map((u) => u.ref)).toEqual(['refs/heads/main']);
    expect(second?.updates.map((u) => u.ref).sort()).toEqual(['refs/heads/keep', 'refs/heads/main']);
    expect(rules?.protection).toEqual([{ pattern: 'refs/heads/keep', denyDelete: true }]);
    expect(fourth?.updates).toEqual([{ ref: 'refs/heads/main', old: expect.any(String), new: last }]);
    expect(fourth?.id).toBe(`${REPO}@${first?.incarnation}#4`);
    // No event describes the refused deletion.
    expect(receiver.accepted.flatMap((e) => e.updates).some((u) => /^0+$/.test(u.new))).toBe(false);

    // Catching up again finds nothing to send.
    const before = receiver.deliveries.length;
    const progress = await server.app.catchUpEvents();
    expect(progress).toEqual([{ sink: 'webhook', delivered: 0, cursor: 4, head: 4 }]);
    expect(receiver.deliveries.length).toBe(before);
  });

  it('resumes from the cursor after delivery ran out of attempts, at the next catch-up', async () => {
    await receiver.close();
    const work = await workRepo(home, 0, 'resume');
    await gitOk(['fetch', '-q', `${server.authUrl}/${REPO}.git`, 'main'], { cwd: work, home });
    await gitOk(['checkout', '-q', '-B', 'main', 'FETCH_HEAD'], { cwd: work, home });
    await commitFile(work, home, 'five.txt', '5\n');
    await gitOk(['push', `${server.authUrl}/${REPO}.git`, 'main'], { cwd: work, home });
    await server.app.idle();
    expect(receiver.accepted.map((e) => e.seq)).toEqual([1, 2, 3, 4]);
    await receiver.listen();
    const progress = await server.app.catchUpEvents();
    expect(progress).toEqual([{ sink: 'webhook', delivered: 1, cursor: 5, head: 5 }]);
    expect(receiver.accepted.map((e) => e.seq)).toEqual([1, 2, 3, 4, 5]);
  });

  it('replays from a seq with `narwal events replay`, with the same idempotency keys', async () => {
    const cli = { dataDir: server.dataDir, env };
    const replay = await narwalCli(['events', 'replay', REPO, '--from', '2'], cli);
    expect(replay.code, replay.stderr).toBe(0);
    expect(replay.stdout).toContain('webhook: delivered 4 events from #2; cursor at #5 of #5');
    expect(receiver.duplicates.map((e) => e.seq)).toEqual([2, 3, 4, 5]);
    expect(receiver.accepted.map((e) => e.seq)).toEqual([1, 2, 3, 4, 5]);
    const status = await narwalCli(['events', 'status', REPO], cli);
    expect(status.stdout).toContain('webhook: delivered up to #5 of #5');
    expect((await narwalCli(['events', 'replay', REPO], cli)).code).toBe(2);
    expect((await narwalCli(['events', 'replay', REPO, '--from', '1', '--to', 'nowhere'], cli)).code).toBe(2);
  });
});
