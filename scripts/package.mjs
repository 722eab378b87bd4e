// `npm run package`: bundles the functions (dist/lambda/, what the Dockerfile copies) and writes
// the CloudFormation template with osls, offline. Packaging needs no AWS account: without
// credentials in the environment, placeholder ones are given (nothing is sent with them).
import { spawnSync } from 'node:child_process';

const bundle = spawnSync(process.execPath, ['scripts/build-lambda.mjs'], { stdio: 'inherit' });
if (bundle.status !== 0) process.exit(bundle.status ?? 1);

const env = { ...process.env, SLS_TELEMETRY_DISABLED: '1', SLS_NOTIFICATIONS_MODE: 'off' };
if (!env.AWS_ACCESS_KEY_ID && !env.AWS_PROFILE) {
  env.AWS_ACCESS_KEY_ID = 'packaging-only';
  env.AWS_SECRET_ACCESS_KEY = 'packaging-only';
}
const args = ['package', ...process.argv.slice(2)];
const result = spawnSync('npx', ['--no-install', 'osls', ...args], { stdio: 'inherit', env });
process.exit(result.status ?? 1);
