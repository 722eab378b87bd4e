/**
 * Seed 002's contention test, over HTTP: N pushes started at the same moment, each creating a
 * different branch of one fresh repository (no logical conflict). Counts the pushes git reported
 * as successful, then checks on the server which branches really hold their commit.
 */
import { git } from './gitClient.js';
import { push, pushOk, type SourceRepo } from './history.js';
import { type Load, measured } from './load.js';
import type { BenchServer } from './servers.js';

export interface WritersResult {
  readonly server: string;
  readonly writers: number;
  /** Pushes that exited 0. */
  readonly succeeded: number;
  /** Branches the server advertises afterwards with the pushed commit. */
  readonly landed: number;
  /** Pushes that exited 0 but whose branch is missing or wrong (a lost update: must be 0). */
  readonly lost: number;
  readonly wallMs: number;
  readonly latencies: number[];
  /** Up to three distinct complaints of failed pushes, with counts. */
  readonly errors: { readonly message: string; readonly count: number }[];
  readonly load: Load;
}

export async function concurrentWriters(options: {
  server: BenchServer;
  source: SourceRepo;
  commits: readonly string[];
  writers: number;
  repo: string;
  signal: AbortSignal;
}): Promise<WritersResult> {
  const { server, source } = options;
  const url = server.repoUrl(options.repo);
  await server.newRepo(options.repo);
  await pushOk(source, url, [`${source.root}:refs/heads/main`]);
  const commits = options.commits.slice(0, options.writers);
  if (commits.length < options.writers)
    throw new Error(`only ${commits.length} commits for ${options.writers} writers`);
  const { value: outcomes, load } = await measured([server], () =>
    Promise.all(commits.map((oid, i) => push(source, url, [`${oid}:refs/heads/w-${i}`], options.signal))),
  );
  const listed = await git(['ls-remote', url, 'refs/heads/w-*'], { home: source.home });
  if (listed.code !== 0) throw new Error(`ls-remote after the writers failed: ${listed.stderr}`);
  const advertised = new Map<string, string>();
  for (const line of listed.stdout.split('\n')) {
    const [oid, ref] = line.split('\t');
    if (oid && ref) advertised.set(ref, oid);
  }
  let landed = 0;
  let lost = 0;
  commits.forEach((oid, i) => {
    const holds = advertised.get(`refs/heads/w-${i}`) === oid;
    if (holds) landed++;
    else if (outcomes[i]?.ok) lost++;
  });
  const errors = new Map<string, number>();
  for (const out of outcomes) {
    if (out.ok || out.error === undefined) continue;
    const message = out.error.replace(/w-\d+/g, 'w-N').slice(0, 300);
    errors.set(message, (errors.get(message) ?? 0) + 1);
  }
  return {
    server: server.name,
    writers: options.writers,
    succeeded: outcomes.filter((o) => o.ok).length,
    landed,
    lost,
    wallMs: load.elapsedMs,
    latencies: outcomes.filter((o) => o.ok).map((o) => o.ms),
    errors: [...errors]
      .sort((a, b) => b[1] - a[1])
      .slice(0, 3)
      .map(([message, count]) => ({ message, count })),
    load,
  };
}
