/**
 * Events are derived from the log: one per published entry, built from the index's items (and the
 * entry object when the item shows only some updates), so a delivery can be replayed from any
 * seq and nothing that was not published (a failed CAS) can ever become an event.
 */
import type { ProtectionRule } from '../policy/protectionRules.js';
import { incarnationId } from '../wal/keys.js';
import type { EntryKind, LockEvent, LogItem, RefUpdate, RepoIndex, RepoSettings } from '../wal/types.js';
import type { Wal } from '../wal/Wal.js';

/** An event carries at most this many ref updates (`count` says how many the entry has). */
export const MAX_EVENT_UPDATES = 1000;

export interface PushEvent {
  /** The idempotency key: the same for every delivery of this entry, to every destination. */
  readonly id: string;
  readonly repo: string;
  /** Which incarnation of the repository (a repository deleted and created again starts anew). */
  readonly incarnation: string;
  readonly seq: number;
  readonly kind: EntryKind;
  readonly time: string;
  readonly who: { readonly token: string; readonly tokenId?: string; readonly owner?: string };
  readonly updates: readonly RefUpdate[];
  /** The number of updates, when more than `updates` carries. */
  readonly count?: number;
  readonly atomic: boolean;
  /** A protect entry: the rules in force from this entry on. */
  readonly protection?: readonly ProtectionRule[];
  /** A lock entry: the Git LFS lock taken or released. */
  readonly lock?: LockEvent;
  /** A settings entry: the settings in force from this entry on. */
  readonly settings?: RepoSettings;
}

export function eventId(repo: string, incarnation: string, seq: number): string {
  return `${repo}@${incarnation}#${seq}`;
}

/** Events for the entries with seq in (afterSeq, afterSeq + limit], oldest first. */
export async function eventsAfter(
  wal: Wal,
  index: RepoIndex,
  afterSeq: number,
  limit: number,
): Promise<PushEvent[]> {
  const items = await wal.itemsAfter(index, afterSeq, afterSeq + limit);
  const incarnation = incarnationId(index.created);
  return Promise.all(items.map((item) => eventOf(wal, index.repo, incarnation, item)));
}

async function eventOf(wal: Wal, repo: string, incarnation: string, item: LogItem): Promise<PushEvent> {
  const kind = item.kind ?? 'push';
  const needsEntry = item.count !== undefined || kind === 'protect';
  const entry = needsEntry ? await wal.entry(item.key) : undefined;
  const all = entry?.updates ?? item.updates;
  const updates = all.slice(0, MAX_EVENT_UPDATES);
  return {
    id: eventId(repo, incarnation, item.seq),
    repo,
    incarnation,
    seq: item.seq,
    kind,
    time: item.time,
    who: {
      token: item.who.token,
      ...(item.who.tokenId ? { tokenId: item.who.tokenId } : {}),
      ...(item.who.owner ? { owner: item.who.owner } : {}),
    },
    updates,
    ...(updates.length < all.length ? { count: all.length } : {}),
    atomic: item.atomic === true,
    ...(entry?.protection ? { protection: entry.protection } : {}),
    ...(item.lock ? { lock: item.lock } : {}),
    ...(item.settings ? { settings: item.settings } : {}),
  };
}
