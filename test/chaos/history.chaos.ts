/**
 * The chaos run: several `narwal serve` processes sharing one store and one cache directory, many
 * concurrent real `git` clients pushing (single ref, several refs, --atomic, contended refs with
 * --force-with-lease, deletions), cloning and fetching, while faults are injected: store faults on
 * every node, SIGKILL of nodes at chosen moments and restarts, deletion of the whole cache
 * directory, skewed clocks on presence records and leases that lapse under live readers. Then the
 * history checker compares what every client heard with the log, the store is checked against
 * what the indexes name, and the orphan sweep removes what nothing names.
 *
 *   npm run test:chaos                          # quick: about 3 minutes
 *   NARWAL_CHAOS_SECONDS=1800 npm run test:chaos  # longer
 *   NARWAL_CHAOS_SEED=7 ...                      # other choices of operations and faults
 */
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { FsObjectStore } from '../../lib/store/FsObjectStore.js';
import { namedKeys, sweepOrphans } from '../../lib/wal/sweepOrphans.js';
import { Wal } from '../../lib/wal/Wal.js';
import { makeHome } from '../helpers/gitClient.js';
import { tempDataDir } from '../helpers/narwalServer.js';
import { seededRandom } from '../unit/wal/walHelpers.js';
import { ChaosClient } from './chaosClient.js';
import { NodeSlot } from './chaosNodes.js';
import { checkHistory, ZERO_OID } from './checkHistory.js';
import { FaultInjector } from './faultInjector.js';
import { type LoggedEntry, type PushOp, Recorder } from './history.js';

const SECONDS = Number(process.env.NARWAL_CHAOS_SECONDS ?? 120);
const SEED = Number(process.env.NARWAL_CHAOS_SEED ?? Date.now() % 100_000);
const CLIENTS = Number(process.env.NARWAL_CHAOS_CLIENTS ?? 8);
const REPOS = ['chaos/alpha', 'chaos/beta', 'gamma'];

/** Realistic rates: a few percent of conditional writes collide or lose, under 1% of anything fails. */
const STORE_FAULTS = [
  'put409=0.03',
  'put412=0.01',
  'put500=0.005',
  'put503=0.005',
  'put500applied=0.005',
  'puttimeoutapplied=0.005',
  'get503=0.005',
  'gettimeout=0.002',
  'head503=0.005',
  'list503=0.005',
].join(',');

const BASE_ENV = {
  NARWAL_STORE_FAULTS: STORE_FAULTS,
  NARWAL_STORE_LATENCY_MS: '2',
  // Frequent checkpoints: cold rebuilds start from them, and they race pushes for the index.
  NARWAL_CHECKPOINT_EVERY: '25',
  // Eviction every 2 s of anything idle that long, so it runs into readers all the time.
  NARWAL_IDLE_EVICT_MS: '2000',
  NARWAL_LEASE_TTL_MS: '5000',
};

