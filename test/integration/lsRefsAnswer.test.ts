/**
 * narwal's own ls-refs answers (lib/protocol/lsRefsAnswer.ts) against git's: the same request
 * given to `git upload-pack --stateless-rpc` in protocol v2 on a repository whose refs are all in
 * a fully-peeled packed-refs, as a generation's are, must get the same bytes.
 */
import { spawn } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { lsRefsAnswer } from '../../lib/protocol/lsRefsAnswer.js';
import { DELIM_PKT, encodePktLine, FLUSH_PKT } from '../../lib/protocol/pktLine.js';
import type { RefValue } from '../../lib/protocol/refValue.js';
import { expressBundle, tempDir } from '../helpers/clientRepos.js';
import { commitFile, gitOk, makeHome, workRepo } from '../helpers/gitClient.js';

let home: string;
let bare: string;
let refs: Map<string, RefValue>;
let fixture: string;
let fixtureRefs: Map<string, RefValue>;

/** git's answer to `request` on `dir` with HEAD naming `head`. */
async function gitAnswer(dir: string, head: string, request: Buffer): Promise<Buffer> {
  await gitOk(['--git-dir', dir, 'symbolic-ref', 'HEAD', head], { home });
  return new Promise((resolve, reject) => {
    const child = spawn('git', ['upload-pack', '--stateless-rpc', dir], {
      env: {
        PATH: process.env.PATH ?? '/usr/bin:/bin',
        HOME: home,
        GIT_CONFIG_NOSYSTEM: '1',
        GIT_PROTOCOL: 'version=2',
      },
    });
    const out: Buffer[] = [];
    child.stdout.on('data', (chunk: Buffer) => out.push(chunk));
    child.once('error', reject);
    child.once('close', (code) =>
      code === 0 ? resolve(Buffer.concat(out)) : reject(new Error(`upload-pack ${code}`)),
    );
    child.stdin.end(request);
  });
}

function request(
  args: readonly (string | Buffer)[],
  capabilities = ['agent=git/2.39.5', 'object-format=sha1'],
): Buffer {
  return Buffer.concat([
    encodePktLine('command=ls-refs\n'),
    ...capabilities.map((c) => encodePktLine(`${c}\n`)),
    DELIM_PKT,
    ...args.map((a) => encodePktLine(Buffer.concat([Buffer.from(a), Buffer.from('\n')]))),
    FLUSH_PKT,
  ]);
}

/** A mirror of `source` with every ref packed, and its refs as narwal's index holds them. */
async function packedMirror(source: string): Promise<{ dir: string; refs: Map<string, RefValue> }> {
  const dir = join(await tempDir('lsrefs'), 'mirror.git');
  await gitOk(['clone', '-q', '--mirror', source, dir], { home });
  await gitOk(['--git-dir', dir, 'pack-refs', '--all'], { home });
  const packed = new Map<string, RefValue>();
  let last: string | undefined;
  for (const line of (await readFile(join(dir, 'packed-refs'), 'utf8')).split('\n')) {
    if (line.startsWith('^') && last)
      packed.set(last, { ...(packed.get(last) as RefValue), peeled: line.slice(1) });
    else if (/^[0-9a-f]{40} /.test(line)) {
      last = line.slice(41);
      packed.set(last, { oid: line.slice(0, 40) });
    }
  }
  return { dir, refs: packed };
}

beforeAll(async () => {
  home = await makeHome();
  const work = await workRepo(home, 2, 'lsrefs');
  await gitOk(['tag', '-a', 'v1', '-m', 'one'], { cwd: work, home });
  await gitOk(['tag', '-a', 'v1-signed-again', '-m', 'tag of a tag', 'v1'], { cwd: work, home });
  await gitOk(['tag', 'light'], { cwd: work, home });
  await gitOk(['branch', 'feature/x'], { cwd: work, home });
  await gitOk(['branch', 'zürich'], { cwd: work, home });
  await commitFile(work, home, 'later.txt', 'later\n');
  await gitOk(['update-ref', 'refs/pull/1/head', 'HEAD~1'], { cwd: work, home });
  ({ dir: bare, refs } = await packedMirror(work));
  ({ dir: fixture, refs: fixtureRefs } = await packedMirror(expressBundle()));
});

