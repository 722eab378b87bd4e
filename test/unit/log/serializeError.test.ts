/**
 * Errors in logs keep their name, message, code and cause: JSON makes `{}` of an Error, and
 * `String(error)` keeps neither the code nor the cause that says what really failed.
 */
import { readdir, readFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { jsonLogger, serializeError } from '../../../lib/log.js';
import { StoreUnavailable } from '../../../lib/store/errors.js';

const ROOT = resolve(import.meta.dirname, '../../..');
/** A caught error flattened into a log field: `error: String(error)`, `error: failure.message`... */
const LOSSY =
  /\berror: (String\(\w+\)|(?:error|err|e|failure)\.message\b|\w+ instanceof Error \? \w+\.message)/;

describe('serializeError', () => {
  it('keeps the name, message, code and cause of an error', () => {
    const cause = Object.assign(new Error('connect ECONNREFUSED 10.0.0.1:443'), { code: 'ECONNREFUSED' });
    const error = new StoreUnavailable('repos/a.git/index.json', 'the store did not answer', { cause });
    expect(serializeError(error)).toEqual({
      name: 'StoreUnavailable',
      message: 'the store did not answer',
      code: 'StoreUnavailable',
      cause: { name: 'Error', message: 'connect ECONNREFUSED 10.0.0.1:443', code: 'ECONNREFUSED' },
    });
  });

  it('keeps the text of a thrown value that is not an Error, and a stack only when asked', () => {
    expect(serializeError('gone')).toEqual({ name: 'string', message: 'gone' });
    expect(serializeError(new TypeError('bad'), { stack: true }).stack).toMatch(/^TypeError: bad\n/);
    expect(serializeError(new TypeError('bad')).stack).toBeUndefined();
  });

  it('stops following causes after a few levels', () => {
    let error = new Error('level 0');
    for (let i = 1; i <= 10; i++) error = new Error(`level ${i}`, { cause: error });
    let depth = 0;
    for (let logged = serializeError(error).cause; logged; logged = logged.cause) depth++;
    expect(depth).toBe(4);
  });
});

describe('jsonLogger', () => {
  it('writes an Error passed as a field with its name, message and cause, not as {}', () => {
    const lines: string[] = [];
    const logger = jsonLogger({ write: (line) => lines.push(line) });
    logger.warn('prewarm failed', { error: new RangeError('too far', { cause: new Error('disk full') }) });
    const fields = JSON.parse(lines[0] ?? '{}') as { error: unknown };
    expect(fields.error).toEqual({
      name: 'RangeError',
      message: 'too far',
      cause: { name: 'Error', message: 'disk full' },
    });
  });
});

describe('the code', () => {
  it('logs no error as String(error) or as its message alone', async () => {
    const found: string[] = [];
    for (const dir of ['lib', 'bin', 'functions']) {
      const entries = await readdir(join(ROOT, dir), { recursive: true, withFileTypes: true });
      for (const e of entries.filter((e) => e.isFile() && e.name.endsWith('.ts'))) {
        const path = join(e.parentPath, e.name);
        const lines = (await readFile(path, 'utf8')).split('\n');
        lines.forEach((line, i) => {
          if (LOSSY.test(line)) found.push(`${path.slice(ROOT.length + 1)}:${i + 1}: ${line.trim()}`);
        });
      }
    }
    expect(found, 'log fields that lose the error: use serializeError (lib/log.ts)').toEqual([]);
  });
});
