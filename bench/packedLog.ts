/**
 * A repository with a long log, built quickly but for real: a history of N commits made by
 * `git fast-import`, and the log written through narwal's own Publisher (in this process, on the
 * data directory a server then opens) as real pushes would have written it - the first entry
 * carries one pack with the history up to the newest checkpoint, the next entries move the ref
 * through that history, a checkpoint is made by the Checkpointer where the automatic policy
 * would have made its newest one (every 100 entries by default, so at most 100 entries after
 * it: the worst case a cold cache replays), and each entry after it carries a pack of its own
 * made by `git pack-objects`. Nothing is faked: every pack is a real pack, every index write a
 * real compare-and-swap on the embedded store.
 */
import { execFileSync } from 'node:child_process';
import { mkdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { createApp } from '../lib/app.js';
import { loadConfig } from '../lib/config.js';
import { silentLogger } from '../lib/log.js';
import { ZERO_OID } from '../lib/protocol/refValue.js';
import { packKey } from '../lib/wal/keys.js';
import { putImmutable } from '../lib/wal/putImmutable.js';

export interface LongLog {
  readonly repo: string;
  /** The local repository with the history (non-bare; the peer serves a bare clone of it). */
  readonly work: string;
  readonly entries: number;
  readonly checkpointSeq: number | null;
  readonly indexBytes: number;
  readonly buildMs: number;
}

export async function buildLongLog(options: {
  work: string;
  dataDir: string;
  token: string;
  repo: string;
  entries: number;
  /** Entries after the newest checkpoint. */
  after: number;
  log?: (line: string) => void;
}): Promise<LongLog> {
  const started = performance.now();
  const { work, repo, entries } = options;
  const after = Math.min(options.after, entries - 1);
  await mkdir(work, { recursive: true });
  const git = (args: string[], input?: string) =>
    execFileSync('git', args, {
      cwd: work,
      input,
      maxBuffer: 1 << 28,
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: work, GIT_CONFIG_NOSYSTEM: '1' },
    }).toString();
  git(['init', '-q', '-b', 'main', '.']);
  const lines: string[] = [];
  for (let i = 1; i <= entries; i++) {
    const message = `entry ${i}\n`;
    const content = `${i}\n`;
    lines.push(
      'commit refs/heads/main',
      `mark :${i}`,
      `committer Bench <bench@example.com> ${1_700_000_000 + i} +0000`,
      `data ${message.length}`,
      message,
      ...(i > 1 ? [`from :${i - 1}`] : []),
      `M 644 inline f${i % 50}.txt`,
      `data ${content.length}`,
      content,
    );
  }
  git(['fast-import', '--quiet'], lines.join('\n'));
  const commits = git(['rev-list', '--reverse', 'main']).trim().split('\n');
  const app = await createApp(
    loadConfig(
      { NARWAL_ADMIN_TOKEN: options.token, NARWAL_QUIET: '1' },
      { dataDir: options.dataDir, port: 0 },
    ),
    silentLogger,
  );
  try {
    await app.wal.createRepo(repo, { public: false });
    const who = { token: 'bench' };
    const base = entries - after;
    const storePack = async (prefix: string, revs: string): Promise<string> => {
      const hash = git(['pack-objects', '-q', '--revs', `.git/objects/pack/${prefix}`], revs).trim();
      const name = `pack-${hash}`;
      for (const ext of ['pack', 'idx'] as const) {
        const path = join(work, '.git', 'objects', 'pack', `${prefix}-${hash}.${ext}`);
        await putImmutable(app.store, packKey(repo, name, ext), { path, size: (await stat(path)).size });
      }
      return name;
    };
    let previous = ZERO_OID;
    const move = async (i: number, packs: string[]) => {
      const next = commits[i] ?? '';
      const result = await app.publisher.publish({
        repo,
        commands: [{ ref: 'refs/heads/main', oldOid: previous, newOid: next }],
        atomic: false,
        who,
        packs,
      });
      if (result.seq === null)
        throw new Error(`entry ${i + 1} did not publish: ${JSON.stringify(result.outcomes)}`);
      previous = next;
    };
    await move(0, [await storePack('bench', `${commits[base - 1]}\n`)]);
    for (let i = 1; i < base; i++) {
      await move(i, []);
      if (i % 2000 === 0) options.log?.(`    long log: ${i}/${entries} entries`);
    }
    const checkpoint = await app.checkpointer.make(repo);
    for (let i = base; i < entries; i++)
      await move(i, [await storePack('one', `${commits[i]}\n^${commits[i - 1]}\n`)]);
    const loaded = await app.wal.readIndexFully(repo);
    return {
      repo,
      work,
      entries: loaded?.index.seq ?? 0,
      checkpointSeq: loaded?.index.checkpoint?.seq ?? checkpoint?.seq ?? null,
      indexBytes: JSON.stringify(loaded?.index ?? {}).length,
      buildMs: performance.now() - started,
    };
  } finally {
    await app.close();
  }
}
