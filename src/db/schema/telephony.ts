/** Telephony: call records, their transcripts and turns, and the events of each call. */
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
import type { TurnMarks, TurnPassage } from '../../voice/turn-metrics.js';
import { assistants } from './assistants.js';
import { oneOf } from './checks.js';
import { money, timestamps, tsvector } from './columns.js';
import { organizationColumn } from './identity.js';
import { phoneNumbers } from './phone-numbers.js';

export const CALL_STATUSES = [
  'queued',
  'ringing',
  'in-progress',
  'completed',
  'busy',
  'no-answer',
  'failed',
  'canceled',
] as const;
export type CallStatus = (typeof CALL_STATUSES)[number];
/** Statuses after which nothing changes any more. */
export const FINAL_CALL_STATUSES: readonly CallStatus[] = [
  'completed',
  'busy',
  'no-answer',
  'failed',
  'canceled',
];

export const calls = pgTable(
  'calls',
  {
    id: integer('id').primaryKey().generatedAlwaysAsIdentity(),
    organizationId: organizationColumn(),
    /** Kept when the assistant is deleted later (the call record stays, its assistant becomes null). */
    assistantId: integer('assistant_id').references(() => assistants.id, { onDelete: 'set null' }),
    phoneNumberId: integer('phone_number_id').references(() => phoneNumbers.id, { onDelete: 'set null' }),
    provider: text('provider').notNull(),
    /** The carrier's call identifier; null until the carrier accepted the call. */
    callSid: text('call_sid'),
    direction: text('direction').$type<'inbound' | 'outbound'>().notNull(),
    /** Our number (the caller on outbound calls, the callee on inbound ones). */
    fromPhoneNumber: text('from_phone_number').notNull(),
    /** The number dialled. */
    toPhoneNumber: text('to_phone_number').notNull(),
    /** The other party: the callee on outbound calls, the caller on inbound ones. */
    customerPhoneNumber: text('customer_phone_number').notNull(),
    status: text('status').$type<CallStatus>().notNull().default('queued'),
    /** What the call was started with (rendered welcome message, agenda, variables) and what it learned. */
    callMeta: jsonb('call_meta').$type<Record<string, unknown>>().notNull().default({}),
    /** Seconds, from the carrier's final status. */
    duration: integer('duration'),
    cost: money('cost'),
    startedAt: timestamp('started_at', { withTimezone: true }),
    endedAt: timestamp('ended_at', { withTimezone: true }),
    graphSessionId: integer('graph_session_id'),
    campaignId: integer('campaign_id'),
    ...timestamps,
  },
  (t) => [
    uniqueIndex('calls_provider_call_sid_key').on(t.provider, t.callSid),
    index('calls_organization_created_idx').on(t.organizationId, t.createdAt),
    index('calls_assistant_idx').on(t.assistantId),
    // The SIP calls not yet final, by the agent holding them: what an agent starting settles
    // (calls/sip-orphans.ts) is found without reading every call.
    index('calls_sip_agent_live_idx')
      .on(sql`(${t.callMeta}->>'sip_agent')`)
      .where(sql`${t.provider} = 'sip_trunk' and not ${oneOf(t.status, FINAL_CALL_STATUSES)}`),
    check('calls_direction_check', sql`${t.direction} in ('inbound', 'outbound')`),
    check('calls_status_check', oneOf(t.status, CALL_STATUSES)),
  ],
);

/** Who said a transcript segment. */
export const TRANSCRIPT_SPEAKERS = ['user', 'assistant'] as const;
export type TranscriptSpeaker = (typeof TRANSCRIPT_SPEAKERS)[number];

/** What was said on a call, one row per utterance, in the order the runtime heard it. */
export const callTranscriptSegments = pgTable(
  'call_transcript_segments',
  {
    id: integer('id').primaryKey().generatedAlwaysAsIdentity(),
    organizationId: organizationColumn(),
    callId: integer('call_id')
      .notNull()
      .references(() => calls.id, { onDelete: 'cascade' }),
    /** 1, 2, 3… within the call: the order segments are read back in. */
    position: integer('position').notNull(),
    speaker: text('speaker').$type<TranscriptSpeaker>().notNull(),
    text: text('text').notNull(),
    startedAt: timestamp('started_at', { withTimezone: true }).notNull(),
    endedAt: timestamp('ended_at', { withTimezone: true }).notNull(),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    uniqueIndex('call_transcript_segments_call_position_key').on(t.callId, t.position),
    check('call_transcript_segments_speaker_check', oneOf(t.speaker, TRANSCRIPT_SPEAKERS)),
    check('call_transcript_segments_times_check', sql`${t.endedAt} >= ${t.startedAt}`),
  ],
);

