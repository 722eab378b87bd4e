/**
 * The repository the browse benchmark reads: built by `git fast-import` from a stream this file
 * writes, so every run (and every machine) gets the same objects, byte for byte.
 *
 * - `commits` commits on main, one minute apart, each changing one of 1,000 TypeScript files
 *   under src/dNN/eNN/ (three levels of directories), plus a merged topic of three commits every
 *   1,000 commits, so the history is not a straight line;
 * - one commit with a large diff (LARGE_DIFF_FILES files rewritten, and a generated file of
 *   LARGE_FILE_LINES lines added) at the middle of the history;
 * - a README.md at the root, 20 branches and 30 tags (10 of them annotated) along the history.
 *
 * The result is repacked once (`git gc`), as a host's repository would be.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';

export const LARGE_DIFF_FILES = 300;
export const LARGE_FILE_LINES = 6_000;
const EPOCH = 1_600_000_000;
const AUTHORS = ['Ada Lovelace', 'Grace Hopper', 'Alan Turing', 'Edsger Dijkstra', 'Barbara Liskov'];

export interface BuiltRepo {
  /** The commit with the large diff. */
  readonly largeDiff: string;
  readonly commits: number;
}

function fileFor(i: number): string {
  const d = Math.floor(i / 100) % 10;
  const e = Math.floor(i / 10) % 10;
  const f = i % 10;
  return `src/d${d}${d}/e${e}${e}/file${f}.ts`;
}

/** A file's text at version `v`: a fixed body of about 2 KB and the version line. */
function fileText(i: number, v: number): string {
  const lines = [`// generated module ${i}`, `import { helper } from '../../../lib/helper${i % 7}';`, ''];
  for (let k = 0; k < 30; k++) {
    lines.push(`export function f${i}_${k}(x: number): number {`);
    lines.push(`  return helper(x * ${k + 1}) + ${(i * 31 + k) % 97};`);
    lines.push('}');
  }
  lines.push(`export const version = ${v};`, '');
  return lines.join('\n');
}

const README = `# big

A generated repository for narwal's browse benchmark.

## What is in it

- 1,000 modules under \`src/\`, each changed again and again;
- topics merged every 1,000 commits;
- one commit with a large diff.

\`\`\`sh
git clone URL big
\`\`\`

| what | how many |
| ---- | -------- |
| files | 1,000 |
| branches | 20 |
| tags | 30 |
`;

