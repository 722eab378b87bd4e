/**
 * The floor server (floor.ts) as a process of its own (bundled to dist/bench-floor.js), so its CPU
 * is measured as the servers' is.
 */
import { parseArgs } from 'node:util';
import { startFloor } from './floor.js';

const { values } = parseArgs({
  options: { upstream: { type: 'string' }, port: { type: 'string', default: '0' } },
});
if (!values.upstream) {
  console.error('usage: bench-floor --upstream URL [--port N]');
  process.exit(2);
}
const floor = await startFloor({ upstream: values.upstream, port: Number(values.port) });
console.log(`floor listening on ${floor.url}`);
const stop = () => {
  void floor.stop().then(() => process.exit(0));
};
process.once('SIGTERM', stop);
process.once('SIGINT', stop);