describe('ls-refs written from the refs', () => {
  const requests: [string, Buffer][] = [
    ['no arguments', request([])],
    [
      'what git clone asks',
      request([
        'peel',
        'symrefs',
        'unborn',
        'ref-prefix HEAD',
        'ref-prefix refs/heads/',
        'ref-prefix refs/tags/',
      ]),
    ],
    [
      'what git fetch of a branch asks',
      request([
        'symrefs',
        'ref-prefix main',
        'ref-prefix refs/main',
        'ref-prefix refs/tags/main',
        'ref-prefix refs/heads/main',
        'ref-prefix refs/remotes/main',
        'ref-prefix refs/remotes/main/HEAD',
      ]),
    ],
    ['peel only', request(['peel'])],
    ['symrefs only', request(['symrefs'])],
    [
      'overlapping prefixes',
      request(['ref-prefix refs/heads/', 'ref-prefix refs/heads/fe', 'ref-prefix refs/']),
    ],
    ['a prefix with a glob character', request(['ref-prefix refs/heads/*', 'ref-prefix refs/tags/v'])],
    [
      'a prefix ending inside a UTF-8 character',
      request([Buffer.concat([Buffer.from('ref-prefix refs/heads/z'), Buffer.from([0xc3])])], ['agent=x']),
    ],
    ['a prefix nothing matches', request(['ref-prefix refs/nothing/'])],
    ['no capabilities, no delim', Buffer.concat([encodePktLine('command=ls-refs\n'), FLUSH_PKT])],
    ['a server option', request(['symrefs'], ['server-option=anything'])],
  ];
  for (const head of ['refs/heads/main', 'refs/heads/unborn-branch']) {
    for (const [name, body] of requests) {
      it(`answers as git does: ${name}, HEAD ${head}`, async () => {
        const ours = lsRefsAnswer(body, refs, head);
        expect(ours, 'narwal answers this one itself').not.toBeNull();
        expect((ours as Buffer).toString('latin1')).toBe(
          (await gitAnswer(bare, head, body)).toString('latin1'),
        );
      });
    }
  }

  it('answers as git does on the express fixture (323 refs, 50 of them annotated tags), for each request', async () => {
    for (const [name, body] of requests) {
      const ours = lsRefsAnswer(body, fixtureRefs, 'refs/heads/master');
      expect(ours, name).not.toBeNull();
      expect((ours as Buffer).toString('latin1'), name).toBe(
        (await gitAnswer(fixture, 'refs/heads/master', body)).toString('latin1'),
      );
    }
    expect([...fixtureRefs.values()].filter((v) => v.peeled).length).toBeGreaterThan(40);
  });

  it('lists every tag with its fully peeled value and HEAD with its branch', () => {
    const text = (lsRefsAnswer(request(['peel', 'symrefs']), refs, 'refs/heads/main') as Buffer).toString();
    expect(text).toMatch(/^[0-9a-f]{4}[0-9a-f]{40} HEAD symref-target:refs\/heads\/main\n/);
    const v1 = refs.get('refs/tags/v1') as RefValue;
    expect(refs.get('refs/tags/v1-signed-again')?.peeled).toBe(v1.peeled);
    expect(text).toContain(`refs/tags/v1-signed-again peeled:${v1.peeled}\n`);
  });

  it('leaves to git what it does not write alike', () => {
    for (const body of [
      request(['no-such-argument']),
      request([], ['session-id=1']),
      request([], ['server-option']),
      request([], ['object-format=sha256']),
      Buffer.concat([encodePktLine('command=fetch\n'), FLUSH_PKT]),
      Buffer.concat([request([]), request([])]),
      request([]).subarray(0, 10),
    ])
      expect(lsRefsAnswer(body, refs, 'refs/heads/main')).toBeNull();
    // HEAD on a branch that names a tag object: git peels HEAD by reading the object.
    const onTag = new Map(refs);
    onTag.set('refs/heads/main', refs.get('refs/tags/v1') as RefValue);
    expect(lsRefsAnswer(request(['peel']), onTag, 'refs/heads/main')).toBeNull();
    expect(lsRefsAnswer(request([]), onTag, 'refs/heads/main')).not.toBeNull();
  });
});
