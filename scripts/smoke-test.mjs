// `npm run smoke-test -- --stack narwal-prod [--region us-east-1]`: after a deploy, push and clone
// through the deployment as a user would, with the real git and the AWS CLI's credentials:
// - the stack's outputs (GitBaseUrl, PoolBaseUrl) and the admin token from Secrets Manager;
// - GET /healthz through API Gateway and through the pool (each checks S3, DynamoDB and EFS);
// - an anonymous request is answered 401 with WWW-Authenticate (the authorizer's gateway response);
// - a push creating a repository (it goes to the pool), a small push and a clone through Lambda,
//   a clone of a large file through the pool, a fetch over protocol v0 and v2;
// - whether API Gateway takes a request body without Content-Length (what git sends for a push
//   over http.postBuffer), which decides the chunkedPushes parameter.
// Credentials reach git through a credential helper, never the URL, as the README advises.
import { execFileSync, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';

const { values } = parseArgs({
  options: { stack: { type: 'string', default: 'narwal-prod' }, region: { type: 'string' } },
});
const region = values.region ?? process.env.AWS_REGION ?? 'us-east-1';
const aws = (...args) =>
  execFileSync('aws', [...args, '--region', region, '--output', 'json'], { encoding: 'utf8' });

const outputs = Object.fromEntries(
  JSON.parse(aws('cloudformation', 'describe-stacks', '--stack-name', values.stack)).Stacks[0].Outputs.map(
    (o) => [o.OutputKey, o.OutputValue],
  ),
);
const gitBase = outputs.GitBaseUrl;
const poolBase = outputs.PoolBaseUrl;
const token = JSON.parse(
  aws('secretsmanager', 'get-secret-value', '--secret-id', outputs.AdminTokenSecretArn),
).SecretString;
const home = mkdtempSync(join(tmpdir(), 'narwal-smoke-'));
const repo = `smoke/test-${randomBytes(4).toString('hex')}`;
let failed = 0;

try {
  writeFileSync(
    join(home, '.gitconfig'),
    `[user]\n\tname = narwal smoke test\n\temail = smoke@example.com\n[credential]\n\thelper = "!f() { echo username=smoke; echo password=${token}; }; f"\n`,
  );
  const git = (args, cwd = home) => {
    const result = spawnSync('git', args, {
      cwd,
      env: { ...process.env, HOME: home, GIT_TERMINAL_PROMPT: '0' },
      encoding: 'utf8',
    });
    if (result.status !== 0) throw new Error(`git ${args.join(' ')}:\n${result.stderr}`);
    return result.stdout;
  };

  await step('healthz through API Gateway', async () => expectStatus(await fetch(`${gitBase}/healthz`), 200));
  await step('healthz through the pool', async () => expectStatus(await fetch(`${poolBase}/healthz`), 200));
  await step('an anonymous request is asked for credentials git understands', async () => {
    const res = await fetch(`${gitBase}/${repo}.git/info/refs?service=git-receive-pack`);
    expectStatus(res, 401);
    if (!/^Basic /.test(res.headers.get('www-authenticate') ?? ''))
      throw new Error('no WWW-Authenticate: Basic');
  });
  const work = join(home, 'work');
  await step('push creating a repository (goes to the pool)', async () => {
    git(['init', '-q', '-b', 'main', work]);
    writeFileSync(join(work, 'README'), 'smoke test\n');
    git(['add', 'README'], work);
    git(['commit', '-q', '-m', 'first'], work);
    git(['push', '-q', `${gitBase}/${repo}.git`, 'main'], work);
  });
  await step('small push and clone through Lambda, protocol v2 and v0', async () => {
    writeFileSync(join(work, 'second'), 'second\n');
    git(['add', 'second'], work);
    git(['commit', '-q', '-m', 'second'], work);
    git(['push', '-q', `${gitBase}/${repo}.git`, 'main'], work);
    for (const version of ['2', '0']) {
      const clone = join(home, `clone-v${version}`);
      git(['-c', `protocol.version=${version}`, 'clone', '-q', `${gitBase}/${repo}.git`, clone]);
      if (git(['rev-parse', 'HEAD'], clone) !== git(['rev-parse', 'HEAD'], work))
        throw new Error('clone differs');
    }
  });
  await step('a large push and clone through the pool', async () => {
    writeFileSync(join(work, 'large.bin'), randomBytes(12 * 1024 * 1024));
    git(['add', 'large.bin'], work);
    git(['commit', '-q', '-m', 'large'], work);
    git(
      ['-c', 'http.extraHeader=X-Narwal-Route: pool', 'push', '-q', `${gitBase}/${repo}.git`, 'main'],
      work,
    );
    const clone = join(home, 'clone-large');
    git(['clone', '-q', `${gitBase}/${repo}.git`, clone]);
    if (git(['rev-parse', 'HEAD'], clone) !== git(['rev-parse', 'HEAD'], work))
      throw new Error('clone differs');
  });
  await step('what API Gateway does with a body without Content-Length', async () => {
    const status = await chunkedPost(`${gitBase}/healthz`);
    console.log(
      status === 200
        ? '    it buffers it: deploy with --param="chunkedPushes=accepted" to keep pushes up to ~4 MB on Lambda'
        : `    it refuses it (${status}): keep chunkedPushes=pool (the default)`,
    );
  });
} finally {
  rmSync(home, { recursive: true, force: true });
}
console.log(failed === 0 ? 'smoke test passed' : `smoke test: ${failed} step(s) failed`);
process.exit(failed === 0 ? 0 : 1);

async function step(name, run) {
  try {
    await run();
    console.log(`ok   ${name}`);
  } catch (error) {
    failed++;
    console.log(`FAIL ${name}: ${error instanceof Error ? error.message : String(error)}`);
  }
}

function expectStatus(response, status) {
  if (response.status !== status) throw new Error(`HTTP ${response.status}, expected ${status}`);
}

function chunkedPost(url) {
  return new Promise((done, fail) => {
    const req = request(url, { method: 'POST', headers: { 'transfer-encoding': 'chunked' } }, (res) => {
      res.resume();
      done(res.statusCode ?? 0);
    });
    req.on('error', fail);
    req.write(randomBytes(64 * 1024));
    req.end();
  });
}
