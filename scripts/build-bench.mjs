// Bundles the benchmark (bench/run.ts) and its peer server (bench/peerMain.ts) into dist/ with
// esbuild, as scripts/build.mjs does for the CLI: Node 20 cannot run TypeScript directly.
import { build } from 'esbuild';

await build({
  entryPoints: {
    bench: 'bench/run.ts',
    'bench-peer': 'bench/peerMain.ts',
    'bench-floor': 'bench/floorMain.ts',
    'bench-cold': 'bench/coldProbe.ts',
    'bench-contention': 'bench/contention.ts',
    'bench-history': 'bench/historyLatency.ts',
    'bench-refs': 'bench/refsGrowth.ts',
    'bench-authorizer': 'bench/authorizerCost.ts',
    'bench-browse': 'bench/browsePages.ts',
  },
  outdir: 'dist',
  bundle: true,
  platform: 'node',
  target: 'node20',
  format: 'esm',
  sourcemap: true,
  packages: 'external',
  logLevel: 'warning',
});
