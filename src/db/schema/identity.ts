/** Identity: organizations, users and their memberships, login sessions, one-time tokens, API keys. */
import { sql } from 'drizzle-orm';
import {
  boolean,
  check,
  index,
  integer,
  jsonb,
  pgTable,
  primaryKey,
  text,
  timestamp,
  uniqueIndex,
  uuid,
} from 'drizzle-orm/pg-core';
import { timestamps } from './columns.js';

export const organizations = pgTable('organizations', {
  id: integer('id').primaryKey().generatedAlwaysAsIdentity(),
  name: text('name').notNull(),
  slug: text('slug').notNull().unique(),
  description: text('description'),
  domain: text('domain'),
  settings: jsonb('settings').$type<Record<string, unknown>>().notNull().default({}),
  /** Non-secret SIP trunk settings (`sip_domain`, `inbound_enabled`); secrets live in provider_credentials. */
  sipTrunkConfig: jsonb('sip_trunk_config').$type<Record<string, unknown>>(),
  /** Signs outgoing webhooks (HMAC-SHA256); sealed. Made on first use, rotatable by an admin. */
  webhookSecretSealed: text('webhook_secret_sealed'),
  /** `{tts: {<provider>: {enabled, concurrent_limit}}, stt: {…}}` */
  concurrencySettings: jsonb('concurrency_settings')
    .$type<Record<string, Record<string, { enabled: boolean; concurrent_limit: number }>>>()
    .notNull()
    .default({}),
  ...timestamps,
});

/**
 * The column that makes a row belong to a tenant (db/tenant.ts filters on it); a row goes with its
 * organization.
 */
export const organizationColumn = () =>
  integer('organization_id')
    .notNull()
    .references(() => organizations.id, { onDelete: 'cascade' });

export const users = pgTable(
  'users',
  {
    id: integer('id').primaryKey().generatedAlwaysAsIdentity(),
    /** Stored lower-cased; unique across the platform. */
    email: text('email').notNull(),
    /** `scrypt$N$r$p$salt$hash`; null for a user who has not set a password yet. */
    passwordHash: text('password_hash'),
    firstName: text('first_name').notNull().default(''),
    lastName: text('last_name').notNull().default(''),
    emailVerifiedAt: timestamp('email_verified_at', { withTimezone: true }),
    preferences: jsonb('preferences').$type<Record<string, unknown>>().notNull().default({}),
    /** When this user's first own organization received the trial credits (only one ever does). */
    trialCreditsGrantedAt: timestamp('trial_credits_granted_at', { withTimezone: true }),
    /** The organization a login without `organization_id` opens. */
    lastOrganizationId: integer('last_organization_id').references(() => organizations.id, {
      onDelete: 'set null',
    }),
    ...timestamps,
  },
  (t) => [uniqueIndex('users_email_key').on(t.email)],
);

export const memberships = pgTable(
  'memberships',
  {
    userId: integer('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    organizationId: organizationColumn(),
    role: text('role').$type<'admin' | 'user'>().notNull(),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    primaryKey({ columns: [t.userId, t.organizationId] }),
    index('memberships_organization_idx').on(t.organizationId),
    check('memberships_role_check', sql`${t.role} in ('admin', 'user')`),
  ],
);

/**
 * One login: it carries the rotating refresh token, the dashboard cookie and its CSRF token. Access
 * tokens name their session, so ending the session ends them too. Only hashes are stored.
 */
export const authSessions = pgTable(
  'auth_sessions',
  {
    id: uuid('id').primaryKey().defaultRandom(),
    userId: integer('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    organizationId: organizationColumn(),
    refreshTokenHash: text('refresh_token_hash').notNull(),
    /**
     * Hashes of refresh tokens this session issued and has since replaced, newest first and bounded
     * (see `SPENT_REFRESH_TOKENS_KEPT`): one of them coming back means a copy is in use, while a token
     * the session never issued changes nothing. Kept in the row, so they go with the session.
     */
    spentRefreshTokenHashes: text('spent_refresh_token_hashes').array().notNull().default(sql`'{}'::text[]`),
    cookieTokenHash: text('cookie_token_hash').notNull(),
    csrfTokenHash: text('csrf_token_hash').notNull(),
    expiresAt: timestamp('expires_at', { withTimezone: true }).notNull(),
    revokedAt: timestamp('revoked_at', { withTimezone: true }),
    userAgent: text('user_agent'),
    lastRefreshedAt: timestamp('last_refreshed_at', { withTimezone: true }),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [index('auth_sessions_user_idx').on(t.userId)],
);

/**
 * Failed sign-ins per email in the current window (fixed windows, counted atomically in the row so
 * the limit holds across a cluster). A successful sign-in clears the row.
 */
export const loginFailures = pgTable('login_failures', {
  email: text('email').primaryKey(),
  windowStart: timestamp('window_start', { withTimezone: true }).notNull(),
  failures: integer('failures').notNull().default(0),
});

/** Single-use tokens sent by mail (email verification; later password reset). Stored as hashes. */
export const emailTokens = pgTable(
  'email_tokens',
  {
    id: integer('id').primaryKey().generatedAlwaysAsIdentity(),
    userId: integer('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    purpose: text('purpose').$type<'verify_email'>().notNull(),
    tokenHash: text('token_hash').notNull().unique(),
    expiresAt: timestamp('expires_at', { withTimezone: true }).notNull(),
    usedAt: timestamp('used_at', { withTimezone: true }),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [index('email_tokens_user_idx').on(t.userId)],
);

export const apiKeys = pgTable(
  'api_keys',
  {
    id: integer('id').primaryKey().generatedAlwaysAsIdentity(),
    userId: integer('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    organizationId: organizationColumn(),
    name: text('name').notNull(),
    keyPrefix: text('key_prefix').notNull(),
    /** SHA-256 of the secret: the secret has 190+ bits of entropy, so a fast hash is enough. */
    keyHash: text('key_hash').notNull().unique(),
    permissions: jsonb('permissions').$type<Record<string, 'read' | 'read_write'>>().notNull().default({}),
    /** Requests per minute; null means unlimited. */
    rateLimit: integer('rate_limit'),
    isActive: boolean('is_active').notNull().default(true),
    lastUsedAt: timestamp('last_used_at', { withTimezone: true }),
    usageCount: integer('usage_count').notNull().default(0),
    ...timestamps,
  },
  (t) => [index('api_keys_owner_idx').on(t.organizationId, t.userId)],
);
