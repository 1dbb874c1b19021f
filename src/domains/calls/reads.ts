/**
 * What other domains may read of call records. Calls are written only here (CallService); others
 * read them through these functions — tenant-scoped, except `unscoped`, which says why it is not.
 */
export type { CallRow } from './store.js';
export { findCall } from './store.js';
export { type TranscriptSegmentRow, transcriptOf } from './transcripts.js';
export { unscoped } from './unscoped-store.js';
