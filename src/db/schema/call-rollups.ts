/**
 * Call analytics rollups (domains/calls, `analytics.ts` reads, `rollups.ts` writes): what the calls of
 * an organization added up to, per hour and per UTC day, per assistant and per number of ours. Each
 * counted fact is added to its hour row and its day row in the transaction that records it, so GET
 * /calls/analytics reads a few thousand rows instead of every call, turn and event. A call's figures
 * (its end, its turns, its tool uses and transfer) all go to the period of the call's `created_at`,
 * as the call listing's date filters do. Migration 0015 backfilled them from the calls before it.
 */
import { sql } from 'drizzle-orm';
import { bigint, check, integer, pgTable, primaryKey, smallint, text, timestamp } from 'drizzle-orm/pg-core';
import { money } from './columns.js';
import { organizationColumn } from './identity.js';

/** A rollup covers one UTC hour (1) or one UTC day (24). */
export const ROLLUP_SPANS = [1, 24] as const;
export type RollupSpan = (typeof ROLLUP_SPANS)[number];

/** The key of a rollup row besides the organization and the period. */
const rollupKey = {
  hours: smallint('hours').$type<RollupSpan>().notNull(),
  /** The start of the hour or of the UTC day. */
  periodStart: timestamp('period_start', { withTimezone: true }).notNull(),
  /** The call's assistant, 0 when it had none. Not a reference: a deleted assistant's history stays. */
  assistantId: integer('assistant_id').notNull(),
  /** Our number on the call (`calls.from_phone_number`: the caller when outbound, the callee inbound). */
  phoneNumber: text('phone_number').notNull(),
};

/**
 * A histogram (domains/calls/histogram.ts): the count of bucket b at subscript b + 1, stored from
 * the lowest counted bucket to the highest only (`[31:33]={1,0,2}`); other subscripts read NULL.
 */
const histogram = (name: string) => integer(name).array().notNull();

export const callRollups = pgTable(
  'call_rollups',
  {
    organizationId: organizationColumn(),
    ...rollupKey,
    /** Calls that reached a final status, by outcome (a completed call answered by a machine is `voicemail`). */
    calls: integer('calls').notNull().default(0),
    completed: integer('completed').notNull().default(0),
    voicemail: integer('voicemail').notNull().default(0),
    busy: integer('busy').notNull().default(0),
    noAnswer: integer('no_answer').notNull().default(0),
    failed: integer('failed').notNull().default(0),
    canceled: integer('canceled').notNull().default(0),
    inbound: integer('inbound').notNull().default(0),
    outbound: integer('outbound').notNull().default(0),
    /** Seconds of the answered calls (completed and voicemail), and their histogram. */
    durationSeconds: bigint('duration_seconds', { mode: 'number' }).notNull().default(0),
    durationSecondsHistogram: histogram('duration_seconds_histogram'),
    cost: money('cost').notNull().default(0),
    /** `call.transferred` events. */
    transfers: integer('transfers').notNull().default(0),
    /** Turns the runtime recorded (any kind), and those the caller interrupted. */
    turns: integer('turns').notNull().default(0),
    interruptedTurns: integer('interrupted_turns').notNull().default(0),
    /** Per-turn latencies of reply turns, in milliseconds. */
    endToEndMsHistogram: histogram('end_to_end_ms_histogram'),
    llmTtftMsHistogram: histogram('llm_ttft_ms_histogram'),
    ttsTtfbMsHistogram: histogram('tts_ttfb_ms_histogram'),
    sttDelayMsHistogram: histogram('stt_delay_ms_histogram'),
    platformMsHistogram: histogram('platform_ms_histogram'),
  },
  (t) => [
    primaryKey({
      name: 'call_rollups_pkey',
      columns: [t.organizationId, t.hours, t.periodStart, t.assistantId, t.phoneNumber],
    }),
    check('call_rollups_hours_check', sql`${t.hours} in (1, 24)`),
  ],
);

/** Uses of each tool (`call.tool` events), and how many failed (`data.ok` false). */
export const callToolRollups = pgTable(
  'call_tool_rollups',
  {
    organizationId: organizationColumn(),
    ...rollupKey,
    tool: text('tool').notNull(),
    uses: integer('uses').notNull().default(0),
    failures: integer('failures').notNull().default(0),
  },
  (t) => [
    primaryKey({
      name: 'call_tool_rollups_pkey',
      columns: [t.organizationId, t.hours, t.periodStart, t.assistantId, t.phoneNumber, t.tool],
    }),
    check('call_tool_rollups_hours_check', sql`${t.hours} in (1, 24)`),
  ],
);
