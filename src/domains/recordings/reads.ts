/**
 * What other domains may read of call recordings (tenant-scoped): whether a call has one, for the
 * end-of-call webhook's signed URL. Recordings are written only here (RecordingService).
 */
export type { RecordingRow } from './store.js';
export { findRecording } from './store.js';
