/**
 * Fixed-window request counters shared by every process of a cluster: each API key's `rate_limit`
 * (`api_key:<id>`), the serverless listing's 10 a minute per organization, and failed sign-ins per
 * client address (db/rate-windows.ts).
 */
import { integer, pgTable, text, timestamp } from 'drizzle-orm/pg-core';

export const rateLimitWindows = pgTable('rate_limit_windows', {
  /** What is counted: `api_key:<key id>`, `serverless.list:<organization id>`, `login.address:<ip>`. */
  bucket: text('bucket').primaryKey(),
  windowStart: timestamp('window_start', { withTimezone: true }).notNull(),
  count: integer('count').notNull().default(0),
});
