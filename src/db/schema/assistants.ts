/** Assistants: the configuration of a voice agent. */
import { sql } from 'drizzle-orm';
import { boolean, index, integer, jsonb, pgTable, text, uniqueIndex } from 'drizzle-orm/pg-core';
import { timestamps } from './columns.js';
import { organizationColumn, users } from './identity.js';

export const assistants = pgTable(
  'assistants',
  {
    id: integer('id').primaryKey().generatedAlwaysAsIdentity(),
    organizationId: organizationColumn(),
    userId: integer('user_id').references(() => users.id, { onDelete: 'set null' }),
    name: text('name').notNull(),
    description: text('description'),
    isActive: boolean('is_active').notNull().default(true),
    llmProvider: text('llm_provider').notNull().default('llm_a'),
    /**
     * Every other field of the assistant (llm_settings, tts_settings, tools_settings, …) as the API
     * shows it, with defaults applied; secret fields inside are sealed in place (lib/secret-paths.ts).
     */
    config: jsonb('config').$type<Record<string, unknown>>().notNull().default({}),
    ...timestamps,
  },
  (t) => [
    uniqueIndex('assistants_name_key').on(t.organizationId, t.name),
    // Target of same-organization foreign keys (a phone number's assistant must be its own).
    uniqueIndex('assistants_organization_id_key').on(t.organizationId, t.id),
    // Call search matches assistant names with the same text-search configuration as transcripts.
    index('assistants_name_search_idx').using('gin', sql`to_tsvector('english', ${t.name})`),
  ],
);
