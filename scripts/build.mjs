// Bundles the CLI (and with it the local server) into dist/ with esbuild.
import { chmod } from 'node:fs/promises';
import { build } from 'esbuild';

await build({
  entryPoints: { narwal: 'bin/narwal.ts' },
  outdir: 'dist',
  bundle: true,
  platform: 'node',
  target: 'node20',
  format: 'esm',
  // Lazily imported adapters (S3, DynamoDB, Lambda) stay out of the start-up path of every command.
  splitting: true,
  chunkNames: 'chunks/[name]-[hash]',
  sourcemap: true,
  packages: 'external',
  banner: { js: '#!/usr/bin/env node' },
  logLevel: 'warning',
});
await chmod('dist/narwal.js', 0o755);
