/**
 * What other domains may read of call analyses (the calls API shows a call's analysis beside it).
 * Written only by this domain's service.
 */
export type { AnalysisRow } from './store.js';
export { findAnalysis } from './store.js';
