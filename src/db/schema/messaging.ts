/** Messaging: SMS and MMS messages, their idempotency keys, and numbers' SMS compliance records. */
import { sql } from 'drizzle-orm';
import {
  bigint,
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
import { assistants } from './assistants.js';
import { oneOf } from './checks.js';
import { money, timestamps } from './columns.js';
import { organizationColumn, users } from './identity.js';
import { phoneNumbers } from './phone-numbers.js';

export const MESSAGE_STATUSES = [
  'queued',
  'sending',
  'sent',
  'delivered',
  'undelivered',
  'failed',
  'cancelled',
  'received',
] as const;
export type MessageStatus = (typeof MESSAGE_STATUSES)[number];

export const messages = pgTable(
  'messages',
  {
    id: uuid('id').primaryKey().defaultRandom(),
    organizationId: organizationColumn(),
    phoneNumberId: integer('phone_number_id').references(() => phoneNumbers.id, { onDelete: 'set null' }),
    assistantId: integer('assistant_id').references(() => assistants.id, { onDelete: 'set null' }),
    provider: text('provider').notNull(),
    direction: text('direction').$type<'inbound' | 'outbound'>().notNull(),
    fromPhoneNumber: text('from_phone_number').notNull(),
    toPhoneNumber: text('to_phone_number').notNull(),
    body: text('body').notNull(),
    mediaUrls: jsonb('media_urls').$type<string[]>().notNull().default([]),
    status: text('status').$type<MessageStatus>().notNull(),
    /** The carrier's message identifier, once it accepted the message. */
    providerMessageId: text('provider_message_id'),
    segments: integer('segments').notNull().default(1),
    cost: money('cost'),
    /** Why sending failed (the carrier's words), when it did. */
    error: text('error'),
    /** Sending attempts made so far (retryable carrier errors try again). */
    attempts: integer('attempts').notNull().default(0),
    sentAt: timestamp('sent_at', { withTimezone: true }),
    deliveredAt: timestamp('delivered_at', { withTimezone: true }),
    ...timestamps,
  },
  (t) => [
    index('messages_organization_created_idx').on(t.organizationId, t.createdAt),
    // The send queue: oldest queued message per number first.
    index('messages_queued_idx').on(t.phoneNumberId, t.createdAt).where(sql`${t.status} = 'queued'`),
    uniqueIndex('messages_provider_message_key').on(t.provider, t.providerMessageId),
    check('messages_direction_check', sql`${t.direction} in ('inbound', 'outbound')`),
  ],
);

/**
 * One row per idempotency key and organization, kept 24 hours. The primary key makes a concurrent
 * duplicate wait for the first request's transaction and then find its row.
 */
export const smsIdempotencyKeys = pgTable(
  'sms_idempotency_keys',
  {
    organizationId: organizationColumn(),
    key: text('key').notNull(),
    /** SHA-256 of the request body without `idempotency_key`. */
    requestHash: text('request_hash').notNull(),
    messageId: uuid('message_id').references(() => messages.id, { onDelete: 'cascade' }),
    /** The first answer, replayed to repeats; null while the first request is still sending. */
    response: jsonb('response').$type<Record<string, unknown>>(),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    primaryKey({ columns: [t.organizationId, t.key] }),
    index('sms_idempotency_created_idx').on(t.createdAt),
  ],
);

/**
 * Each organization's SMS sending version: bumped by triggers (migration 0019) whenever anything a
 * send reads before it writes changes — its settings, carrier credentials, a phone number, an
 * assistant's own carrier config, an SMS compliance record — whoever makes the change (any process,
 * the CLI). A send resolved from a cache writes only while the version it was resolved at is still
 * current (domains/sms/senders.ts). No foreign key: the triggers also fire while an organization's
 * rows are deleted with it, and a row left behind is harmless. Written by the triggers only.
 */
export const smsSendingVersions = pgTable('sms_sending_versions', {
  organizationId: integer('organization_id').primaryKey(),
  version: bigint('version', { mode: 'number' }).notNull().default(0),
});

export const COMPLIANCE_STATUSES = ['pending', 'approved', 'rejected'] as const;
export type ComplianceStatus = (typeof COMPLIANCE_STATUSES)[number];

/** The SMS compliance submission of a phone number (one per number; a resubmission replaces it). */
export const smsCompliance = pgTable(
  'sms_compliance',
  {
    phoneNumberId: integer('phone_number_id')
      .primaryKey()
      .references(() => phoneNumbers.id, { onDelete: 'cascade' }),
    organizationId: organizationColumn(),
    status: text('status').$type<ComplianceStatus>().notNull().default('pending'),
    useCase: text('use_case').notNull(),
    businessName: text('business_name').notNull(),
    businessDescription: text('business_description').notNull(),
    sampleMessages: jsonb('sample_messages').$type<string[]>().notNull(),
    websiteUrl: text('website_url'),
    contactEmail: text('contact_email'),
    submittedAt: timestamp('submitted_at', { withTimezone: true }).notNull().defaultNow(),
    approvedAt: timestamp('approved_at', { withTimezone: true }),
    rejectionReason: text('rejection_reason'),
    submittedByUserId: integer('submitted_by_user_id').references(() => users.id, { onDelete: 'set null' }),
    reviewedByUserId: integer('reviewed_by_user_id').references(() => users.id, { onDelete: 'set null' }),
    updatedAt: timestamp('updated_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    index('sms_compliance_organization_idx').on(t.organizationId),
    check('sms_compliance_status_check', oneOf(t.status, COMPLIANCE_STATUSES)),
  ],
);
