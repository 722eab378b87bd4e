// Writes `narwal --help` (bin/usage.ts, built into dist/narwal.js) into README.md between its
// usage markers; test/unit/bin/usage.test.ts fails while the README's copy differs.
// Run: npm run build && node scripts/readme-usage.mjs
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';

const START = '<!-- usage:start -->';
const END = '<!-- usage:end -->';
const help = execFileSync(process.execPath, ['dist/narwal.js', 'help'], { encoding: 'utf8' }).trimEnd();
const readme = readFileSync('README.md', 'utf8');
const start = readme.indexOf(START);
const end = readme.indexOf(END);
if (start < 0 || end < start) throw new Error(`README.md has no ${START} ... ${END} section`);
writeFileSync(
  'README.md',
  `${readme.slice(0, start)}${START}\n\n\`\`\`text\n${help}\n\`\`\`\n\n${readme.slice(end)}`,
);