/** What a turn of a call was: the greeting, an answer to the caller, an idle prompt, the goodbye. */
export const TURN_KINDS = ['greeting', 'reply', 'idle', 'goodbye'] as const;
export type TurnKind = (typeof TURN_KINDS)[number];

/**
 * One turn of a call as the live runtime recorded it: what was said and how long each stage took
 * (runtime.md §5). The six figures are columns, so they can be averaged and filtered in SQL; the raw
 * moments they derive from stay in `marks` (milliseconds since the session started, 0.1 ms steps).
 */
export const callTurns = pgTable(
  'call_turns',
  {
    id: integer('id').primaryKey().generatedAlwaysAsIdentity(),
    organizationId: organizationColumn(),
    callId: integer('call_id')
      .notNull()
      .references(() => calls.id, { onDelete: 'cascade' }),
    /** 0 for the greeting, then 1, 2, 3… within the call. */
    position: integer('position').notNull(),
    kind: text('kind').$type<TurnKind>().notNull(),
    startedAt: timestamp('started_at', { withTimezone: true }).notNull(),
    userText: text('user_text').notNull(),
    assistantText: text('assistant_text').notNull(),
    interrupted: boolean('interrupted').notNull(),
    llmProvider: text('llm_provider'),
    endToEndMs: integer('end_to_end_ms'),
    endpointingMs: integer('endpointing_ms'),
    sttDelayMs: integer('stt_delay_ms'),
    llmTtftMs: integer('llm_ttft_ms'),
    ttsTtfbMs: integer('tts_ttfb_ms'),
    platformMs: integer('platform_ms'),
    /** Knowledge-base retrieval before the model was asked (null when the assistant has none). */
    retrievalMs: integer('retrieval_ms'),
    /** The knowledge passages the answer was given: [{document_id, chunk_id, score}]. */
    passages: jsonb('passages').$type<TurnPassage[]>(),
    marks: jsonb('marks').$type<TurnMarks>().notNull().default({}),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    uniqueIndex('call_turns_call_position_key').on(t.callId, t.position),
    check('call_turns_kind_check', oneOf(t.kind, TURN_KINDS)),
    check('call_turns_position_check', sql`${t.position} >= 0`),
  ],
);

/**
 * The full-text search document of each call: its phone numbers (every digit suffix of 3 or more
 * digits, so a partial number is a prefix query) and the words of its transcript, which grows as
 * segments are appended. Kept apart from `calls` so listing and export never read it. The call's
 * assistant is repeated here (a call never changes assistant) so a search by assistant name finds
 * the newest calls of that assistant through one index, without touching `calls`.
 */
export const callSearchDocuments = pgTable(
  'call_search_documents',
  {
    callId: integer('call_id')
      .primaryKey()
      .references(() => calls.id, { onDelete: 'cascade' }),
    organizationId: organizationColumn(),
    assistantId: integer('assistant_id').references(() => assistants.id, { onDelete: 'set null' }),
    document: tsvector('document').notNull(),
  },
  (t) => [
    index('call_search_documents_document_idx').using('gin', t.document),
    index('call_search_documents_assistant_idx').on(t.assistantId, t.callId),
    // Call search walks an organization's documents newest first when a word is common
    // (domains/calls/search.ts).
    index('call_search_documents_organization_idx').on(t.organizationId, t.callId),
  ],
);

/** Everything that happened to a call, in order: status changes from the carrier, transfers, errors. */
export const callEvents = pgTable(
  'call_events',
  {
    id: integer('id').primaryKey().generatedAlwaysAsIdentity(),
    organizationId: organizationColumn(),
    callId: integer('call_id')
      .notNull()
      .references(() => calls.id, { onDelete: 'cascade' }),
    type: text('type').notNull(),
    data: jsonb('data').$type<Record<string, unknown>>().notNull().default({}),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [index('call_events_call_idx').on(t.callId, t.id)],
);
