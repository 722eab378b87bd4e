/**
 * A repository's Git LFS setting, kept as protection rules are: in the index, changed only by an
 * entry of the log (kind `settings`) published by the same compare-and-swap as pushes, so the log
 * says who changed it and when, and a push is checked under the setting of the index it started
 * from.
 */

import { RepoNotFound } from '../wal/errors.js';
import type { Publisher } from '../wal/Publisher.js';
import type { Identity, RepoSettings } from '../wal/types.js';
import type { Wal } from '../wal/Wal.js';

/** Every setting with its value (the defaults filled in). */
export interface Settings {
  /** Refuse a push whose new commits point at Git LFS objects the store lacks. */
  readonly lfsPushCheck: boolean;
}

export const DEFAULT_SETTINGS: Settings = { lfsPushCheck: true };

export interface SettingsState {
  readonly repo: string;
  /** The log position the settings were read at (or set by). */
  readonly seq: number;
  readonly settings: Settings;
}

export interface SettingsChangeResult extends SettingsState {
  /** The seq of the settings entry; null when the settings already were so. */
  readonly entry: number | null;
}

export function settingsOf(stored: RepoSettings | undefined): Settings {
  return { ...DEFAULT_SETTINGS, ...stored };
}

export async function readSettings(wal: Wal, repo: string): Promise<SettingsState> {
  const loaded = await wal.readIndex(repo);
  if (loaded === null) throw new RepoNotFound(repo);
  return { repo, seq: loaded.index.seq, settings: settingsOf(loaded.index.settings) };
}

export async function changeSettings(
  publisher: Publisher,
  repo: string,
  change: Partial<Settings>,
  who: Identity,
): Promise<SettingsChangeResult> {
  const result = await publisher.publish({
    repo,
    commands: [],
    atomic: false,
    who,
    packs: [],
    change: {
      kind: 'settings',
      decide: async (index) => {
        const current = settingsOf(index.settings);
        const next = { ...current, ...change };
        if (next.lfsPushCheck === current.lfsPushCheck) return null;
        // The index keeps only what differs from the defaults; the entry records them all.
        const stored: RepoSettings =
          next.lfsPushCheck === DEFAULT_SETTINGS.lfsPushCheck ? {} : { lfsPushCheck: false };
        return {
          index: { settings: Object.keys(stored).length === 0 ? undefined : stored },
          entry: { settings: next },
          objects: [],
        };
      },
    },
  });
  const { index } = result.loaded;
  return { repo, seq: index.seq, settings: settingsOf(index.settings), entry: result.seq };
}

/** A settings change from JSON: `{"lfsPushCheck": boolean}`; throws InvalidSettings. */
export function parseSettingsChange(body: unknown): Partial<Settings> {
  if (body === null || typeof body !== 'object' || Array.isArray(body))
    throw new InvalidSettings('send {"lfsPushCheck": true|false}');
  const fields = Object.entries(body);
  if (fields.length === 0) throw new InvalidSettings('send {"lfsPushCheck": true|false}');
  for (const [name, value] of fields) {
    if (name !== 'lfsPushCheck') throw new InvalidSettings(`unknown setting ${JSON.stringify(name)}`);
    if (typeof value !== 'boolean') throw new InvalidSettings('lfsPushCheck must be true or false');
  }
  return body as Partial<Settings>;
}

/** A settings change that is not one (400). */
export class InvalidSettings extends Error {
  readonly code = 'InvalidSettings';
}
