import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FsObjectStore } from '../../../lib/store/FsObjectStore.js';
import { describeObjectStoreConformance } from '../../helpers/storeConformance.js';

describeObjectStoreConformance('filesystem', async () => {
  const root = await mkdtemp(join(tmpdir(), 'narwal-fs-store-'));
  return { store: new FsObjectStore(root), cleanup: () => rm(root, { recursive: true, force: true }) };
});
