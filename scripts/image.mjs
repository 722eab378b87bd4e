// `npm run image -- ACCOUNT.dkr.ecr.REGION.amazonaws.com/narwal[:TAG]`: packages the functions,
// builds the one image every function and the pool run (Dockerfile) for linux/amd64 as a single
// image manifest, pushes it, checks that the pushed digest is one Lambda accepts, and prints the
// `imageUri` to deploy with (REPOSITORY@sha256:DIGEST).
import { spawnSync } from 'node:child_process';
import { lambdaManifestProblem } from './imageManifest.mjs';

const target = process.argv[2];
if (!target || !/^[^\s@]+\/[^\s@]+$/.test(target)) {
  console.error('usage: npm run image -- ACCOUNT.dkr.ecr.REGION.amazonaws.com/REPOSITORY[:TAG]');
  process.exit(2);
}
const tagged = /:[^/]+$/.test(target) ? target : `${target}:latest`;
const repository = tagged.replace(/:[^/]+$/, '');

run(process.execPath, ['scripts/package.mjs']);
// No provenance or SBOM attestations: with them the pushed digest names an index, which Lambda refuses.
run('docker', [
  'buildx',
  'build',
  '--platform',
  'linux/amd64',
  '--provenance=false',
  '--sbom=false',
  '--tag',
  tagged,
  '--push',
  '.',
]);
const raw = run('docker', ['buildx', 'imagetools', 'inspect', '--raw', tagged], true);
const problem = lambdaManifestProblem(raw);
if (problem) {
  console.error(`narwal: ${tagged}: ${problem}`);
  process.exit(1);
}
const inspect = run(
  'docker',
  ['buildx', 'imagetools', 'inspect', tagged, '--format', '{{json .Manifest}}'],
  true,
);
const digest = JSON.parse(inspect).digest;
console.log(`imageUri=${repository}@${digest}`);

function run(command, args, capture = false) {
  const result = spawnSync(command, args, {
    stdio: capture ? ['ignore', 'pipe', 'inherit'] : 'inherit',
    encoding: 'utf8',
  });
  if (result.status !== 0) {
    console.error(`narwal: ${command} ${args.join(' ')} failed`);
    process.exit(result.status ?? 1);
  }
  return result.stdout ?? '';
}
