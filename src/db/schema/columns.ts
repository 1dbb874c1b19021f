/** Column sets shared by the tables of several domains. */
import { customType, numeric, timestamp } from 'drizzle-orm/pg-core';

/** `created_at` and `updated_at`, both timestamptz set on insert. */
export const timestamps = {
  createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
  updatedAt: timestamp('updated_at', { withTimezone: true }).notNull().defaultNow(),
};

/** An amount of money: numeric(14, 4) in the database, a number in TypeScript and JSON. */
export const money = (name: string) => numeric(name, { precision: 14, scale: 4, mode: 'number' });

/** A full-text search document; written and read only inside SQL (the text form never reaches the API). */
export const tsvector = customType<{ data: string }>({ dataType: () => 'tsvector' });
