/**
 * Client matrix, libgit2 through pygit2 (Debian's python3-pygit2 on libgit2 1.5, protocol v0
 * over smart HTTP): clone, fetch, push of a commit and of a deletion, and refusals, through
 * test/clients/pygit2_client.py. The checks are shared with dulwich (pythonClientSuite.ts).
 */
import { describePythonClient } from '../../helpers/pythonClientSuite.js';

describePythonClient('pygit2', {
  // libgit2 gives up when the server keeps answering 401 to the credentials it was given.
  badCredentials: /^too many redirects or authentication replays$/,
  readOnlyPush: /^unexpected http status code: 403$/,
});
