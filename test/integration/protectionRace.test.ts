/**
 * A race between rule changes and pushes: one node toggles protection rules through the JSON API
 * while git clients push through another node. The invariant, checked from the log afterwards:
 * no push entry violates the rules in force just before it in the log (the rules the index it
 * was CASed against held), whatever the interleaving.
 */
import { rm } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { App } from '../../lib/app.js';
import { type ProtectionRule, protectionProblem } from '../../lib/policy/protectionRules.js';
import { commitFile, git, gitOk, makeHome, workRepo } from '../helpers/gitClient.js';
import { ADMIN_TOKEN, type RunningNarwal, startInProcess, tempDataDir } from '../helpers/narwalServer.js';

const REPO = 'race/app';
const ROUNDS = 30;
let dataDir: string;
let pushNode: RunningNarwal & { app: App };
let ruleNode: RunningNarwal & { app: App };
let home: string;
let devToken: string;

beforeAll(async () => {
  dataDir = await tempDataDir();
  pushNode = await startInProcess({ dataDir });
  ruleNode = await startInProcess({ dataDir });
  home = await makeHome();
  devToken = (
    await pushNode.app.tokens.create({ name: 'dev', grants: [{ scope: 'write', pattern: 'race/*' }] })
  ).token;
});
afterAll(async () => {
  await Promise.all([pushNode?.stop(), ruleNode?.stop()]);
  await rm(dataDir, { recursive: true, force: true });
});

const RULES: ProtectionRule[][] = [
  [{ pattern: 'refs/heads/main', pushers: ['bot'] }],
  [{ pattern: 'refs/heads/force', denyForce: true }],
  [],
  [
    { pattern: 'refs/heads/main', pushers: ['bot'] },
    { pattern: 'refs/heads/force', denyForce: true },
  ],
];

async function putRules(rules: ProtectionRule[]): Promise<void> {
  const response = await fetch(`${ruleNode.url}/api/v1/repos/${REPO}/-/protection`, {
    method: 'PUT',
    headers: {
      authorization: `Basic ${Buffer.from(`admin:${ADMIN_TOKEN}`).toString('base64')}`,
      'content-type': 'application/json',
    },
    body: JSON.stringify({ rules }),
  });
  if (response.status !== 200) throw new Error(`PUT rules: ${response.status} ${await response.text()}`);
}

describe('rule changes racing pushes', () => {
  it('never lets a push land that the rules in force at its CAS refuse', async () => {
    await pushNode.app.wal.createRepo(REPO, { public: false });
    const work = await workRepo(home, 1, 'race');
    const url = `${pushNode.url.replace('://', `://dev:${devToken}@`)}/${REPO}.git`;
    await gitOk(['push', url, 'main', 'main:force'], { cwd: work, home });
    const forceWork = await workRepo(home, 0, 'force');
    await gitOk(['fetch', '-q', url, 'force:force'], { cwd: forceWork, home });
    await gitOk(['checkout', '-q', 'force'], { cwd: forceWork, home });

    let landed = 0;
    let refused = 0;
    const outcome = (code: number, stderr: string) => {
      if (code === 0) landed++;
      else if (stderr.includes('protected:')) refused++;
      else throw new Error(`push failed for another reason: ${stderr}`);
    };
    const toggles = (async () => {
      for (let i = 0; i < ROUNDS; i++) await putRules(RULES[i % RULES.length] ?? []);
    })();
    // Fast-forwards of main by a token that the main rule does not name.
    const mainPushes = (async () => {
      for (let i = 0; i < ROUNDS; i++) {
        await commitFile(work, home, `main-${i}.txt`, `${i}\n`);
        const out = await git(['push', url, 'main'], { cwd: work, home });
        outcome(out.code, out.stderr);
      }
    })();
    // Force-pushes of `force`: every round rewrites its last commit.
    const forcePushes = (async () => {
      for (let i = 0; i < ROUNDS; i++) {
        await gitOk(['commit', '-q', '--amend', '--allow-empty', '-m', `rewrite ${i}`], {
          cwd: forceWork,
          home,
        });
        const out = await git(['push', '--force', url, 'force'], { cwd: forceWork, home });
        outcome(out.code, out.stderr);
      }
    })();
    await Promise.all([toggles, mainPushes, forcePushes]);

    // Replay the log: rules as each protect entry set them, every push checked against them.
    const { wal } = pushNode.app;
    const loaded = await wal.readIndexFully(REPO);
    if (loaded === null) throw new Error('no index');
    let rules: readonly ProtectionRule[] = [];
    let protects = 0;
    let checked = 0;
    const violations: string[] = [];
    for (const item of await wal.itemsAfter(loaded.index, 0)) {
      const entry = await wal.entry(item.key);
      if (entry.kind === 'protect') {
        rules = entry.protection ?? [];
        protects++;
        continue;
      }
      for (const u of entry.updates) {
        const ancestor = await git(['merge-base', '--is-ancestor', u.old, u.new], {
          cwd: u.ref === 'refs/heads/force' ? forceWork : work,
          home,
        });
        const fastForward = ancestor.code === 0;
        const problem = protectionProblem(rules, { ...u, fastForward }, entry.who);
        checked++;
        if (problem !== undefined) violations.push(`#${item.seq} ${u.ref}: ${problem}`);
      }
    }
    expect(violations).toEqual([]);
    // The race was real: rules changed throughout, and pushes both landed and were refused.
    expect(protects).toBeGreaterThanOrEqual(ROUNDS - 2);
    expect(landed).toBeGreaterThan(0);
    expect(refused).toBeGreaterThan(0);
    expect(checked).toBe(landed + 2);
    expect(loaded.index.protection ?? []).toEqual(RULES[(ROUNDS - 1) % RULES.length]);
  });
});