describe(`chaos run (${SECONDS} s, seed ${SEED})`, () => {
  it(
    'loses nothing acknowledged, shows nothing refused, leaves no client without an answer, and only orphans the sweep removes',
    async () => {
      const random = seededRandom(SEED);
      const dataDir = await tempDataDir();
      const cacheDir = join(dataDir, 'cache');
      const slots = [
        new NodeSlot('n0', BASE_ENV),
        // Its clock runs 8 s ahead: others' 5 s leases look expired to it, so it evicts under readers.
        new NodeSlot('n1', { ...BASE_ENV, NARWAL_CLOCK_SKEW_MS: '8000' }),
        // 8 s behind with 1 s leases: its readers' leases are expired for everyone else at birth.
        new NodeSlot('n2', { ...BASE_ENV, NARWAL_CLOCK_SKEW_MS: '-8000', NARWAL_LEASE_TTL_MS: '1000' }),
      ];
      const recorder = new Recorder();
      const faults = new FaultInjector({ slots, dataDir, cacheDir, recorder, random });
      const home = await makeHome();
      const pick = () => {
        const up = slots.filter((s) => s.up);
        return up[Math.floor(random() * up.length)]?.choice() ?? null;
      };
      const clients = Array.from(
        { length: CLIENTS },
        (_, id) => new ChaosClient({ id, repos: REPOS, home, recorder, pick, random, gitTimeoutMs: 120_000 }),
      );
      try {
        await Promise.all(slots.map((s) => s.start(dataDir)));
        await Promise.all(clients.map((c) => c.init()));
        // Every repository starts with a main branch (retried: store faults apply from the start).
        for (const repo of REPOS) {
          for (let i = 0; i < 10; i++) {
            await clients[0]?.push(repo, 'seed');
            if ((await clients[0]?.read(repo, 'ls-remote'))?.has('refs/heads/main')) break;
          }
        }

        const started = performance.now();
        const deadline = Date.now() + SECONDS * 1000;
        const running = () => Date.now() < deadline;
        await Promise.all([
          ...clients.map((c) => c.run(running)),
          faults.killLoop(running, 6000),
          faults.cacheLoop(running, 20_000),
        ]);
        // Every node up again, then a last look through each: final reads are checked too.
        for (const slot of slots) await faults.restart(slot);
        await sleep(2000);
        for (const repo of REPOS) for (const _ of slots) await clients[0]?.read(repo, 'clone');
        const wallSeconds = (performance.now() - started) / 1000;
        // Nothing can publish once every node is stopped (git children of killed nodes lost their hook).
        await Promise.all(slots.map((s) => s.stop()));

        // The log, read straight from the store (no faults).
        const wal = new Wal(new FsObjectStore(join(dataDir, 'store')));
        const violations: string[] = [
          ...recorder.corrupt,
          ...recorder.unanswered,
          ...slots.flatMap((s) => s.crashes),
        ];
        let unknownLanded = 0;
        let unknownNotLanded = 0;
        let readsChecked = 0;
        let entries = 0;
        for (const repo of REPOS) {
          const loaded = await wal.readIndexFully(repo);
          if (loaded === null) {
            violations.push(`${repo}: no index`);
            continue;
          }
          const items = await wal.itemsAfter(loaded.index, 0);
          const logged: LoggedEntry[] = [];
          for (const item of items) {
            const updates = item.count === undefined ? item.updates : (await wal.entry(item.key)).updates;
            logged.push({
              seq: item.seq,
              kind: item.kind ?? 'push',
              atomic: item.atomic === true,
              updates: updates.map((u) => ({ ref: u.ref, old: u.old, new: u.new })),
            });
          }
          entries += logged.length;
          const finalRefs = new Map(
            [...(await wal.allRefs(loaded.index))].map(([ref, value]) => [ref, value.oid]),
          );
          const result = checkHistory({
            repo,
            ops: recorder.ops.filter((op) => op.repo === repo),
            entries: logged,
            finalRefs,
          });
          violations.push(...result.violations);
          unknownLanded += result.unknownLanded;
          unknownNotLanded += result.unknownNotLanded;
          readsChecked += result.readsChecked;
          // The store holds everything the index names.
          const named = await namedKeys(wal, loaded.index);
          for (const key of named) {
            if (key.endsWith('.bitmap')) continue;
            const present = await wal.store.head(key).then(
              () => true,
              () => false,
            );
            if (!present) violations.push(`${repo}: the log names ${key}, which is missing`);
          }
        }

        // The orphan sweep: first what it would remove, then remove it with a short window.
        const dry = await sweepOrphans(wal, { retentionMs: 0, dryRun: true });
        const sweptKinds = new Map<string, number>();
        const swept = await sweepOrphans(wal, {
          retentionMs: 0,
          dryRun: false,
          onOrphan: (key) => {
            const kind = key.split('.git/')[1]?.split('/')[0] ?? '?';
            sweptKinds.set(kind, (sweptKinds.get(kind) ?? 0) + 1);
          },
        });
        const again = await sweepOrphans(wal, { retentionMs: 0, dryRun: true });
        if (again.orphans !== 0) violations.push(`a second sweep still finds ${again.orphans} orphans`);
        for (const r of swept.repos)
          for (const key of r.missing) violations.push(`${r.repo}: missing ${key}`);

        // After the sweep, a fresh node with an empty cache serves every repository whole.
        await faults.deleteCache();
        await slots[0]?.start(dataDir);
        const verifier = new Recorder();
        const check = new ChaosClient({
          id: 99,
          repos: REPOS,
          home,
          recorder: verifier,
          pick: () => slots[0]?.choice() ?? null,
          random,
          gitTimeoutMs: 120_000,
        });
        await check.init();
        for (const repo of REPOS) {
          const loaded = await wal.readIndexFully(repo);
          const expected = loaded
            ? new Map([...(await wal.allRefs(loaded.index))].map(([ref, v]) => [ref, v.oid]))
            : new Map();
          const cloned = await check.read(repo, 'clone');
          const same = cloned !== null && [...cloned].sort().join() === [...expected].sort().join();
          if (!same) violations.push(`${repo}: a clone after the sweep does not match the index`);
        }
        violations.push(...verifier.corrupt, ...verifier.unanswered);
        await check.dispose();
        await slots[0]?.stop();

        // The summary.
        const pushes = recorder.ops.filter((op): op is PushOp => op.kind === 'push');
        const commands = pushes.flatMap((p) => p.commands);
        const count = <T>(items: readonly T[], key: (t: T) => string) => {
          const out: Record<string, number> = {};
          for (const item of items) out[key(item)] = (out[key(item)] ?? 0) + 1;
          return out;
        };
        const reads = recorder.ops.filter((op) => op.kind !== 'push');
        const output = slots.map((s) => s.output()).join('\n');
        const injected = count(
          [
            ...output.matchAll(
              /"message":"store fault injected","op":"(\w+)","kind":"(\w+)","applied":(\w+)/g,
            ),
          ],
          (m) => `${m[1]}${m[2]}${m[3] === 'true' ? 'applied' : ''}`,
        );
        // A reason as a key to count by: object ids and paths, which every instance has its own
        // of, left out.
        const reasonKey = (text: string, width: number) =>
          text
            .replace(/'\/[^']*'/g, "'<path>'")
            .replace(/[0-9a-f]{7,}/g, '…')
            .slice(0, width);
        // The nodes' log lines with `message`, each with its error (a node killed while it wrote
        // leaves a line cut short).
        type Logged = { repositoryGone?: boolean; error?: { name?: string; message?: string } };
        const linesOf = (message: string) =>
          output.split('\n').filter((line) => line.includes(`"message":"${message}"`));
        const logged = (message: string): Logged[] =>
          linesOf(message).map((line): Logged => {
            try {
              return JSON.parse(line) as Logged;
            } catch {
              return { error: { name: 'unreadable', message: 'a log line cut short' } };
            }
          });
        const errorKey = (line: Logged) => `${line.error?.name}: ${line.error?.message}`;
        // Why pushes were not published: the refusals below say "internal error" for a cause
        // narwal has no words for, and this names it.
        const notPublished = count(logged('push not published'), (line) =>
          reasonKey(`${line.repositoryGone ? '(its repository gone) ' : ''}${errorKey(line)}`, 120),
        );
        // What the nodes answered with a 500 (their 'unexpected error' lines), by error.
        const unexpected = count(logged('unexpected error'), (line) => reasonKey(errorKey(line), 120));
        const ngReasons = count(
          commands.filter((c) => c.outcome === 'ng'),
          (c) => reasonKey(c.reason ?? '', 60),
        );
        const summary = {
          seed: SEED,
          seconds: Math.round(wallSeconds),
          nodes: slots.length,
          clients: CLIENTS,
          operations: recorder.ops.length,
          pushes: count(pushes, (p) => p.style),
          refUpdates: count(commands, (c) => c.outcome),
          unknownLanded,
          unknownNotLanded,
          deletions: commands.filter((c) => c.new === ZERO_OID).length,
          refusals: ngReasons,
          notPublished,
          unexpectedErrors: unexpected,
          reads: count(reads, (r) => `${r.kind} ${r.outcome}`),
          // What git said when a read failed (its last line).
          readFailures: count(
            reads.filter((r) => r.outcome === 'error'),
            (r) => `${r.kind}: ${reasonKey(r.reason ?? '', 100)}`,
          ),
          readsChecked,
          unanswered: recorder.unanswered.length + verifier.unanswered.length,
          logEntries: entries,
          storeFaultsInjected: injected,
          processesKilled: faults.kills,
          cacheDeletions: faults.cacheDeletions,
          // Standing faults: skewed clocks on presence records, and leases that lapse under readers.
          clockSkewMs: Object.fromEntries(
            slots.map((s) => [s.name, Number(s.env.NARWAL_CLOCK_SKEW_MS ?? 0)]),
          ),
          leaseTtlMs: Object.fromEntries(slots.map((s) => [s.name, Number(s.env.NARWAL_LEASE_TTL_MS)])),
          orphansFound: dry.orphans,
          orphansSwept: Object.fromEntries(sweptKinds),
          violations: violations.length,
        };
        console.log(`chaos summary ${JSON.stringify(summary, null, 2)}`);
        if (violations.length > 0) console.log(`violations:\n${violations.slice(0, 100).join('\n')}`);
        // The first few 500s whole, with their stacks: what the counts above name.
        const firstUnexpected = linesOf('unexpected error').slice(0, 3);
        if (firstUnexpected.length > 0) console.log(`unexpected errors:\n${firstUnexpected.join('\n')}`);
        expect(violations).toEqual([]);
        // The run made history worth checking.
        expect(commands.filter((c) => c.outcome === 'ok').length).toBeGreaterThan(SECONDS / 2);
        expect(faults.killed).toBeGreaterThan(0);
      } finally {
        await Promise.all(slots.map((s) => s.stop()));
        await Promise.all(clients.map((c) => c.dispose()));
        await rm(home, { recursive: true, force: true });
        await rm(dataDir, { recursive: true, force: true, maxRetries: 5 });
      }
    },
    (SECONDS + 600) * 1000,
  );
});
