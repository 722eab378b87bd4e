/**
 * The Markdown report of one run, with its SVG charts beside it (bench/results/<stamp>.md and
 * <stamp>-*.svg), and optionally the targets table written into docs/benchmarks.md between its
 * markers.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { basename, dirname, join, relative } from 'node:path';
import type { BenchResults } from './benchResults.js';
import { type CiRoundsSummary, ciPlans, summarizeCiRounds } from './ciStorm.js';
import { summarize } from './cloneStorm.js';
import type { PackLayout } from './fixtures.js';
import type { Load } from './load.js';
import { totalCpu } from './procCpu.js';
import { summarizeLatencies } from './stats.js';
import { cdf, lineChart, rollingMedian } from './svg.js';
import { evaluateTargets, ms, refIntervals, type TargetRow } from './targets.js';

/** Seed 000 (first server-based narwal, t3.small behind an ALB, S3 as the log): 1,000 clones per level. */
export const SEED_000 = {
  clones: {
    10: { clonesPerSecond: 3.0, p50Ms: 2922, p90Ms: 3465 },
    25: { clonesPerSecond: 3.2, p50Ms: 6730, p90Ms: 7581 },
    50: { clonesPerSecond: 3.2, p50Ms: 10891, p90Ms: 14708 },
  } as Record<number, { clonesPerSecond: number; p50Ms: number; p90Ms: number }>,
  pushes: { p50Ms: 788, sdMs: 50, quarters: [763, 782, 791, 804] },
  nodes: { one: 3.29, two: 0.58 },
  refsIntervalsS: [30, 69, 136],
};

/** Store round trips a push must wait for one after another (see the profile section). */
export const FLOOR_ROUND_TRIPS = 3;

/** Where the targets table goes in the documents that show it (README.md, docs/benchmarks.md). */
export const TABLE_START = '<!-- bench:start -->';
export const TABLE_END = '<!-- bench:end -->';

