import { describe, expect, it } from 'vitest';
import { isOid, parsePointer } from '../../../lib/lfs/pointer.js';

const OID = '4d7a214614ab2935c943f9e0ff69d22eadbb8f32b1258daaa5e2ca24d17e2393';
const pointer = (text: string) => parsePointer(Buffer.from(text));

describe('LFS pointer files', () => {
  it('reads the oid and size of a pointer as git-lfs writes it', () => {
    expect(pointer(`version https://git-lfs.github.com/spec/v1\noid sha256:${OID}\nsize 12345\n`)).toEqual({
      oid: OID,
      size: 12345,
    });
    // Extensions sort before oid; the old hawser version is still read by git-lfs.
    expect(
      pointer(
        `version https://hawser.github.com/spec/v1\next-0-foo sha256:${'0'.repeat(64)}\noid sha256:${OID}\nsize 0\n`,
      ),
    ).toEqual({ oid: OID, size: 0 });
  });

  it('takes nothing else for a pointer', () => {
    const cases = [
      `oid sha256:${OID}\nversion https://git-lfs.github.com/spec/v1\nsize 1\n`,
      `version https://git-lfs.github.com/spec/v1\noid sha256:${OID}\nsize 1`,
      `version https://git-lfs.github.com/spec/v1\nsize 1\noid sha256:${OID}\n`,
      `version https://git-lfs.github.com/spec/v2\noid sha256:${OID}\nsize 1\n`,
      `version https://git-lfs.github.com/spec/v1\noid sha256:${OID.toUpperCase()}\nsize 1\n`,
      `version https://git-lfs.github.com/spec/v1\noid md5:${OID.slice(0, 32)}\nsize 1\n`,
      `version https://git-lfs.github.com/spec/v1\noid sha256:${OID}\nsize -1\n`,
      `version https://git-lfs.github.com/spec/v1\noid sha256:${OID}\nsize 99999999999999999\n`,
      `version https://git-lfs.github.com/spec/v1\r\noid sha256:${OID}\r\nsize 1\r\n`,
      `version https://git-lfs.github.com/spec/v1\noid sha256:${OID}\n`,
      `version https://git-lfs.github.com/spec/v1\noid sha256:${OID}\nsize 1\n${'x'.repeat(1024)}\n`,
      'hello world\n',
    ];
    for (const text of cases) expect(pointer(text), JSON.stringify(text)).toBeNull();
  });

  it('knows an oid: 64 lowercase hex digits', () => {
    expect(isOid(OID)).toBe(true);
    for (const value of [OID.toUpperCase(), OID.slice(1), `${OID}0`, `../${OID.slice(3)}`, 42, null])
      expect(isOid(value)).toBe(false);
  });
});