/** Builds the repository at `dir` (a new bare repository) with `commits` commits on main. */
export async function buildBrowseRepo(dir: string, commits: number): Promise<BuiltRepo> {
  await git(['init', '-q', '--bare', '-b', 'main', dir]);
  const child = spawn('git', ['--git-dir', dir, 'fast-import', '--quiet'], {
    stdio: ['pipe', 'ignore', 'inherit'],
  });
  const input = child.stdin;
  let buffered: string[] = [];
  let size = 0;
  const write = async (text: string) => {
    buffered.push(text);
    size += text.length;
    if (size > 1 << 20) await flush();
  };
  const flush = async () => {
    const chunk = buffered.join('');
    buffered = [];
    size = 0;
    if (!input.write(chunk)) await once(input, 'drain');
  };
  const data = (text: string) => {
    const bytes = Buffer.byteLength(text);
    return `data ${bytes}\n${text}\n`;
  };
  let mark = 0;
  let time = EPOCH;
  const versions = new Map<number, number>();
  const largeDiffAt = Math.floor(commits / 2);
  let last = 0;
  const branchEvery = Math.floor(commits / 20);
  const tagEvery = Math.floor(commits / 30);
  const commitHead = (ref: string, author: string, message: string, parents: number[]) => {
    mark++;
    time += 60;
    const who = `${author} <${author.split(' ')[0]?.toLowerCase()}@example.com> ${time} +0000`;
    const from = parents[0] !== undefined ? `from :${parents[0]}\n` : '';
    const merges = parents
      .slice(1)
      .map((p) => `merge :${p}\n`)
      .join('');
    return `commit ${ref}\nmark :${mark}\nauthor ${who}\ncommitter ${who}\n${data(message)}${from}${merges}`;
  };
  for (let n = 1; n <= commits; n++) {
    const author = AUTHORS[n % AUTHORS.length] as string;
    const parents = last === 0 ? [] : [last];
    if (n === 1) {
      let out = commitHead('refs/heads/main', author, 'Initial import\n', parents);
      out += `M 100644 inline README.md\n${data(README)}`;
      for (let i = 0; i < 1000; i++) {
        versions.set(i, 0);
        out += `M 100644 inline ${fileFor(i)}\n${data(fileText(i, 0))}`;
      }
      await write(out);
      last = mark;
      continue;
    }
    if (n === largeDiffAt) {
      let out = commitHead(
        'refs/heads/main',
        author,
        `Regenerate ${LARGE_DIFF_FILES} modules and the data table\n`,
        parents,
      );
      for (let k = 0; k < LARGE_DIFF_FILES; k++) {
        const i = (k * 7) % 1000;
        const v = (versions.get(i) ?? 0) + 1;
        versions.set(i, v);
        out += `M 100644 inline ${fileFor(i)}\n${data(fileText(i, v).replaceAll('helper(', 'helper2('))}`;
      }
      const rows = [];
      for (let r = 0; r < LARGE_FILE_LINES; r++)
        rows.push(`  { "id": ${r}, "name": "row ${r}", "value": ${(r * 7919) % 10007} },`);
      out += `M 100644 inline data/table.json\n${data(`[\n${rows.join('\n')}\n]\n`)}`;
      await write(out);
      last = mark;
      continue;
    }
    if (n % 1000 === 0) {
      // A topic of three commits off main, merged back.
      const base = last;
      let topic = base;
      for (let t = 0; t < 3; t++) {
        const i = (n + t * 13) % 1000;
        const v = (versions.get(i) ?? 0) + 1;
        versions.set(i, v);
        await write(
          `${commitHead(`refs/heads/topic-${n}`, author, `topic ${n}: step ${t}\n`, [topic])}M 100644 inline ${fileFor(i)}\n${data(fileText(i, v))}`,
        );
        topic = mark;
      }
      await write(commitHead('refs/heads/main', author, `Merge topic ${n}\n`, [base, topic]));
      last = mark;
      continue;
    }
    const i = (n * 37) % 1000;
    const v = (versions.get(i) ?? 0) + 1;
    versions.set(i, v);
    await write(
      `${commitHead('refs/heads/main', author, `Change module ${i} to version ${v}\n\nCommit ${n} of the benchmark history.\n`, parents)}M 100644 inline ${fileFor(i)}\n${data(fileText(i, v))}`,
    );
    last = mark;
    if (n % branchEvery === 0) await write(`reset refs/heads/release-${n / branchEvery}\nfrom :${last}\n\n`);
    if (n % tagEvery === 0) {
      const k = n / tagEvery;
      if (k % 3 === 0) {
        await write(
          `tag v${k}.0\nfrom :${last}\ntagger ${author} <t@example.com> ${time} +0000\n${data(`Release ${k}.0\n`)}`,
        );
      } else await write(`reset refs/tags/v${k}.0\nfrom :${last}\n\n`);
    }
  }
  await flush();
  input.end();
  const [code] = (await once(child, 'close')) as [number | null];
  if (code !== 0) throw new Error(`git fast-import failed (${code})`);
  // The topics are merged: their refs go, as a host's merged branches do.
  const refs = (await git(['--git-dir', dir, 'for-each-ref', '--format=%(refname)', 'refs/heads/topic-*']))
    .split('\n')
    .filter(Boolean);
  if (refs.length > 0)
    await git(['--git-dir', dir, 'update-ref', '--stdin'], refs.map((r) => `delete ${r}\n`).join(''));
  await git(['--git-dir', dir, 'gc', '--quiet']);
  const largeDiff = (
    await git(['--git-dir', dir, 'rev-list', '--max-count=1', '--grep=^Regenerate', 'main'])
  ).trim();
  const count = Number((await git(['--git-dir', dir, 'rev-list', '--count', 'main'])).trim());
  return { largeDiff, commits: count };
}

function git(args: string[], input?: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn('git', args, { stdio: ['pipe', 'pipe', 'pipe'] });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on('data', (d: Buffer) => out.push(d));
    child.stderr.on('data', (d: Buffer) => err.push(d));
    // A command that reads nothing may exit before its stdin is closed.
    child.stdin.on('error', () => {});
    child.stdin.end(input ?? '');
    child.once('close', (code) => {
      if (code === 0) resolve(Buffer.concat(out).toString('utf8'));
      else reject(new Error(`git ${args.join(' ')} failed (${code}): ${Buffer.concat(err).toString()}`));
    });
  });
}
