/**
 * What other domains may read of assistants. Assistants are written only here; others read them
 * through these functions — tenant-scoped, except `unscoped`, which says why it is not.
 */
export type { AssistantRow } from './store.js';
export {
  assistantEventUrls,
  assistantKeySources,
  findAssistant,
  forwardsSmsEvents,
  unscoped,
} from './store.js';