export async function writeReport(
  r: BenchResults,
  options: { dir: string; stamp: string; tables?: readonly string[] | undefined },
): Promise<{ markdown: string; summary: string }> {
  const targets = evaluateTargets(r);
  const charts: { file: string; svg: string; alt: string }[] = [];
  const chart = (suffix: string, alt: string, svg: string) => {
    const file = `${options.stamp}-${suffix}.svg`;
    charts.push({ file, svg, alt });
    return `![${alt}](${file})`;
  };
  const out: string[] = [];
  const slow = `narwal-${r.latencyMs}ms`;
  out.push(
    `# narwal against git http-backend, ${r.startedAt.slice(0, 10)} (${r.mode} run)`,
    '',
    `narwal ${r.narwal.commit.slice(0, 7)}${r.narwal.localChanges ? ' (with local changes)' : ''}; the peer is stock \`git http-backend\` behind a small CGI bridge (bench/peer.ts) on the same machine in the same run. \`narwal\` runs on the embedded store with no added latency, \`${slow}\` with ${r.latencyMs} ms added to every store operation (NARWAL_STORE_LATENCY_MS, standing in for S3). Started ${r.startedAt}, finished ${r.finishedAt}.`,
    '',
    '## Machine',
    '',
    `${r.machine.nproc} CPUs (${r.machine.cpu}), ${r.machine.memoryGiB} GiB, Linux ${r.machine.kernel}, ${r.machine.git}, node ${r.machine.node}. Load average before ${fmtLoad(r.machine.loadAverageBefore)}, after ${fmtLoad(r.machine.loadAverageAfter)}. The machine is shared with other work: servers and clients run on the same two CPUs, so ratios between servers measured in the same run are the claims, not absolute times. "other work" below is the share of the machine's CPU that went to neither the servers nor the clients while a measurement ran (from /proc/stat minus the processes' own accounting). ${r.machine.cpuClock === 'cgroup' ? "Each server's CPU is read from a cgroup of its own, which counts it and every process it starts in microseconds or finer, reaped or not (bench/procCpu.ts)." : "Each server's CPU is read from /proc/<pid>/stat in clock ticks of 10 ms, its git children once reaped: a delta can be off by a few ticks (bench/procCpu.ts)."}`,
    '',
    '## Targets',
    '',
    targetTable(targets),
    '',
  );

  if (r.sequential) {
    out.push(
      `## Sequential pushes`,
      '',
      `${r.sequential[0]?.pushes ?? 0} one-commit pushes (\`git push\` of the next commit of a chain made by fast-import) advancing \`main\` of a fresh repository, per server, in blocks of ${r.sizes.pushBlock} with the servers taking turns. Server CPU is the server process with its git children, per push.`,
      '',
      table(
        [
          'server',
          'pushes ok',
          'p50',
          'p90',
          'p99',
          'sd',
          'quartile medians',
          'server CPU / push',
          'other work (max block)',
        ],
        [
          ...r.sequential.map((s) => {
            const l = summarizeLatencies(s.latencies);
            return [
              s.server,
              `${s.latencies.length}/${s.pushes}${s.failures ? ` (${s.failures} failed: ${s.firstError})` : ''}`,
              ms(l.p50),
              ms(l.p90),
              ms(l.p99),
              ms(l.sd),
              l.quarters.map((q) => Math.round(q)).join(' / '),
              `${((totalCpu(s.serverCpu) / Math.max(1, s.latencies.length)) * 1000).toFixed(0)} ms`,
              pct(Math.max(...s.blocks.map((b) => b.otherShare))),
            ];
          }),
          [
            'seed 000 (t3.small + S3)',
            '1000/1001',
            '788 ms',
            '-',
            '-',
            '50 ms',
            '763 / 782 / 791 / 804',
            '-',
            '-',
          ],
        ],
      ),
      '',
      chart(
        'push-cdf',
        'sequential push latency distribution',
        lineChart({
          title: 'Sequential one-commit pushes: latency distribution',
          xLabel: 'push wall time (ms)',
          yLabel: 'share of pushes at or below',
          series: r.sequential.map((s) => ({ name: s.server, points: cdf(s.latencies) })),
        }),
      ),
      chart(
        'push-drift',
        'push latency along the run',
        lineChart({
          title: 'Sequential pushes: rolling median along the run (log growing)',
          xLabel: 'push number',
          yLabel: 'median push wall time (ms)',
          series: r.sequential.map((s) => ({
            name: s.server,
            points: rollingMedian(s.latencies, Math.max(8, Math.floor(s.latencies.length / 20))),
          })),
        }),
      ),
      '',
    );
  }

  if (r.ci) {
    const storms = r.ci.storms;
    const plans = ciPlans(storms);
    const of = (server: string, kind: string, name: string) =>
      summarizeCiRounds(storms, server, { kind, name });
    const rounds = Math.max(...storms.map((s) => (s.round ?? 0) + 1));
    out.push(
      '## CI checkout storms',
      '',
      "Jobs at once, each in a fresh `git init` repository running actions/checkout's exact fetch (`git -c protocol.version=2 fetch --no-tags --prune --no-recurse-submodules --depth=1 origin +<sha>:refs/remotes/origin/<branch>`), or the same with `--filter=blob:none` instead of `--depth=1` (the peer with `uploadpack.allowFilter`). Each storm meets commits pushed just before it (bench/ciStorm.ts), and jobs send their credentials as actions/checkout makes them, in an `AUTHORIZATION` extra header with the first request. The storm of wire clients makes the two requests git makes for the depth=1 fetch itself and throws the answer away (bench/wireCheckout.ts): the server without its clients' CPU. Server CPU is the server process with its git children; jobs/s is jobs over the storm's wall time." +
        (rounds > 1
          ? ` Every row was stormed ${rounds} times, on new commits each time, the rows taking turns round after round; each figure is the median of its ${rounds} storms (one storm is one sample on a shared machine), and the second table gives narwal's server CPU per storm with its range.`
          : ''),
      '',
      table(
        [
          'fetch',
          'jobs',
          'peer jobs/s',
          'narwal jobs/s',
          'narwal / peer',
          'peer CPU/job',
          'narwal CPU/job',
          'peer p90',
          'narwal p90',
        ],
        plans.map((plan) => {
          const peer = of('peer', plan.kind, plan.name);
          const narwal = of('narwal', plan.kind, plan.name);
          return [
            plan.kind,
            plan.name,
            peer ? peer.jobsPerSecond.toFixed(2) : '-',
            narwal ? narwal.jobsPerSecond.toFixed(2) : '-',
            peer && narwal ? `${(narwal.jobsPerSecond / peer.jobsPerSecond).toFixed(2)}x` : '-',
            peer ? `${peer.serverCpuPerJobMs.toFixed(0)} ms` : '-',
            narwal ? `${narwal.serverCpuPerJobMs.toFixed(0)} ms` : '-',
            peer ? `${peer.p90Ms.toFixed(0)} ms` : '-',
            narwal ? `${narwal.p90Ms.toFixed(0)} ms` : '-',
          ];
        }),
      ),
      '',
    );
    const floors = plans.filter(
      (plan) => of('floor', plan.kind, plan.name) && of('narwal', plan.kind, plan.name),
    );
    if (floors.length > 0)
      out.push(
        "The identical storms again against a bare node:http server that answers each request from memory, with no authentication, store, lease or cache to consult (bench/floor.ts; one job first, off the clock, passes the request on to narwal and fills it): what node's HTTP, streams and sockets cost per job before any of narwal's own work. A storm within 1.3x of one job's CPU leaves the jobs after the first the last column between them.",
        '',
        table(
          [
            'fetch',
            'jobs',
            'narwal CPU',
            'narwal per job after the first',
            'floor CPU',
            'floor per job',
            '1.3x one job leaves per job',
          ],
          floors.map((plan) => {
            const narwal = of('narwal', plan.kind, plan.name) as CiRoundsSummary;
            const floor = of('floor', plan.kind, plan.name) as CiRoundsSummary;
            const one = of('narwal', plan.kind, '1 job');
            const after = plan.jobs - 1;
            return [
              plan.kind,
              plan.name,
              narwal.storms > 1
                ? `${narwal.serverCpuMs.toFixed(0)} ms (${narwal.serverCpuRangeMs.map((v) => v.toFixed(0)).join('-')})`
                : `${narwal.serverCpuMs.toFixed(0)} ms`,
              one ? `${((narwal.serverCpuMs - one.serverCpuMs) / after).toFixed(2)} ms` : '-',
              `${floor.serverCpuMs.toFixed(0)} ms`,
              `${floor.serverCpuPerJobMs.toFixed(2)} ms`,
              one ? `${((0.3 * one.serverCpuMs) / after).toFixed(2)} ms` : '-',
            ];
          }),
        ),
        '',
      );
  }

  if (r.clones) {
    const levels = r.clones.levels;
    const names = Object.keys(levels[0]?.storms ?? {});
    out.push(
      '## Clone storm',
      '',
      `The express history (${r.clones.fixture.refs} refs, 6,413 commits). ${stormPlan(r.sizes)} Clients make ${r.clones.client === 'wire' ? "the protocol v2 requests of `git clone --bare` and discard the pack (bench/wireClone.ts): a real client spends about twice the server's CPU indexing the pack, and on two shared CPUs it, not the server, would set the pace" : 'real `git clone --bare` clients on the same CPUs'}. Storms start on an idle machine; one disturbed by other work is run again.`,
      '',
      table(
        [
          'workers',
          'server',
          'clones/s',
          'vs peer',
          'p50',
          'p90',
          'server CPU / clone',
          'other work',
          'clones/s per round',
          'seed 000 clones/s (p50 / p90)',
        ],
        levels.flatMap((l) => {
          const peer = l.storms.peer ? summarize(l.storms.peer) : undefined;
          return names.map((name, i) => {
            const storm = l.storms[name];
            if (!storm) return [String(l.workers), name, '-', '-', '-', '-', '-', '-', '-', '-'];
            const s = summarize(storm);
            const seed = SEED_000.clones[l.workers];
            return [
              i === 0 ? String(l.workers) : '',
              name,
              `${s.clonesPerSecond.toFixed(2)}${storm.failures ? ` (${storm.failures} failed)` : ''}`,
              peer ? `${(s.clonesPerSecond / peer.clonesPerSecond).toFixed(2)}x` : '-',
              ms(s.p50Ms),
              ms(s.p90Ms),
              `${(s.serverCpuPerClone * 1000).toFixed(0)} ms`,
              pct(storm.otherCpu / (storm.elapsedMs / 1000) / storm.cpus),
              (l.rounds?.[name] ?? []).map((v) => v.toFixed(1)).join(', '),
              i === 0 && seed ? `${seed.clonesPerSecond} (${ms(seed.p50Ms)} / ${ms(seed.p90Ms)})` : '',
            ];
          });
        }),
      ),
      '',
      chart(
        'clone-throughput',
        'clone throughput vs workers',
        lineChart({
          title: 'Clone storm: throughput vs workers',
          xLabel: 'concurrent clients',
          yLabel: 'clones per second',
          dots: true,
          series: [
            ...names.map((name) => ({
              name,
              points: levels.map(
                (l) =>
                  [l.workers, l.storms[name] ? summarize(l.storms[name]).clonesPerSecond : Number.NaN] as [
                    number,
                    number,
                  ],
              ),
            })),
            {
              name: 'seed 000',
              points: Object.entries(SEED_000.clones).map(
                ([w, s]) => [Number(w), s.clonesPerSecond] as [number, number],
              ),
            },
          ],
        }),
      ),
      chart(
        'clone-cdf',
        'clone latency distribution at the highest level',
        lineChart({
          title: `Clone latency distribution at ${levels.at(-1)?.workers ?? 0} workers`,
          xLabel: 'clone wall time (ms)',
          yLabel: 'share of clones at or below',
          series: names.map((name) => ({ name, points: cdf(levels.at(-1)?.storms[name]?.cloneMs ?? []) })),
        }),
      ),
      '',
    );
    for (const [name, layout] of Object.entries(r.clones.fixture.layouts))
      out.push(`- ${name} serves from ${layoutLine(layout)}`);
    out.push('');
    if (r.clones.discarded.length > 0)
      out.push(
        `${r.clones.discarded.length} storm(s) were disturbed by other work and run again: ${r.clones.discarded.map((d) => `${d.server} ${d.workers}w`).join(', ')}.`,
        '',
      );
  }

  if (r.nodes) {
    out.push(
      '## Two server processes vs one',
      '',
      `${r.sizes.nodeWorkers} clients, each pushing ${r.sizes.nodePushes} one-commit pushes back to back to a branch of its own in one repository: all to one server process, then alternately to two processes serving the same repository (narwal: two \`narwal serve\` nodes sharing one data directory, so one store and one index; the peer: two http-backend servers on one bare repository).`,
      '',
      table(
        [
          'server',
          'one process /s',
          'two processes /s',
          'two / one',
          'p50 one / two',
          'failed pushes one / two',
          'server CPU / push one / two',
          'other work one / two',
        ],
        Object.entries(r.nodes)
          .map(([name, n]) => [
            name,
            n.one.pushesPerSecond.toFixed(2),
            n.two.pushesPerSecond.toFixed(2),
            `${(n.two.pushesPerSecond / n.one.pushesPerSecond).toFixed(2)}x`,
            `${ms(summarizeLatencies(n.one.latencies).p50)} / ${ms(summarizeLatencies(n.two.latencies).p50)}`,
            `${n.one.failures} / ${n.two.failures}`,
            `${cpuPerOp(n.one.load, n.one.pushes)} / ${cpuPerOp(n.two.load, n.two.pushes)}`,
            `${pct(n.one.load.otherShare)} / ${pct(n.two.load.otherShare)}`,
          ])
          .concat([
            ['seed 000 (two t3.small, S3)', '3.29', '0.58', '0.18x', '-', '0 / 1 (HTTP 500)', '-', '-'],
          ]),
      ),
      '',
    );
  }

  if (r.refs) {
    const interval = r.refs.interval;
    const names = r.refs.runs.map((s) => s.server);
    const count = Math.max(...r.refs.runs.map((s) => s.blocks.length));
    out.push(
      '## Refs growth',
      '',
      `Refs created one push at a time (each push a new branch at a new one-commit child of the root), ${r.refs.runs[0]?.pushes ?? 0} per server; wall time of each ${interval}-ref interval.`,
      '',
      table(
        ['refs', ...names, 'seed 000'],
        Array.from({ length: count }, (_, i) => [
          `${i * interval + 1}-${(i + 1) * interval}`,
          ...names.map((n) => ms(refIntervals(r, n)[i] ?? Number.NaN)),
          interval === 100 && SEED_000.refsIntervalsS[i] !== undefined
            ? `${SEED_000.refsIntervalsS[i]} s`
            : '',
        ]),
      ),
      '',
      chart(
        'refs-growth',
        'refs growth intervals',
        lineChart({
          title: `Refs growth: wall time per ${interval} refs created`,
          xLabel: 'refs in the repository',
          yLabel: `seconds per ${interval} refs`,
          dots: true,
          series: names.map((n) => ({
            name: n,
            points: refIntervals(r, n).map((v, i) => [(i + 1) * interval, v / 1000] as [number, number]),
          })),
        }),
      ),
      '',
    );
  }

  if (r.writers) {
    out.push(
      '## Simultaneous writers',
      '',
      'N `git push` processes started at once, each creating a different branch of one fresh repository; "landed" counts the branches the server advertises afterwards with the pushed commit.',
      '',
      table(
        [
          'writers',
          'server',
          'landed',
          'exited 0',
          'lost',
          'wall',
          'p50 push',
          'server CPU / push',
          'failures',
        ],
        r.writers
          .map((w) => [
            String(w.writers),
            w.server,
            `${w.landed}/${w.writers}`,
            String(w.succeeded),
            String(w.lost),
            ms(w.wallMs),
            ms(summarizeLatencies(w.latencies).p50),
            cpuPerOp(w.load, w.writers),
            w.errors.map((e) => `${e.count}x ${e.message}`).join('; ') || '-',
          ])
          .concat([
            [
              '100 / 150',
              'reftable (seed 002, update-ref)',
              '56/100, 54-70/150',
              '',
              '',
              '',
              '',
              '',
              'cannot lock references',
            ],
          ]),
      ),
      '',
    );
  }

  if (r.cold) {
    const c = r.cold;
    out.push(
      '## Cold info/refs and log pages',
      '',
      `A log of ${c.log.entries.toLocaleString('en-US')} entries built in ${(c.log.buildMs / 1000).toFixed(0)} s (bench/packedLog.ts): a history made by \`git fast-import\`, written through narwal's Publisher directly (not over HTTP) with real packs - the first entry carries the history up to the checkpoint, the checkpoint is made by the Checkpointer at entry ${c.log.checkpointSeq} (the automatic policy's worst case: 100 entries after it), and every later entry carries its own pack. Index: ${c.log.indexBytes.toLocaleString('en-US')} bytes. \`git ls-remote\` with narwal's cache directory deleted before each cold probe, then twice warm; the peer serves a bare clone of the same history.`,
      '',
      table(
        ['server', 'store latency', 'cold ls-remote (median)', 'cold min / max', 'warm (median)'],
        c.probes
          .map((p) => [
            p.server,
            `${p.latencyMs} ms`,
            ms(p.coldMedian),
            `${ms(Math.min(...p.cold))} / ${ms(Math.max(...p.cold))}`,
            ms(p.warmMedian),
          ])
          .concat([['seed 000', 'S3', '> 120 s at 950 entries', '', '']]),
      ),
      '',
      ...(c.monitorPages && c.monitorPages.length > 0
        ? [
            'The monitor\'s log page (HTML) and its JSON API over HTTP, on a server process started just before ("first": the first request for that page; "warm": the median of the next ones).',
            '',
            table(
              ['server', 'store latency', 'page', 'first', 'warm (median)'],
              c.monitorPages.flatMap((m) =>
                m.pages.map((g) => [
                  m.server,
                  `${m.latencyMs} ms`,
                  `${g.page} of ${m.entries.toLocaleString('en-US')}`,
                  ms(g.firstMs),
                  ms(g.warmMedianMs),
                ]),
              ),
            ),
            '',
          ]
        : []),
      'Beneath the pages, the reads they are made of: `Wal.readIndex` then `Wal.itemsAfter` for 20 items through a fresh Wal (no cache) on the store with the added latency.',
      '',
      table(
        ['store latency', 'page', 'median', 'store reads', 'reads in sequence'],
        c.pages
          .flatMap((p) =>
            p.pages.map((g) => [
              `${p.latencyMs} ms`,
              `${g.page} 20 of ${p.entries.toLocaleString('en-US')}`,
              ms(g.medianMs),
              String(g.storeReads),
              String(g.sequentialRounds),
            ]),
          )
          .concat([['S3', 'seed 000: 327 entries, one read per entry', '86 s', '327', '327']]),
      ),
      '',
    );
  }

  if (r.profile) {
    out.push(...profileSection(r));
  }

  if (r.serverErrors && r.serverErrors.length > 0)
    out.push(
      '## Errors the servers logged',
      '',
      ...r.serverErrors.map((e) => `- \`${e.slice(0, 600)}\``),
      '',
    );
  if (r.notes.length > 0) out.push('## Notes', '', ...r.notes.map((n) => `- ${n}`), '');
  const markdown = join(options.dir, `${options.stamp}.md`);
  for (const c of charts) await writeFile(join(options.dir, c.file), c.svg);
  await writeFile(markdown, `${out.join('\n')}\n`);
  const summary = targetTable(targets);
  for (const doc of options.tables ?? []) await updateTable(doc, r, summary, markdown);
  return { markdown, summary };
}

