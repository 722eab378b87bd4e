import { describe, expect, it } from 'vitest';
import { BuildSuperseded } from '../../../lib/cache/RepoCache.js';
import { ProtocolError } from '../../../lib/protocol/ProtocolError.js';
import { StoreUnavailable } from '../../../lib/store/errors.js';
import { RepoBeingCreated } from '../../../lib/transfer/errors.js';
import { pushRefusalFor, refusedInProtocol } from '../../../lib/transfer/pushRefusal.js';
import { Busy } from '../../../lib/util/Busy.js';
import { OutcomeUnknown, RepoNotFound } from '../../../lib/wal/errors.js';

/** An error as node:fs and child_process make them. */
const systemError = (code: string, syscall: string, path: string) =>
  Object.assign(new Error(`${code}: ${syscall} '${path}'`), { code, syscall, path });

describe('pushRefusalFor', () => {
  it('says what happened to the push and what to do next, for each kind of failure', () => {
    const missing = systemError('ENOENT', 'open', '/c/pack-1.pack');
    const noGit = systemError('ENOENT', 'spawn git', 'git');
    const cases: [unknown, RegExp][] = [
      [new RepoNotFound('team/app'), /repository was deleted during the push/],
      [new OutcomeUnknown('team/app'), /outcome is unknown; fetch to see whether it landed/],
      [
        new StoreUnavailable('k', 'timed out'),
        /storage busy or unavailable, the push was not recorded; retry/,
      ],
      [new RepoBeingCreated('team/app'), /repository team\/app is being created; retry/],
      [
        new Busy('narwal: the cache of team/app is busy; retry in a moment'),
        /cache of team\/app is busy; retry/,
      ],
      [missing, /cache of the repository changed during the push, which was not recorded; retry the push/],
      [
        new BuildSuperseded('the cache of team/app changed under every build'),
        /cache of the repository changed during the push, which was not recorded; retry the push/,
      ],
      [noGit, /internal error, the push was not recorded; retry the push/],
      [new Error('something else'), /internal error, the push was not recorded; retry the push/],
      [undefined, /internal error, the push was not recorded; retry the push/],
    ];
    for (const [error, expected] of cases) {
      const reason = pushRefusalFor(error);
      expect(reason).toMatch(expected);
      // One line that git prints after `ng <ref>`.
      expect(reason).not.toContain('\n');
      expect(reason.startsWith('narwal: ')).toBe(true);
    }
  });

  it("words any failure as the cache changing once the push's repository is gone, but not a known outcome", () => {
    // git run in a repository deleted under it.
    const gitFailed = new Error('git cat-file failed (128): fatal: not a git repository');
    expect(pushRefusalFor(gitFailed)).toMatch(/internal error/);
    expect(pushRefusalFor(gitFailed, { repositoryGone: true })).toMatch(
      /cache of the repository changed during the push, which was not recorded; retry the push/,
    );
    // What the store said stays what the client is told: above all an outcome that is unknown.
    expect(pushRefusalFor(new OutcomeUnknown('team/app'), { repositoryGone: true })).toMatch(
      /outcome is unknown/,
    );
    expect(pushRefusalFor(new StoreUnavailable('k', 'timed out'), { repositoryGone: true })).toMatch(
      /storage busy or unavailable/,
    );
  });
});

describe('refusedInProtocol', () => {
  it('takes the failures whose words say what to do, and leaves bad requests their HTTP answers', () => {
    const gone = systemError('ENOENT', 'open', '/c/spool-1');
    const raced = systemError('ENOTEMPTY', 'rmdir', '/c/g');
    const noGit = systemError('ENOENT', 'spawn git', 'git');
    for (const error of [
      new RepoNotFound('team/app'),
      new RepoBeingCreated('team/app'),
      new Busy('narwal: busy'),
      new StoreUnavailable('k', 'timed out'),
      new BuildSuperseded('changed'),
      gone,
      raced,
    ])
      expect(refusedInProtocol(error), String(error)).toBe(true);
    for (const error of [noGit, new ProtocolError('a bad pkt-line'), new Error('something else'), undefined])
      expect(refusedInProtocol(error), String(error)).toBe(false);
  });
});
