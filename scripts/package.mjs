// `npm run package`: bundles the functions (dist/lambda/, what the Dockerfile copies) and writes
// the CloudFormation template with osls, offline. Packaging needs no AWS account: without
// credentials in the environment, placeholder ones are given (nothing is sent with them).
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

// git sends the pool tokens: it is reached over HTTPS only, through CloudFront's certificate by
// default or through the deployment's own (serverless.yml, poolCertificateArn and poolUrl).
const params = paramsOf(process.argv.slice(2));
if (params.poolCertificateArn && !params.poolUrl) {
  fail('poolCertificateArn needs poolUrl, the https:// name the certificate is for (point it at the ALB)');
}
if (params.poolUrl && !params.poolCertificateArn) {
  fail(
    'poolUrl needs poolCertificateArn, an ACM certificate for its name; without both, the pool gets CloudFront’s',
  );
}
if (params.poolUrl && !/^https:\/\/[^/]+$/.test(params.poolUrl)) {
  fail(
    `poolUrl must be https://NAME with no path (tokens never travel in clear text), not ${params.poolUrl}`,
  );
}

const bundle = spawnSync(process.execPath, ['scripts/build-lambda.mjs'], { stdio: 'inherit' });
if (bundle.status !== 0) process.exit(bundle.status ?? 1);

const env = { ...process.env, SLS_TELEMETRY_DISABLED: '1', SLS_NOTIFICATIONS_MODE: 'off' };
if (!env.AWS_ACCESS_KEY_ID && !env.AWS_PROFILE) {
  env.AWS_ACCESS_KEY_ID = 'packaging-only';
  env.AWS_SECRET_ACCESS_KEY = 'packaging-only';
}
const args = ['package', ...process.argv.slice(2)];
const result = spawnSync('npx', ['--no-install', 'osls', ...args], { stdio: 'inherit', env });
if (result.status !== 0) process.exit(result.status ?? 1);

// A gateway response takes effect only in a deployment of the API made after it exists, and
// CloudFormation would otherwise create the two side by side: the stage's first deployment
// could go out without the WWW-Authenticate that git needs. osls names the deployment anew each
// time, so the dependency is added here.
// https://docs.aws.amazon.com/apigateway/latest/developerguide/api-gateway-gatewayResponse-definition.html
const dir = packageDir(process.argv.slice(2));
const path = join(dir, 'cloudformation-template-update-stack.json');
const template = JSON.parse(readFileSync(path, 'utf8'));
const responses = Object.keys(template.Resources).filter(
  (id) => template.Resources[id].Type === 'AWS::ApiGateway::GatewayResponse',
);
for (const resource of Object.values(template.Resources)) {
  if (resource.Type !== 'AWS::ApiGateway::Deployment') continue;
  resource.DependsOn = [...new Set([...[resource.DependsOn ?? []].flat(), ...responses])];
}
writeFileSync(path, `${JSON.stringify(template, null, 2)}\n`);

/** `--param="name=value"` or `--param name=value`, as osls takes them. */
function paramsOf(argv) {
  const params = {};
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    const value = arg.startsWith('--param=')
      ? arg.slice('--param='.length)
      : arg === '--param'
        ? argv[++i]
        : null;
    if (typeof value !== 'string') continue;
    const eq = value.indexOf('=');
    if (eq > 0) params[value.slice(0, eq)] = value.slice(eq + 1);
  }
  return params;
}

function fail(message) {
  console.error(`narwal: ${message}`);
  process.exit(2);
}

function packageDir(argv) {
  const i = argv.findIndex((a) => a === '--package' || a === '-p');
  return i >= 0 && argv[i + 1] ? argv[i + 1] : '.serverless';
}