/** What upload-pack works with, in one line. */
function layoutLine(layout: PackLayout): string {
  const packs = layout.packs.map((p) => `${(p.bytes / 1e6).toFixed(1)} MB`).join(', ');
  return `${layout.packs.length} pack(s) (${packs}), ${layout.bitmaps} bitmap(s), multi-pack-index ${layout.multiPackIndex ? 'yes' : 'no'}, commit-graph ${layout.commitGraph ? 'yes' : 'no'}, ${layout.looseObjects} loose objects${layout.generations !== undefined ? `, ${layout.generations} generation(s)` : ''}`;
}

function profileSection(r: BenchResults): string[] {
  const profiles = r.profile ?? [];
  const peer = profiles.find((p) => p.server === 'peer');
  const rows = profiles.map((p) => [
    p.server,
    ms(p.median.clientMs),
    Object.entries(p.median.git)
      .filter(([, v]) => v >= 1)
      .sort((a, b) => b[1] - a[1])
      .map(([k, v]) => `${k} ${ms(v)}`)
      .join(', '),
    p.server === 'peer' ? '-' : String(p.median.storeOps),
    p.server === 'peer' ? '-' : String(p.median.storeRounds),
    p.server === 'peer' ? '-' : ms(p.median.storeBusyMs),
    p.server === 'peer' ? '-' : `${p.median.presenceOps} (${ms(p.median.presenceBusyMs)})`,
  ]);
  const lines = [
    '## Where the time of one push goes',
    '',
    `${profiles[0]?.pushes.length ?? 0} one-commit pushes per server with the servers' instrumentation on (narwal: NARWAL_TRACE_DIR, which records every store operation and points git's trace2 at a directory; the peer: trace2), a pause after each so background work (narwal builds the next cache generation) does not overlap the next push; the rows marked "back to back" push without the pause, as the sequential test does, so background work of the previous push falls into the window of the next. Medians per push; git times are the lifetimes of the server's git processes that ended within the push (trace2), counted from the push's start for one started before it (narwal's receive-pack is started ahead and waits for its push), \`hook:proc-receive\` is the time receive-pack waited for narwal to publish (packs stored, entry written, index CAS). "in sequence" is the largest number of store operations of one push no two of which overlapped: a lower bound on the round trips it waited for.`,
    '',
    table(
      [
        'server',
        'client wall',
        'server git processes (lifetime)',
        'store ops',
        'in sequence',
        'store busy',
        'presence ops (busy)',
      ],
      rows,
    ),
    '',
    table(
      ['server', 'store operations per push (mean)'],
      profiles
        .filter((p) => p.server !== 'peer')
        .map((p) => [
          p.server,
          Object.entries(p.storeOpsByKind)
            .sort((a, b) => b[1] - a[1])
            .map(([k, n]) => `${k} ${n.toFixed(1)}`)
            .join(', '),
        ]),
    ),
    '',
  ];
  const base = profiles.find((p) => p.server === 'narwal');
  for (const p of profiles.filter((x) => x.server === `narwal-${x.latencyMs}ms` && x.latencyMs > 0)) {
    if (!base) break;
    const floor = base.median.clientMs + FLOOR_ROUND_TRIPS * p.latencyMs;
    lines.push(
      `- Floor at ${p.latencyMs} ms: narwal's own push with no store latency (${ms(base.median.clientMs)}; the git work alone over HTTP, the peer, takes ${peer ? ms(peer.median.clientMs) : '-'}) plus the ${FLOOR_ROUND_TRIPS} store round trips a push cannot overlap - the index read behind the advertisement, the pack and entry uploads (in parallel), the index CAS - = ${ms(floor)}. ${p.server} measured ${ms(p.median.clientMs)}: ${ms(p.median.clientMs - floor)} above the floor; it waited for ${p.median.storeRounds} store operations in sequence (${ms(p.median.storeBusyMs)} of store time, ${(p.median.storeBusyMs / p.latencyMs).toFixed(1)} round trips' worth).`,
    );
  }
  lines.push('');
  return lines;
}

