/**
 * Call recordings (domains/recordings): one per call, both sides in one file kept by the storage
 * interface (`src/storage/`: files under DATA_DIR, or an S3-compatible bucket). The row says where
 * the bytes are and what they are; the bytes themselves never sit in the database.
 */
import { sql } from 'drizzle-orm';
import { bigint, check, integer, pgTable, text, timestamp, uniqueIndex } from 'drizzle-orm/pg-core';
import { oneOf } from './checks.js';
import { organizationColumn } from './identity.js';
import { calls } from './telephony.js';

/** `recording` while the call runs, `completed` once stored whole, `failed` when it could not be. */
export const RECORDING_STATUSES = ['recording', 'completed', 'failed'] as const;
export type RecordingStatus = (typeof RECORDING_STATUSES)[number];

export const callRecordings = pgTable(
  'call_recordings',
  {
    id: integer('id').primaryKey().generatedAlwaysAsIdentity(),
    organizationId: organizationColumn(),
    callId: integer('call_id')
      .notNull()
      .references(() => calls.id, { onDelete: 'cascade' }),
    status: text('status').$type<RecordingStatus>().notNull().default('recording'),
    /** Where the storage keeps the bytes (a key, never a URL or a path outside its root). */
    storageKey: text('storage_key').notNull(),
    contentType: text('content_type').notNull().default('audio/wav'),
    channels: integer('channels').notNull(),
    sampleRate: integer('sample_rate').notNull(),
    bytes: bigint('bytes', { mode: 'number' }),
    durationMs: integer('duration_ms'),
    error: text('error'),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
    completedAt: timestamp('completed_at', { withTimezone: true }),
  },
  (t) => [
    uniqueIndex('call_recordings_call_key').on(t.callId),
    check('call_recordings_status_check', oneOf(t.status, RECORDING_STATUSES)),
    check('call_recordings_channels_check', sql`${t.channels} in (1, 2)`),
  ],
);
