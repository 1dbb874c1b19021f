/**
 * Campaigns: outreach (calls, SMS or both) to imported contacts, with templates, schedules, retries,
 * and one execution row per contact attempt.
 */
import { sql } from 'drizzle-orm';
import {
  check,
  index,
  integer,
  jsonb,
  pgTable,
  text,
  timestamp,
  uniqueIndex,
  uuid,
} from 'drizzle-orm/pg-core';
import { assistants } from './assistants.js';
import { oneOf } from './checks.js';
import { money, timestamps } from './columns.js';
import { organizationColumn, users } from './identity.js';
import { calls } from './telephony.js';

export const CAMPAIGN_STATUSES = [
  'draft',
  'scheduled',
  'running',
  'paused',
  'completed',
  'cancelled',
  'failed',
] as const;
export type CampaignStatus = (typeof CAMPAIGN_STATUSES)[number];
export const CAMPAIGN_TYPES = ['call', 'sms', 'mixed'] as const;
export type CampaignType = (typeof CAMPAIGN_TYPES)[number];
export const CONTACT_STATUSES = ['pending', 'in_progress', 'completed', 'failed', 'skipped'] as const;
export type ContactStatus = (typeof CONTACT_STATUSES)[number];
export const EXECUTION_STATUSES = [
  'pending',
  'in_progress',
  'completed',
  'failed',
  'no_answer',
  'busy',
  'voicemail',
  'skipped',
] as const;
export type ExecutionStatus = (typeof EXECUTION_STATUSES)[number];

export const campaigns = pgTable(
  'campaigns',
  {
    id: integer('id').primaryKey().generatedAlwaysAsIdentity(),
    organizationId: organizationColumn(),
    createdByUserId: integer('created_by_user_id').references(() => users.id, { onDelete: 'set null' }),
    name: text('name').notNull(),
    description: text('description'),
    campaignType: text('campaign_type').$type<CampaignType>().notNull(),
    status: text('status').$type<CampaignStatus>().notNull().default('draft'),
    /** Kept when the assistant is deleted (a finished campaign keeps its history); a live one fails. */
    assistantId: integer('assistant_id').references(() => assistants.id, { onDelete: 'set null' }),
    welcomeMessageTemplate: text('welcome_message_template'),
    agendaTemplate: text('agenda_template'),
    endCallMessageTemplate: text('end_call_message_template'),
    smsMessageTemplate: text('sms_message_template'),
    fallbackValues: jsonb('fallback_values').$type<Record<string, unknown>>().notNull().default({}),
    /** Template variable name → contact field (`name`, `company`, `custom_fields.plan`…). */
    variableMappings: jsonb('variable_mappings').$type<Record<string, string>>().notNull().default({}),
    /** The variables the campaign's contacts provide (standard fields and every custom field seen). */
    availableVariables: jsonb('available_variables').$type<string[]>().notNull().default([]),
    maxAttempts: integer('max_attempts').notNull().default(3),
    retryDelayMinutes: integer('retry_delay_minutes').notNull().default(30),
    /** Attempts of this campaign in flight at once. */
    concurrencyLimit: integer('concurrency_limit').notNull().default(5),
    totalContacts: integer('total_contacts').notNull().default(0),
    completedContacts: integer('completed_contacts').notNull().default(0),
    failedContacts: integer('failed_contacts').notNull().default(0),
    /** Why a campaign failed (or was paused by the platform), when it was. */
    failureReason: text('failure_reason'),
    /**
     * The run the contacts are in: 0 for the first; each later occurrence of a recurring schedule
     * adds one and resets every contact, so each occurrence contacts everyone once.
     */
    currentOccurrence: integer('current_occurrence').notNull().default(0),
    startedAt: timestamp('started_at', { withTimezone: true }),
    completedAt: timestamp('completed_at', { withTimezone: true }),
    ...timestamps,
  },
  (t) => [
    index('campaigns_organization_idx').on(t.organizationId, t.id),
    index('campaigns_assistant_idx').on(t.assistantId),
    check('campaigns_status_check', oneOf(t.status, CAMPAIGN_STATUSES)),
    check('campaigns_type_check', oneOf(t.campaignType, CAMPAIGN_TYPES)),
  ],
);

