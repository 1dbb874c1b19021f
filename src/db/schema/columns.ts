/** Column sets shared by the tables of several domains. */
import { timestamp } from 'drizzle-orm/pg-core';

/** `created_at` and `updated_at`, both timestamptz set on insert. */
export const timestamps = {
  createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
  updatedAt: timestamp('updated_at', { withTimezone: true }).notNull().defaultNow(),
};
