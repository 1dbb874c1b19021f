/**
 * What the platform worked out about a call once it ended (domains/analysis): a summary, the
 * caller's sentiment, and the structured data the assistant's `custom_settings` ask for — one row
 * per call, written by the after-call job, read by the calls API, the export and the webhooks.
 */
import { sql } from 'drizzle-orm';
import { check, integer, jsonb, pgTable, real, text, timestamp } from 'drizzle-orm/pg-core';
import { oneOf } from './checks.js';
import { organizationColumn } from './identity.js';
import { calls } from './telephony.js';

/** `pending` until the job has run; `skipped` when there was nothing to analyse (no words said). */
export const ANALYSIS_STATUSES = ['pending', 'completed', 'failed', 'skipped'] as const;
export type AnalysisStatus = (typeof ANALYSIS_STATUSES)[number];
export const SENTIMENTS = ['positive', 'neutral', 'negative'] as const;
export type Sentiment = (typeof SENTIMENTS)[number];

export const callAnalyses = pgTable(
  'call_analyses',
  {
    callId: integer('call_id')
      .primaryKey()
      .references(() => calls.id, { onDelete: 'cascade' }),
    organizationId: organizationColumn(),
    status: text('status').$type<AnalysisStatus>().notNull().default('pending'),
    summary: text('summary'),
    sentiment: text('sentiment').$type<Sentiment>(),
    /** From -1 (very negative) to 1 (very positive). */
    sentimentScore: real('sentiment_score'),
    /** Valid against the assistant's `structured_data_schema` when `structured_data_error` is null. */
    structuredData: jsonb('structured_data').$type<unknown>(),
    structuredDataError: text('structured_data_error'),
    /** The language model that did the work (provider id), and why it failed if it did. */
    provider: text('provider'),
    error: text('error'),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
    completedAt: timestamp('completed_at', { withTimezone: true }),
  },
  (t) => [
    check('call_analyses_status_check', oneOf(t.status, ANALYSIS_STATUSES)),
    check('call_analyses_sentiment_check', sql`${t.sentiment} is null or ${oneOf(t.sentiment, SENTIMENTS)}`),
    check(
      'call_analyses_sentiment_score_check',
      sql`${t.sentimentScore} is null or ${t.sentimentScore} between -1 and 1`,
    ),
  ],
);
