/** What other domains may read of fallback keys (tenant-scoped); the keys are written only here. */
export type { FallbackKeyRow } from './store.js';
export { listFallbackKeys } from './store.js';
