/** Fixed-window request counters shared by every process of a cluster (e.g. the serverless listing's 10 per minute). */
import { integer, pgTable, text, timestamp } from 'drizzle-orm/pg-core';

export const rateLimitWindows = pgTable('rate_limit_windows', {
  /** What is counted, e.g. `serverless.list:<organization id>`. */
  bucket: text('bucket').primaryKey(),
  windowStart: timestamp('window_start', { withTimezone: true }).notNull(),
  count: integer('count').notNull().default(0),
});
