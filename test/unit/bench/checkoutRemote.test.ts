import { describe, expect, it } from 'vitest';
import { checkoutRemote } from '../../../bench/ciStorm.js';

describe("a CI job's remote, set up as actions/checkout sets it up", () => {
  it('moves the credentials out of the URL into an AUTHORIZATION extra header for the origin', () => {
    const remote = checkoutRemote('http://admin:s3cret%2Fx@127.0.0.1:8123/team/app.git');
    expect(remote.url).toBe('http://127.0.0.1:8123/team/app.git');
    expect(remote.extraHeader).toEqual([
      'http.http://127.0.0.1:8123/.extraheader',
      `AUTHORIZATION: basic ${Buffer.from('admin:s3cret/x').toString('base64')}`,
    ]);
  });

  it('leaves a URL without credentials alone', () => {
    expect(checkoutRemote('http://127.0.0.1:8123/app.git')).toEqual({ url: 'http://127.0.0.1:8123/app.git' });
  });
});
