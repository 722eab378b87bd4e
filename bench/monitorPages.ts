/**
 * The log as users see it: narwal's monitor page (server-rendered HTML) and its JSON API, over
 * HTTP from a server started moments before (so the first request of each page finds nothing of
 * the log in the process), for the newest page, one in the middle and the oldest. Seed 000's
 * monitor read one store object per entry, serially: 86 s for 327 entries.
 */
import { median } from './stats.js';

export interface MonitorPageProbe {
  readonly page: 'newest (HTML)' | 'middle (HTML)' | 'oldest (HTML)' | 'newest (JSON)';
  /** The first request for the page on a fresh server process. */
  readonly firstMs: number;
  readonly warm: number[];
  readonly warmMedianMs: number;
}

export interface MonitorPagesResult {
  readonly server: string;
  readonly latencyMs: number;
  readonly entries: number;
  readonly pages: MonitorPageProbe[];
}

export async function probeMonitorPages(options: {
  server: { name: string; url: string; latencyMs: number };
  /** The repository's name in URLs, without `.git`. */
  repo: string;
  entries: number;
  token: string;
  probes: number;
}): Promise<MonitorPagesResult> {
  const authorization = `Basic ${Buffer.from(`admin:${options.token}`).toString('base64')}`;
  const paths: [MonitorPageProbe['page'], string][] = [
    ['newest (HTML)', `/${options.repo}/-/log`],
    ['middle (HTML)', `/${options.repo}?before=${Math.floor(options.entries / 2)}`],
    ['oldest (HTML)', `/${options.repo}?before=21`],
    ['newest (JSON)', `/api/v1/repos/${options.repo}/-/log`],
  ];
  const timed = async (path: string): Promise<number> => {
    const started = performance.now();
    const response = await fetch(`${options.server.url}${path}`, { headers: { authorization } });
    const body = await response.text();
    const ms = performance.now() - started;
    if (response.status !== 200)
      throw new Error(`GET ${path}: HTTP ${response.status}: ${body.slice(0, 200)}`);
    return ms;
  };
  const pages: MonitorPageProbe[] = [];
  for (const [page, path] of paths) {
    const firstMs = await timed(path);
    const warm: number[] = [];
    for (let i = 0; i < options.probes; i++) warm.push(await timed(path));
    pages.push({ page, firstMs, warm, warmMedianMs: median(warm) });
  }
  return {
    server: options.server.name,
    latencyMs: options.server.latencyMs,
    entries: options.entries,
    pages,
  };
}
