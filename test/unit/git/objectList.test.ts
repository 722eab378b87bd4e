import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { InvalidObjectLine, ObjectList } from '../../../lib/git/ObjectList.js';

const oid = (i: number) => createHash('sha1').update(String(i)).digest('hex');
const name = (hex: string) => Buffer.from(hex, 'hex');

describe('ObjectList', () => {
  it('finds the line of every name it holds, and no other name', () => {
    const lines = Array.from({ length: 5000 }, (_, i) => (i % 2 ? `${oid(i)} path/${i}` : oid(i)));
    const list = new ObjectList(Buffer.from(`${lines.join('\n')}\n`));
    expect(list.size).toBe(5000);
    for (const i of [0, 1, 2, 2499, 4999]) {
      expect(list.indexOf(name(oid(i)), 0)).toBe(i);
      expect(list.line(i)).toBe(lines[i]);
    }
    for (let i = 5000; i < 6000; i++) expect(list.indexOf(name(oid(i)), 0)).toBe(-1);
  });

  it('reads a last line with no newline, and a name at any offset of a buffer', () => {
    const list = new ObjectList(Buffer.from(`${oid(1)}\n${oid(2)} dir/file name`));
    expect(list.size).toBe(2);
    expect(list.line(1)).toBe(`${oid(2)} dir/file name`);
    const bytes = Buffer.concat([Buffer.from('xyz'), name(oid(2)), Buffer.from('!')]);
    expect(list.indexOf(bytes, 3)).toBe(1);
  });

  it('tells apart names that share their first bytes', () => {
    const a = `${'ab'.repeat(10)}${'00'.repeat(10)}`;
    const b = `${'ab'.repeat(10)}${'00'.repeat(9)}01`;
    const list = new ObjectList(Buffer.from(`${a}\n${b}\n`));
    expect(list.indexOf(name(b), 0)).toBe(1);
    expect(list.indexOf(name(a), 0)).toBe(0);
    expect(list.indexOf(name(`${'ab'.repeat(10)}${'00'.repeat(9)}02`), 0)).toBe(-1);
  });

  it('is empty for no output', () => {
    const list = new ObjectList(Buffer.alloc(0));
    expect(list.size).toBe(0);
    expect(list.indexOf(name(oid(1)), 0)).toBe(-1);
  });

  it('refuses a line that does not start with a whole object name', () => {
    for (const text of [
      'not hex\n',
      `${oid(1).slice(0, 39)}g\n`,
      `${oid(1).slice(0, 30)}\n`,
      `${oid(1)}x\n`,
      '\n',
    ])
      expect(() => new ObjectList(Buffer.from(text)), text).toThrow(InvalidObjectLine);
  });
});
