/**
 * Seed 000's monitor page read one store object per log entry, serially: 86 s for 327 entries.
 * What the monitor page and its JSON API (bench/monitorPages.ts) are built on:
 * reading pages of the log through Wal (lib/wal/Wal.ts) from the store with every operation
 * delayed by `latencyMs`, by a fresh Wal each time (nothing cached): the index plus the newest 20
 * items (what `narwal log` and the HTML page show), and the same for a late page (the oldest
 * entries, the far end of the log) and one in the middle.
 */
import { FaultyObjectStore } from '../lib/store/FaultyObjectStore.js';
import { FsObjectStore } from '../lib/store/FsObjectStore.js';
import { TracingObjectStore } from '../lib/store/TracingObjectStore.js';
import { Wal } from '../lib/wal/Wal.js';
import { median } from './stats.js';

export interface LogPageProbe {
  readonly page: 'newest' | 'middle' | 'oldest';
  readonly items: number;
  readonly ms: number[];
  readonly medianMs: number;
  /** Store reads per probe, and how many of them were in sequence (the rest overlapped). */
  readonly storeReads: number;
  readonly sequentialRounds: number;
}

export async function probeLogPages(options: {
  storeRoot: string;
  repo: string;
  latencyMs: number;
  probes: number;
  size?: number;
}): Promise<{ entries: number; latencyMs: number; pages: LogPageProbe[] }> {
  const size = options.size ?? 20;
  let entries = 0;
  const pages: LogPageProbe[] = [];
  for (const page of ['newest', 'middle', 'oldest'] as const) {
    const ms: number[] = [];
    let storeReads = 0;
    let rounds = 0;
    for (let p = 0; p < options.probes; p++) {
      const spans: { start: number; ms: number }[] = [];
      const store = new TracingObjectStore(
        new FaultyObjectStore(new FsObjectStore(options.storeRoot), {
          latencyMs: options.latencyMs,
          faults: [],
        }),
        'store',
        (span) => spans.push(span),
      );
      const wal = new Wal(store);
      const started = performance.now();
      const loaded = await wal.readIndex(options.repo);
      if (loaded === null) throw new Error(`no repository ${options.repo}`);
      const seq = loaded.index.seq;
      entries = seq;
      const after = page === 'newest' ? seq - size : page === 'middle' ? Math.floor(seq / 2) : 0;
      const items = await wal.itemsAfter(loaded.index, Math.max(0, after), Math.max(0, after) + size);
      ms.push(performance.now() - started);
      if (items.length === 0) throw new Error('no items read');
      storeReads = spans.length;
      rounds = sequentialRounds(spans);
    }
    pages.push({ page, items: size, ms, medianMs: median(ms), storeReads, sequentialRounds: rounds });
  }
  return { entries, latencyMs: options.latencyMs, pages };
}

/**
 * How many operations ran one after another: the largest set of spans no two of which overlap
 * (earliest end first), a lower bound on the round trips the caller waited for in sequence.
 */
export function sequentialRounds(spans: readonly { start: number; ms: number }[]): number {
  const sorted = [...spans].sort((a, b) => a.start + a.ms - (b.start + b.ms));
  let rounds = 0;
  let end = Number.NEGATIVE_INFINITY;
  for (const span of sorted) {
    if (span.start >= end) {
      rounds++;
      end = span.start + span.ms;
    }
  }
  return rounds;
}