export const campaignSchedules = pgTable(
  'campaign_schedules',
  {
    campaignId: integer('campaign_id')
      .primaryKey()
      .references(() => campaigns.id, { onDelete: 'cascade' }),
    organizationId: organizationColumn(),
    scheduleType: text('schedule_type').$type<'scheduled' | 'recurring'>().notNull(),
    scheduledAt: timestamp('scheduled_at', { withTimezone: true }),
    timezone: text('timezone').notNull().default('UTC'),
    recurringConfig: jsonb('recurring_config').$type<Record<string, unknown>>(),
    /** The next time the campaign starts by itself; null when no occurrence is left. */
    nextRunAt: timestamp('next_run_at', { withTimezone: true }),
    lastRunAt: timestamp('last_run_at', { withTimezone: true }),
    ...timestamps,
  },
  // The sweep looks for schedules that are due.
  (t) => [index('campaign_schedules_next_run_idx').on(t.nextRunAt)],
);

export const campaignContacts = pgTable(
  'campaign_contacts',
  {
    id: integer('id').primaryKey().generatedAlwaysAsIdentity(),
    organizationId: organizationColumn(),
    campaignId: integer('campaign_id')
      .notNull()
      .references(() => campaigns.id, { onDelete: 'cascade' }),
    phoneNumber: text('phone_number').notNull(),
    name: text('name'),
    email: text('email'),
    company: text('company'),
    customFields: jsonb('custom_fields').$type<Record<string, unknown>>().notNull().default({}),
    status: text('status').$type<ContactStatus>().notNull().default('pending'),
    attempts: integer('attempts').notNull().default(0),
    /** When the next attempt may start (retries wait retry_delay_minutes). */
    nextAttemptAt: timestamp('next_attempt_at', { withTimezone: true }),
    /** The recurring occurrence the contact was last reset for. */
    occurrence: integer('occurrence').notNull().default(0),
    ...timestamps,
  },
  (t) => [
    uniqueIndex('campaign_contacts_phone_key').on(t.campaignId, t.phoneNumber),
    index('campaign_contacts_due_idx').on(t.campaignId, t.status, t.nextAttemptAt),
    check('campaign_contacts_status_check', oneOf(t.status, CONTACT_STATUSES)),
  ],
);

export const campaignExecutions = pgTable(
  'campaign_executions',
  {
    id: integer('id').primaryKey().generatedAlwaysAsIdentity(),
    organizationId: organizationColumn(),
    campaignId: integer('campaign_id')
      .notNull()
      .references(() => campaigns.id, { onDelete: 'cascade' }),
    contactId: integer('contact_id')
      .notNull()
      .references(() => campaignContacts.id, { onDelete: 'cascade' }),
    /** 1 for the first attempt at the contact; unique with the contact, so no attempt is made twice. */
    attemptNumber: integer('attempt_number').notNull(),
    occurrence: integer('occurrence').notNull().default(0),
    channel: text('channel').$type<'call' | 'sms'>().notNull(),
    status: text('status').$type<ExecutionStatus>().notNull().default('pending'),
    callId: integer('call_id').references(() => calls.id, { onDelete: 'set null' }),
    smsId: uuid('sms_id'),
    cost: money('cost'),
    executedAt: timestamp('executed_at', { withTimezone: true }),
    finishedAt: timestamp('finished_at', { withTimezone: true }),
    executionData: jsonb('execution_data').$type<Record<string, unknown>>().notNull().default({}),
    /** When the sweep last asked the carrier about this attempt (lost callbacks are recovered so). */
    checkedAt: timestamp('checked_at', { withTimezone: true }),
    ...timestamps,
  },
  (t) => [
    uniqueIndex('campaign_executions_attempt_key').on(t.contactId, t.occurrence, t.attemptNumber),
    index('campaign_executions_campaign_idx').on(t.campaignId, t.id),
    index('campaign_executions_call_idx').on(t.callId),
    index('campaign_executions_sms_idx').on(t.smsId),
    // Attempts in flight, counted on every dispatch against the campaign's and organization's limits.
    index('campaign_executions_in_flight_idx')
      .on(t.organizationId, t.campaignId)
      .where(sql`${t.status} in ('pending', 'in_progress')`),
    check('campaign_executions_status_check', oneOf(t.status, EXECUTION_STATUSES)),
  ],
);
