/**
 * A clone without the client's work: the requests `git clone --bare` makes in protocol v2
 * (gitprotocol-v2(5): capability advertisement, `ls-refs`, then `fetch` wanting every advertised
 * ref, with `done`), the pack counted and thrown away instead of indexed. A real client spends
 * about twice the server's CPU on index-pack; on one machine that, not the server, sets the pace,
 * so this client measures what the server alone can serve.
 */

export interface WireCloneResult {
  readonly ms: number;
  readonly packBytes: number;
}

const AGENT = 'agent=narwal-bench\n';

export async function wireClone(repoUrl: string, signal?: AbortSignal): Promise<WireCloneResult> {
  const started = performance.now();
  const url = new URL(repoUrl);
  const headers: Record<string, string> = { 'git-protocol': 'version=2' };
  if (url.username !== '')
    headers.authorization = `Basic ${Buffer.from(`${decodeURIComponent(url.username)}:${decodeURIComponent(url.password)}`).toString('base64')}`;
  url.username = '';
  url.password = '';
  const base = url.toString().replace(/\/$/, '');
  const post = (body: string) =>
    fetch(`${base}/git-upload-pack`, {
      method: 'POST',
      headers: { ...headers, 'content-type': 'application/x-git-upload-pack-request' },
      body,
      ...(signal ? { signal } : {}),
    });

  const advertised = await fetch(`${base}/info/refs?service=git-upload-pack`, {
    headers,
    ...(signal ? { signal } : {}),
  });
  const advertisement = Buffer.from(await advertised.arrayBuffer()).toString('latin1');
  if (advertised.status !== 200 || !advertisement.includes('version 2'))
    throw new Error(`info/refs answered ${advertised.status} without a v2 advertisement`);

  const listed = await post(
    request('ls-refs', [
      'peel\n',
      'symrefs\n',
      'ref-prefix HEAD\n',
      'ref-prefix refs/heads/\n',
      'ref-prefix refs/tags/\n',
    ]),
  );
  const refs = Buffer.from(await listed.arrayBuffer()).toString('latin1');
  const wants = new Set<string>();
  for (const match of refs.matchAll(/^[0-9a-f]{4}([0-9a-f]{40}) /gm)) if (match[1]) wants.add(match[1]);
  if (listed.status !== 200 || wants.size === 0) throw new Error(`ls-refs answered ${listed.status}`);

  const fetched = await post(
    request('fetch', ['ofs-delta\n', 'no-progress\n', ...[...wants].map((oid) => `want ${oid}\n`), 'done\n']),
  );
  if (fetched.status !== 200 || !fetched.body) throw new Error(`fetch answered ${fetched.status}`);
  let packBytes = 0;
  let tail = Buffer.alloc(0);
  for await (const chunk of fetched.body) {
    packBytes += chunk.length;
    tail = Buffer.concat([tail, chunk]).subarray(-4);
  }
  // The response ends with a flush-pkt after the packfile section; anything else was cut short.
  if (tail.toString('latin1') !== '0000') throw new Error('the fetch response ended early');
  return { ms: performance.now() - started, packBytes };
}

/** A v2 command request: command, capabilities, delim-pkt, arguments, flush-pkt. */
function request(command: string, args: readonly string[]): string {
  return [pkt(`command=${command}\n`), pkt(AGENT), '0001', ...args.map(pkt), '0000'].join('');
}

function pkt(line: string): string {
  return (line.length + 4).toString(16).padStart(4, '0') + line;
}
