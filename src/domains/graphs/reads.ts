/** What other domains may read of assistant graphs (tenant-scoped); graphs are written only here. */
export { entryAssistantOf, findGraph, graphsUsingAssistant } from './store.js';
