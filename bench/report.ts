/** The clone storm as a Markdown table: narwal beside the peer, with the seed's numbers for reference. */
import { relative } from 'node:path';
import { type StormResult, type StormSummary, summarize } from './cloneStorm.js';
import type { PackLayout } from './fixtures.js';

export interface LevelResult {
  readonly workers: number;
  readonly protocol: 0 | 2;
  /** Which server ran first at this level (the order alternates to spread drift). */
  readonly order: readonly string[];
  readonly peer: StormResult;
  readonly narwal: StormResult;
}

/**
 * Seed 000 (the first server-based narwal on a t3.small behind an ALB, S3 as the log): 1,000
 * clones per level, throughput flat because one per-repository mutex serialized upload-pack.
 */
export const SEED_000: Readonly<Record<number, { clonesPerSecond: number; p50Ms: number; p90Ms: number }>> = {
  10: { clonesPerSecond: 3.0, p50Ms: 2922, p90Ms: 3465 },
  25: { clonesPerSecond: 3.2, p50Ms: 6730, p90Ms: 7581 },
  50: { clonesPerSecond: 3.2, p50Ms: 10891, p90Ms: 14708 },
};

export function cloneTable(levels: readonly LevelResult[]): string {
  const header = [
    'workers',
    'proto',
    'peer clones/s',
    'narwal clones/s',
    'narwal/peer',
    'peer p50 / p90 ms',
    'narwal p50 / p90 ms',
    'peer server CPU s/clone',
    'narwal server CPU s/clone',
    'client CPU s/clone (peer / narwal)',
    'seed 000 clones/s (p50 / p90 ms)',
  ];
  const rows = levels.map((level) => {
    const peer = summarize(level.peer);
    const narwal = summarize(level.narwal);
    const seed = level.protocol === 2 ? SEED_000[level.workers] : undefined;
    return [
      String(level.workers),
      `v${level.protocol}`,
      rate(peer, level.peer),
      rate(narwal, level.narwal),
      `${(narwal.clonesPerSecond / peer.clonesPerSecond).toFixed(2)}`,
      `${ms(peer.p50Ms)} / ${ms(peer.p90Ms)}`,
      `${ms(narwal.p50Ms)} / ${ms(narwal.p90Ms)}`,
      peer.serverCpuPerClone.toFixed(3),
      narwal.serverCpuPerClone.toFixed(3),
      `${peer.clientCpuPerClone.toFixed(2)} / ${narwal.clientCpuPerClone.toFixed(2)}`,
      seed ? `${seed.clonesPerSecond.toFixed(1)} (${ms(seed.p50Ms)} / ${ms(seed.p90Ms)})` : '-',
    ];
  });
  return [header, header.map(() => '---'), ...rows].map((cells) => `| ${cells.join(' | ')} |`).join('\n');
}

function rate(summary: StormSummary, result: StormResult): string {
  const failed = result.failures > 0 ? ` (${result.failures} failed)` : '';
  return `${summary.clonesPerSecond.toFixed(2)}${failed}`;
}

function ms(value: number): string {
  return Number.isFinite(value) ? Math.round(value).toLocaleString('en-US') : '-';
}

/** What upload-pack works with on one server, in one line. */
export function layoutLine(name: string, layout: PackLayout, workDir: string): string {
  const packs = layout.packs.map((p) => `${(p.bytes / 1e6).toFixed(1)} MB`).join(', ');
  const generations =
    layout.generations !== undefined
      ? `; ${layout.generations} generation(s) borrowing ${relative(workDir, layout.objects)}`
      : '';
  return `${name} pack layout: ${layout.packs.length} pack(s) (${packs}), ${layout.bitmaps} bitmap(s), ${layout.reverseIndexes} .rev, multi-pack-index ${layout.multiPackIndex ? 'yes' : 'no'}, commit-graph ${layout.commitGraph ? 'yes' : 'no'}, ${layout.looseObjects} loose objects; packed-refs "${layout.packedRefsHeader.trim()}"${generations}`;
}
