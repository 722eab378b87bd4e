/** Request ids: one process's are distinct and alike in shape; the counter wraps, not the shape. */
import { describe, expect, it } from 'vitest';
import { nextRequestId } from '../../../lib/http/requestId.js';

describe('nextRequestId', () => {
  it('gives distinct ids of 24 hex digits sharing the process prefix', () => {
    const ids = Array.from({ length: 1000 }, () => nextRequestId());
    expect(new Set(ids).size).toBe(1000);
    for (const id of ids) expect(id).toMatch(/^[0-9a-f]{24}$/);
    expect(new Set(ids.map((id) => id.slice(0, 16))).size).toBe(1);
  });
});
