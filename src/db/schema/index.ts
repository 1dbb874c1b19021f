/** The whole database schema, one module per domain. drizzle-kit generates migrations from this. */

export * from './accounts.js';
export * from './analysis.js';
export * from './assistants.js';
export * from './billing.js';
export * from './call-rollups.js';
export * from './campaigns.js';
export * from './graph-rollups.js';
export * from './graph-sessions.js';
export * from './graphs.js';
export * from './identity.js';
export * from './knowledge.js';
export * from './leases.js';
export * from './limits.js';
export * from './messaging.js';
export * from './phone-numbers.js';
export * from './recordings.js';
export * from './telephony.js';
export * from './webhooks.js';
