/**
 * What other domains may read of messages. Messages are written only here (SmsService); others read
 * them through these functions — tenant-scoped, except `unscoped`, which says why it is not.
 */
export type { MessageRow } from './store.js';
export { findMessage, unscoped } from './store.js';
