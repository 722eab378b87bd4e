/**
 * Deletes a directory that running nodes write into, as an operator or a cache wipe would: it is
 * renamed away in one step (what the nodes see), then removed at leisure, so a node writing into
 * it meanwhile cannot make the removal fail with ENOTEMPTY.
 */
import { randomBytes } from 'node:crypto';
import { rename, rm } from 'node:fs/promises';

export async function deleteInUse(dir: string): Promise<void> {
  const away = `${dir}.deleted-${randomBytes(4).toString('hex')}`;
  try {
    await rename(dir, away);
  } catch (error) {
    if (error instanceof Error && 'code' in error && error.code === 'ENOENT') return;
    throw error;
  }
  await rm(away, { recursive: true, force: true, maxRetries: 10 });
}
