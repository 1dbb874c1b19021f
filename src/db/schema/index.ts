/** The whole database schema, one module per domain. drizzle-kit generates migrations from this. */
export * from './identity.js';
