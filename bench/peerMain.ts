/**
 * The peer as a process of its own (bundled to dist/bench-peer.js), so its CPU time, and that of
 * the git children it waits for, can be read from /proc the same way as narwal's.
 */
import { parseArgs } from 'node:util';
import { startPeer } from './peer.js';

const { values } = parseArgs({
  options: {
    root: { type: 'string' },
    port: { type: 'string', default: '0' },
    user: { type: 'string' },
    password: { type: 'string' },
    trace2: { type: 'string' },
  },
});
if (!values.root) {
  console.error('usage: bench-peer --root DIR [--port N] [--user U --password P] [--trace2 DIR]');
  process.exit(2);
}
const peer = await startPeer({
  root: values.root,
  port: Number(values.port),
  ...(values.trace2 !== undefined ? { trace2Dir: values.trace2 } : {}),
  ...(values.user !== undefined && values.password !== undefined
    ? { auth: { user: values.user, password: values.password } }
    : {}),
});
console.log(`peer listening on ${peer.url}`);
const stop = () => {
  void peer.stop().then(() => process.exit(0));
};
process.once('SIGTERM', stop);
process.once('SIGINT', stop);
