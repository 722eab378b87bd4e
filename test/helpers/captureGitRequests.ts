/**
 * Records the request bodies real git clients send: a recording proxy in front of a narwal
 * server, and real `git push` / `git clone` / `git fetch` (protocol v0 and v2) through it. The
 * bodies are the seeds the fuzzers mutate, so what they start from is what git really sends.
 */
import { createServer, request as httpRequest, type IncomingMessage } from 'node:http';
import { gunzipSync } from 'node:zlib';
import { commitFile, gitOk, workRepo } from './gitClient.js';
import { ADMIN_TOKEN } from './narwalServer.js';

export interface CapturedRequest {
  readonly service: 'git-upload-pack' | 'git-receive-pack';
  /** `version=2` when the client spoke protocol v2. */
  readonly gitProtocol: string | undefined;
  /** The body as git meant it (gunzipped when git compressed it). */
  readonly body: Buffer;
  /** What git did, e.g. "push --atomic". */
  readonly label: string;
}

export interface CapturedSession {
  readonly requests: CapturedRequest[];
  /** The tip of main on the server after the session. */
  readonly head: string;
}

async function bodyOf(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const raw = Buffer.concat(chunks);
  return req.headers['content-encoding'] === 'gzip' ? gunzipSync(raw) : raw;
}

/**
 * Runs a small but complete git session against `targetUrl` (a narwal base URL) through a
 * recording proxy: creates `repo`, pushes branches, a tag, push options and an atomic delete,
 * clones in v0 and v2, and fetches incrementally (with `have` lines).
 */
export async function captureGitRequests(
  targetUrl: string,
  repo: string,
  home: string,
): Promise<CapturedSession> {
  const requests: CapturedRequest[] = [];
  let label = '';
  const target = new URL(targetUrl);
  const proxy = createServer((req, res) => {
    void (async () => {
      const body = await bodyOf(req);
      const service = req.url?.endsWith('/git-receive-pack')
        ? 'git-receive-pack'
        : req.url?.endsWith('/git-upload-pack')
          ? 'git-upload-pack'
          : undefined;
      // The probe POST of a large push and the 401 round trip carry no request worth keeping.
      if (service && req.method === 'POST' && req.headers.authorization && body.length > 4) {
        const gitProtocol = req.headers['git-protocol'];
        requests.push({
          service,
          gitProtocol: typeof gitProtocol === 'string' ? gitProtocol : undefined,
          body,
          label,
        });
      }
      const headers = { ...req.headers, host: target.host, 'content-length': String(body.length) };
      delete headers['content-encoding'];
      delete headers['transfer-encoding'];
      const upstream = httpRequest(
        { host: target.hostname, port: target.port, method: req.method, path: req.url, headers },
        (answer) => {
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(res);
        },
      );
      upstream.on('error', () => res.destroy());
      upstream.end(body);
    })().catch(() => res.destroy());
  });
  await new Promise<void>((done) => proxy.listen(0, '127.0.0.1', done));
  const address = proxy.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  const url = `http://admin:${ADMIN_TOKEN}@127.0.0.1:${port}/${repo}.git`;
  const step = async (name: string, args: string[], cwd?: string) => {
    label = name;
    await gitOk(args, { home, ...(cwd ? { cwd } : {}) });
  };
  try {
    const work = await workRepo(home, 3, 'capture');
    await step('push (create)', ['push', url, 'main'], work);
    await commitFile(work, home, 'feature.txt', 'feature\n');
    await step(
      'push (new branch, push options)',
      ['push', '-o', 'ci.skip', '-o', 'reviewer=x', url, 'HEAD:refs/heads/feature'],
      work,
    );
    await gitOk(['tag', '-a', '-m', 'release', 'v1'], { cwd: work, home });
    await step('push (annotated tag)', ['push', url, 'v1'], work);
    await step(
      'push --atomic (delete and update)',
      ['push', '--atomic', url, ':refs/heads/feature', 'HEAD:main'],
      work,
    );
    const v0 = `${work}-clone-v0`;
    const v2 = `${work}-clone-v2`;
    await step('clone (v0)', ['-c', 'protocol.version=0', 'clone', '-q', url, v0]);
    await step('clone (v2)', ['-c', 'protocol.version=2', 'clone', '-q', url, v2]);
    await commitFile(work, home, 'later.txt', 'later\n');
    await step('push (fast-forward)', ['push', url, 'main'], work);
    await step('fetch (v0, with haves)', ['-c', 'protocol.version=0', 'fetch', '-q', 'origin'], v0);
    await step('fetch (v2, with haves)', ['-c', 'protocol.version=2', 'fetch', '-q', 'origin'], v2);
    await step('ls-remote (v2)', ['-c', 'protocol.version=2', 'ls-remote', url]);
    // v0: a v2 shallow clone of this server fails in git 2.39 itself (wanted-refs before shallow-info).
    await step('shallow clone (v0)', [
      '-c',
      'protocol.version=0',
      'clone',
      '-q',
      '--depth=1',
      url,
      `${work}-shallow`,
    ]);
    const head = (await gitOk(['rev-parse', 'HEAD'], { cwd: work, home })).trim();
    return { requests, head };
  } finally {
    proxy.closeAllConnections();
    await new Promise<void>((done) => proxy.close(() => done()));
  }
}
