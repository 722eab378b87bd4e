/** A repository name from a URL path, refused with a 400 that says why. */
import { InvalidRepoName, parseRepoName } from '../repoName.js';
import { badRequest } from './HttpError.js';

export function repoFromPath(raw: string): string {
  try {
    return parseRepoName(raw);
  } catch (error) {
    if (error instanceof InvalidRepoName) throw badRequest(`narwal: ${error.message}`);
    throw error;
  }
}

/**
 * A git URL's repository part: `OWNER/NAME.git`, or `OWNER/NAME.git@SEQ` for the state right after
 * entry SEQ (read-only: a clone or fetch of the past).
 */
export function gitRepoFromPath(raw: string): { repo: string; at?: number } {
  const match = /^(.*)@(\d{1,12})$/.exec(raw);
  if (match === null) return { repo: repoFromPath(raw) };
  return { repo: repoFromPath(match[1] as string), at: Number(match[2]) };
}
