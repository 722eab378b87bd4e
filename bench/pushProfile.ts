/**
 * Where the time of one push goes. Sequential one-commit pushes to servers started with their
 * instrumentation on (narwal: NARWAL_TRACE_DIR, every store operation and git's trace2 events; the
 * peer: git's trace2 events), a pause after each so background work (narwal builds the next cache
 * generation after a publish) is over before the next push starts: each push's window then holds
 * only its own work. Per push: the client's wall time, the time of each git process the server
 * ran, and the store operations - how many, how long in total, and how many of them the push
 * waited for one after another (a lower bound on its store round trips).
 */
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { StoreSpan } from '../lib/store/TracingObjectStore.js';
import { push, pushOk, type SourceRepo } from './history.js';
import { sequentialRounds } from './logPage.js';
import type { BenchServer } from './servers.js';
import { median } from './stats.js';
import { type GitSpan, readTrace2Dir } from './trace2.js';

export interface PushTrace {
  readonly clientMs: number;
  /** Summed duration per git command that ended within the push, from its start or the push's. */
  readonly git: Record<string, number>;
  readonly storeOps: number;
  readonly storeOpsByKind: Record<string, number>;
  /** Time covered by at least one store operation. */
  readonly storeBusyMs: number;
  readonly storeRounds: number;
  readonly presenceOps: number;
  readonly presenceBusyMs: number;
}

export interface ProfileResult {
  readonly server: string;
  readonly latencyMs: number;
  readonly pushes: PushTrace[];
  /** Medians over the pushes. */
  readonly median: {
    readonly clientMs: number;
    readonly git: Record<string, number>;
    readonly storeOps: number;
    readonly storeBusyMs: number;
    readonly storeRounds: number;
    readonly presenceOps: number;
    readonly presenceBusyMs: number;
  };
  readonly storeOpsByKind: Record<string, number>;
}

export async function profilePushes(options: {
  server: BenchServer;
  /** Where the server writes its traces: NARWAL_TRACE_DIR, or the peer's trace2 directory. */
  traceDir: string;
  source: SourceRepo;
  commits: readonly string[];
  repo: string;
  pauseMs: number;
}): Promise<{ windows: { start: number; ms: number }[] }> {
  const { server, source } = options;
  const url = server.repoUrl(options.repo);
  await server.newRepo(options.repo);
  await pushOk(source, url, [`${source.root}:refs/heads/main`]);
  await sleep(options.pauseMs);
  const windows: { start: number; ms: number }[] = [];
  for (const oid of options.commits) {
    const out = await push(source, url, [`${oid}:refs/heads/main`]);
    if (!out.ok) throw new Error(`${server.name}: profiled push failed: ${out.error}`);
    windows.push({ start: out.startedAt, ms: out.ms });
    await sleep(options.pauseMs);
  }
  return { windows };
}

/** Reads the traces once the server has stopped (its trace files are complete then). */
export async function analyzeProfile(options: {
  server: string;
  latencyMs: number;
  windows: readonly { start: number; ms: number }[];
  /** narwal: NARWAL_TRACE_DIR (store-*.jsonl, git/); the peer: its trace2 directory. */
  storeDir?: string;
  gitDir: string;
}): Promise<ProfileResult> {
  const gitSpans = await readTrace2Dir(options.gitDir);
  const storeSpans = options.storeDir !== undefined ? await readStoreSpans(options.storeDir) : [];
  const pushes = options.windows.map((w) => traceOf(w, gitSpans, storeSpans));
  const gitNames = [...new Set(pushes.flatMap((p) => Object.keys(p.git)))].sort();
  const kinds: Record<string, number> = {};
  for (const p of pushes)
    for (const [kind, n] of Object.entries(p.storeOpsByKind))
      kinds[kind] = (kinds[kind] ?? 0) + n / pushes.length;
  return {
    server: options.server,
    latencyMs: options.latencyMs,
    pushes,
    median: {
      clientMs: median(pushes.map((p) => p.clientMs)),
      git: Object.fromEntries(gitNames.map((name) => [name, median(pushes.map((p) => p.git[name] ?? 0))])),
      storeOps: median(pushes.map((p) => p.storeOps)),
      storeBusyMs: median(pushes.map((p) => p.storeBusyMs)),
      storeRounds: median(pushes.map((p) => p.storeRounds)),
      presenceOps: median(pushes.map((p) => p.presenceOps)),
      presenceBusyMs: median(pushes.map((p) => p.presenceBusyMs)),
    },
    storeOpsByKind: kinds,
  };
}

export function traceOf(
  window: { start: number; ms: number },
  git: GitSpan[],
  store: StoreSpan[],
): PushTrace {
  const end = window.start + window.ms;
  const inside = <T extends { start: number }>(s: T) => s.start >= window.start && s.start < end;
  // A git process belongs to the push it ended in, counted from the push's start at the earliest:
  // narwal's receive-pack is started ahead of the push that takes it, and waits until then.
  const byName: Record<string, number> = {};
  for (const span of git) {
    const exit = span.start + span.ms;
    if (exit < window.start || exit >= end) continue;
    byName[span.name] = (byName[span.name] ?? 0) + (exit - Math.max(span.start, window.start));
  }
  const ours = store.filter(inside);
  const log = ours.filter((s) => s.store === 'store');
  const presence = ours.filter((s) => s.store !== 'store');
  const byKind: Record<string, number> = {};
  for (const s of log) {
    const kind = `${s.op} ${keyKind(s.key)}${s.conditional ? ' (conditional)' : ''}`;
    byKind[kind] = (byKind[kind] ?? 0) + 1;
  }
  return {
    clientMs: window.ms,
    git: byName,
    storeOps: log.length,
    storeOpsByKind: byKind,
    storeBusyMs: covered(log),
    storeRounds: sequentialRounds(log),
    presenceOps: presence.length,
    presenceBusyMs: covered(presence),
  };
}

/** What a key is, without the repository: `index.json`, `entries/`, `packs/`, `log/`, `tables/`... */
export function keyKind(key: string): string {
  const match = /\.git\/([^/]+)/.exec(key);
  if (!match?.[1]) return key.split('/')[0] ?? key;
  return match[1].endsWith('.json') ? match[1] : `${match[1]}/`;
}

/** Milliseconds covered by the union of the spans. */
export function covered(spans: readonly { start: number; ms: number }[]): number {
  const sorted = [...spans].sort((a, b) => a.start - b.start);
  let total = 0;
  let from = Number.NaN;
  let to = Number.NaN;
  for (const s of sorted) {
    if (Number.isNaN(to) || s.start > to) {
      if (!Number.isNaN(to)) total += to - from;
      from = s.start;
      to = s.start + s.ms;
    } else to = Math.max(to, s.start + s.ms);
  }
  if (!Number.isNaN(to)) total += to - from;
  return total;
}

async function readStoreSpans(dir: string): Promise<StoreSpan[]> {
  const files = (await readdir(dir).catch(() => [] as string[])).filter((f) => f.endsWith('.jsonl'));
  const spans: StoreSpan[] = [];
  for (const file of files) {
    for (const line of (await readFile(join(dir, file), 'utf8')).split('\n')) {
      if (line !== '') spans.push(JSON.parse(line) as StoreSpan);
    }
  }
  return spans;
}
