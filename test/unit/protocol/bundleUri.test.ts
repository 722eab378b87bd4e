import { describe, expect, it } from 'vitest';
import { bundleHeader, bundleList, offerBundleUri } from '../../../lib/protocol/bundleUri.js';
import { encodePktLine, FLUSH_PKT } from '../../../lib/protocol/pktLine.js';

const advertisement = (...lines: string[]) =>
  Buffer.concat([...lines.map((line) => encodePktLine(line)), FLUSH_PKT]);

describe('bundle-uri', () => {
  it('adds the capability last, once', () => {
    const before = advertisement(
      'version 2\n',
      'ls-refs=unborn\n',
      'fetch=shallow\n',
      'object-format=sha1\n',
    );
    const after = advertisement(
      'version 2\n',
      'ls-refs=unborn\n',
      'fetch=shallow\n',
      'object-format=sha1\n',
      'bundle-uri\n',
    );
    expect(offerBundleUri(before).equals(after)).toBe(true);
    expect(offerBundleUri(after)).toBe(after);
    const garbage = Buffer.from('nope');
    expect(offerBundleUri(garbage)).toBe(garbage);
  });

  it('writes a bundle list as key=value packets ending with a flush-pkt', () => {
    expect(bundleList([]).toString()).toBe('0015bundle.version=1\n0014bundle.mode=all\n0000');
    expect(bundleList([{ id: 'state3', uri: 'http://h/b' }]).toString()).toContain(
      '0021bundle.state3.uri=http://h/b\n0000',
    );
  });

  it('writes a v2 bundle header with no prerequisites', () => {
    const oid = 'a'.repeat(40);
    expect(bundleHeader([['refs/heads/main', oid]]).toString()).toBe(
      `# v2 git bundle\n${oid} refs/heads/main\n\n`,
    );
  });
});