/** Writes the targets table into the document at `path`, linking the report relative to it. */
export async function updateTable(
  path: string,
  r: {
    readonly startedAt: string;
    readonly narwal: { readonly commit: string };
    readonly machine: { readonly nproc: number };
  },
  table: string,
  markdown: string,
): Promise<void> {
  const text = await readFile(path, 'utf8');
  const start = text.indexOf(TABLE_START);
  const end = text.indexOf(TABLE_END);
  if (start < 0 || end < start) throw new Error(`${path} has no ${TABLE_START} ... ${TABLE_END} section`);
  const link = relative(dirname(path), markdown);
  const body = [
    TABLE_START,
    `Latest full run (${r.startedAt.slice(0, 10)}, narwal ${r.narwal.commit.slice(0, 7)}, ${r.machine.nproc} shared CPUs; report with charts: [bench/results/${basename(markdown)}](${link})):`,
    '',
    aligned(table),
    '',
  ].join('\n');
  await writeFile(path, text.slice(0, start) + body + text.slice(end));
}

/** A Markdown table with every column padded to its widest cell, as Biome formats Markdown. */
export function aligned(markdown: string): string {
  const rows = markdown.split('\n').map((line) =>
    line
      .slice(2, -2)
      .split(' | ')
      .map((cell) => cell.trim()),
  );
  const widths =
    rows[0]?.map((_, i) => Math.max(3, ...rows.map((r, n) => (n === 1 ? 0 : (r[i] ?? '').length)))) ?? [];
  return rows
    .map(
      (cells, n) =>
        `| ${widths.map((w, i) => (n === 1 ? '-'.repeat(w) : (cells[i] ?? '').padEnd(w))).join(' | ')} |`,
    )
    .join('\n');
}

