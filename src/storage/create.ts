/** The storage backend the configuration names (STORAGE_BACKEND): files under DATA_DIR, or a bucket. */
import type { StorageConfig } from '../config.js';
import { FileStorage } from './files.js';
import { S3Storage } from './s3.js';
import type { Storage } from './storage.js';

export function createStorage(config: StorageConfig): Storage {
  return config.backend === 'files' ? new FileStorage(config.dir) : new S3Storage(config);
}
