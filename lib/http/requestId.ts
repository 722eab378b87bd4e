import { randomBytes } from 'node:crypto';

/**
 * Request ids: 24 hex digits, unique across the nodes that log to one place - 64 random bits per
 * process and a counter - without asking the system for randomness on every request.
 */
const REQUEST_ID_PREFIX = randomBytes(8).toString('hex');
let requestCount = 0;

export function nextRequestId(): string {
  requestCount = (requestCount + 1) >>> 0;
  return `${REQUEST_ID_PREFIX}${requestCount.toString(16).padStart(8, '0')}`;
}
