// Bundles the Lambda functions and the CLI (which the pool runs as `narwal serve`) into
// dist/lambda/, dependencies included, for the container image (Dockerfile). ES modules, with a
// `require` for the CommonJS parts of the AWS SDK.
import { build } from 'esbuild';

await build({
  entryPoints: {
    git: 'functions/git.ts',
    http: 'functions/http.ts',
    prewarm: 'functions/prewarm.ts',
    maintenance: 'functions/maintenance.ts',
    authorizer: 'functions/authorizer.ts',
    narwal: 'bin/narwal.ts',
  },
  outdir: 'dist/lambda',
  outExtension: { '.js': '.mjs' },
  bundle: true,
  platform: 'node',
  target: 'node20',
  format: 'esm',
  sourcemap: true,
  banner: {
    js: "import { createRequire } from 'node:module'; const require = createRequire(import.meta.url);",
  },
  logLevel: 'warning',
});
