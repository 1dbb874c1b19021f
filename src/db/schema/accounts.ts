/** Accounts: invitations, organization credentials, LLM presets, fallback keys. */
import { sql } from 'drizzle-orm';
import {
  boolean,
  check,
  index,
  integer,
  jsonb,
  pgTable,
  text,
  timestamp,
  uniqueIndex,
} from 'drizzle-orm/pg-core';
import { timestamps } from './columns.js';
import { organizationColumn, users } from './identity.js';

export const invitations = pgTable(
  'invitations',
  {
    id: integer('id').primaryKey().generatedAlwaysAsIdentity(),
    organizationId: organizationColumn(),
    email: text('email').notNull(),
    firstName: text('first_name').notNull(),
    lastName: text('last_name').notNull(),
    role: text('role').$type<'admin' | 'user'>().notNull(),
    tokenHash: text('token_hash').notNull().unique(),
    invitedByUserId: integer('invited_by_user_id').references(() => users.id, { onDelete: 'set null' }),
    expiresAt: timestamp('expires_at', { withTimezone: true }).notNull(),
    acceptedAt: timestamp('accepted_at', { withTimezone: true }),
    /** Set when a newer invitation to the same email replaces this one. */
    revokedAt: timestamp('revoked_at', { withTimezone: true }),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    index('invitations_organization_idx').on(t.organizationId, t.email),
    check('invitations_role_check', sql`${t.role} in ('admin', 'user')`),
  ],
);

/**
 * An organization's credentials for one provider (a vendor API key, a carrier account, the SIP
 * trunk). The whole credential object is sealed (AES-256-GCM); responses open it and show
 * identifiers (an account SID, a connection id) in clear and secrets masked.
 */
export const providerCredentials = pgTable(
  'provider_credentials',
  {
    id: integer('id').primaryKey().generatedAlwaysAsIdentity(),
    organizationId: organizationColumn(),
    provider: text('provider').notNull(),
    sealed: text('sealed').notNull(),
    ...timestamps,
  },
  (t) => [uniqueIndex('provider_credentials_provider_key').on(t.organizationId, t.provider)],
);

export const llmPresets = pgTable(
  'llm_presets',
  {
    id: integer('id').primaryKey().generatedAlwaysAsIdentity(),
    organizationId: organizationColumn(),
    name: text('name').notNull(),
    provider: text('provider').notNull(),
    model: text('model').notNull(),
    apiKeySealed: text('api_key_sealed'),
    baseUrl: text('base_url'),
    settings: jsonb('settings').$type<Record<string, unknown>>().notNull().default({}),
    createdByUserId: integer('created_by_user_id').references(() => users.id, { onDelete: 'set null' }),
    ...timestamps,
  },
  (t) => [uniqueIndex('llm_presets_name_key').on(t.organizationId, t.name)],
);

export const fallbackKeys = pgTable(
  'fallback_keys',
  {
    id: integer('id').primaryKey().generatedAlwaysAsIdentity(),
    organizationId: organizationColumn(),
    provider: text('provider').notNull(),
    name: text('name').notNull(),
    apiKeySealed: text('api_key_sealed').notNull(),
    enabled: boolean('enabled').notNull().default(true),
    /** Calls this key may serve at once; null means no limit of its own. */
    concurrentLimit: integer('concurrent_limit'),
    ...timestamps,
  },
  (t) => [uniqueIndex('fallback_keys_name_key').on(t.organizationId, t.provider, t.name)],
);