export function targetTable(rows: readonly TargetRow[]): string {
  return table(
    ['target', 'server', 'measured (same run)', 'goal', 'result', 'seed'],
    rows.map((t) => [
      t.target,
      t.server,
      t.measured,
      t.goal,
      t.pass ? 'pass' : `**miss**: ${t.miss}`,
      t.seed,
    ]),
  );
}

function table(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const clean = (cell: string) => cell.replaceAll('|', '\\|').replaceAll('\n', ' ');
  return [header, header.map(() => '---'), ...rows]
    .map((cells) => `| ${cells.map(clean).join(' | ')} |`)
    .join('\n');
}

function cpuPerOp(load: Load, ops: number): string {
  const total = Object.values(load.serverCpu).reduce((s, c) => s + totalCpu(c), 0);
  return `${((total / Math.max(1, ops)) * 1000).toFixed(0)} ms`;
}

function pct(share: number): string {
  return Number.isFinite(share) ? `${Math.round(share * 100)}%` : '-';
}

function fmtLoad(values: readonly number[] | undefined): string {
  return values ? values.map((v) => v.toFixed(2)).join(' / ') : '-';
}

/** How the clone storms were sized, in a sentence or two. */
function stormPlan(sizes: Readonly<Record<string, unknown>>): string {
  const rounds = Number(sizes.rounds ?? 1);
  const seconds = Number(sizes.stormSeconds ?? 0);
  const each = `at least ${sizes.clones} clones${seconds > 0 ? ` and at least ${seconds} s` : ''}`;
  return rounds > 1
    ? `Per server and level, ${rounds} storms of ${each}, the levels taking turns round after round; a level's figures pool its storms (every clone over all their time).`
    : `Per server and level, one storm of ${each}.`;
}
