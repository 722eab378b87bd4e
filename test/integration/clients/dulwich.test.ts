/**
 * Client matrix, dulwich (pure-Python git, Debian's python3-dulwich, protocol v0 over smart
 * HTTP): clone, fetch, push of a commit and of a deletion, and refusals, through
 * test/clients/dulwich_client.py. The checks are shared with pygit2 (pythonClientSuite.ts).
 */
import { describePythonClient } from '../../helpers/pythonClientSuite.js';

describePythonClient('dulwich', {
  badCredentials: /^No valid credentials provided$/,
  readOnlyPush: /^unexpected http resp 403 for .*git-receive-pack$/,
});
