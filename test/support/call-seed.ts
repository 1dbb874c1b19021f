/**
 * Call records for the call listing, search and export tests and the `calls` benchmark. One call at
 * a time goes through the real store functions (the record, its search document, its transcript);
 * many at once are written by one SQL statement each, with the same lexemes the store writes —
 * a test or benchmark needing 200,000 or 1,000,000 calls cannot insert them one by one.
 */
import { sql } from 'drizzle-orm';
import type { Database } from '../../src/db/client.js';
import { calls, type TranscriptSpeaker } from '../../src/db/schema/index.js';
import { Tenant } from '../../src/db/tenant.js';
import { type CallRow, insertCall, type NewCall } from '../../src/domains/calls/store.js';
import { appendTranscriptSegments } from '../../src/domains/calls/transcripts.js';

export interface SeededCall {
  assistantId?: number | null;
  status?: CallRow['status'];
  direction?: 'inbound' | 'outbound';
  from?: string;
  to?: string;
  customer?: string;
  callSid?: string | null;
  duration?: number | null;
  startedAt?: Date | null;
  endedAt?: Date | null;
  createdAt?: Date;
  callMeta?: Record<string, unknown>;
  /** What was said, in order; each segment lasts 2 s from `startedAt` (or now). */
  transcript?: Array<[TranscriptSpeaker, string]>;
}

let serial = 0;

/** One call of `organizationId`, written by the store functions the platform itself uses. */
export async function seedCall(database: Database, organizationId: number, call: SeededCall = {}) {
  serial += 1;
  const tenant = new Tenant(organizationId);
  const direction = call.direction ?? 'outbound';
  const ours = call.from ?? '+14155550100';
  const customer = call.customer ?? call.to ?? `+1212555${String(serial % 10_000).padStart(4, '0')}`;
  const values: NewCall = {
    assistantId: call.assistantId ?? null,
    provider: 'carrier_a',
    callSid: call.callSid === undefined ? `CAseed${process.pid}x${serial}` : call.callSid,
    direction,
    fromPhoneNumber: direction === 'outbound' ? ours : customer,
    toPhoneNumber: direction === 'outbound' ? customer : ours,
    customerPhoneNumber: customer,
    status: call.status ?? 'completed',
    callMeta: call.callMeta ?? {},
    duration: call.duration === undefined ? 30 : call.duration,
    startedAt: call.startedAt === undefined ? new Date() : call.startedAt,
    endedAt: call.endedAt === undefined ? new Date() : call.endedAt,
  };
  let row: CallRow | undefined = await insertCall(database.db, tenant, values);
  if (call.createdAt) {
    [row] = await database.db
      .update(calls)
      .set({ createdAt: call.createdAt })
      .where(sql`${calls.id} = ${row.id}`)
      .returning();
  }
  if (call.transcript) {
    const start = (values.startedAt ?? new Date()).getTime();
    await appendTranscriptSegments(
      database.db,
      tenant,
      row!.id,
      call.transcript.map(([speaker, text], index) => ({
        speaker,
        text,
        startedAt: new Date(start + index * 2000),
        endedAt: new Date(start + index * 2000 + 1900),
      })),
    );
  }
  return row!;
}

/** Sentences the bulk transcripts are made of (so searches have common and rare words to find). */
export const BULK_SENTENCES = [
  'Hello, thanks for calling, how can I help you today?',
  'I would like to book an appointment for next Tuesday.',
  'Can you check the status of my order please?',
  'Your invoice was sent to the email on file.',
  'I need a refund for the damaged package.',
  'Let me transfer you to our billing department.',
  'The technician will arrive between nine and eleven.',
  'Could you confirm your date of birth for verification?',
  'We have rescheduled your delivery to Friday afternoon.',
  'Is there anything else I can help you with?',
  'My internet connection keeps dropping every evening.',
  'I want to cancel my subscription at the end of the month.',
  'The warranty covers parts and labour for two years.',
  'Please hold while I look up your account.',
  'Thank you, have a wonderful day.',
  'Our pharmacy closes at eight on weekdays.',
  'The quarterly statement shows an unexpected surcharge.',
  'Your reservation for four guests is confirmed.',
  'I am calling about the apartment listing downtown.',
  'The kangaroo exhibit reopens after the renovation.',
];

export interface BulkCalls {
  organizationId: number;
  /** Assistants the calls are spread over, in turn. */
  assistantIds: number[];
  count: number;
  /** Transcript segments per call (0: none), drawn from BULK_SENTENCES. */
  segmentsPerCall?: number;
  /**
   * With transcripts: one more segment per call naming a reference code `zx<g mod referenceCodes>`,
   * so each code is said on count / referenceCodes calls (a selective word, like a name or an order
   * number; the sentences' words are each said on about a fifth of the calls).
   */
  referenceCodes?: number;
  /** Status of every call; default: the eight statuses in turn. */
  status?: CallRow['status'];
  /** Prefix of the carrier call ids, to keep several bulks apart. */
  tag?: string;
  /** Write the search documents too (default); an export-only test can skip them. */
  searchDocuments?: boolean;
}

/**
 * `count` calls with their search documents (and transcripts), by SQL. Call `g` (1…count) goes to
 * `+1 646 <g as 7 digits>`, was created `g` seconds before now, and — with transcripts — says
 * sentences `(g·7 + p·3) mod 20` for p = 1…segmentsPerCall (then its reference code, if asked).
 */
export async function seedBulkCalls(database: Database, bulk: BulkCalls): Promise<void> {
  const sentencesPerCall = bulk.segmentsPerCall ?? 0;
  const codes = sentencesPerCall > 0 ? (bulk.referenceCodes ?? 0) : 0;
  const segments = sentencesPerCall + (codes > 0 ? 1 : 0);
  const tag = bulk.tag ?? `bulk${serial++}`;
  const assistants = `{${bulk.assistantIds.join(',')}}`;
  const sentences = `{${BULK_SENTENCES.map((s) => `"${s}"`).join(',')}}`;
  const statusSql = bulk.status
    ? `'${bulk.status}'`
    : `(array['queued','ringing','in-progress','completed','busy','no-answer','failed','canceled'])[1 + g % 8]`;
  await database.executeSql(
    `insert into calls (organization_id, assistant_id, provider, call_sid, direction, from_phone_number,
       to_phone_number, customer_phone_number, status, duration, started_at, ended_at, created_at, updated_at)
     select $1, ($2::int[])[1 + g % greatest(1, cardinality($2::int[]))], 'carrier_a', $3 || '-' || g, 'outbound', '+14155550100',
       '+1646' || lpad(g::text, 7, '0'), '+1646' || lpad(g::text, 7, '0'), ${statusSql},
       g % 600, now() - g * interval '1 second' - interval '10 minutes', now() - g * interval '1 second',
       now() - g * interval '1 second', now() - g * interval '1 second'
     from generate_series(1, $4::int) g`,
    [bulk.organizationId, assistants, tag, bulk.count],
  );
  // The sentence of segment p of call g, as one SQL expression used for segments and documents alike.
  const sentence = `case when p > ${sentencesPerCall} then 'My reference code is zx' || (g % ${Math.max(1, codes)})
    else ($1::text[])[1 + (g * 7 + p * 3) % cardinality($1::text[])] end`;
  const fromTag = `(substr(c.call_sid, length($2) + 2))::int`;
  if (segments > 0) {
    await database.executeSql(
      `insert into call_transcript_segments (organization_id, call_id, position, speaker, text, started_at, ended_at)
       select c.organization_id, c.id, p, case when p % 2 = 1 then 'assistant' else 'user' end, ${sentence},
         c.started_at + (p - 1) * interval '5 seconds', c.started_at + (p - 1) * interval '5 seconds' + interval '4 seconds'
       from calls c cross join lateral (select ${fromTag} as g) n cross join generate_series(1, $3::int) p
       where c.call_sid like $2 || '-%' and c.provider = 'carrier_a'`,
      [sentences, tag, segments],
    );
  }
  if (bulk.searchDocuments === false) return;
  // Phone lexemes: every digit suffix of 3+ digits of the three numbers (as search-terms.ts writes).
  await database.executeSql(
    `insert into call_search_documents (call_id, organization_id, assistant_id, document)
     select c.id, c.organization_id, c.assistant_id,
       setweight(array_to_tsvector(array(
         select distinct substr(d, i)
         from unnest(array[regexp_replace(c.from_phone_number, '\\D', '', 'g'),
                           regexp_replace(c.customer_phone_number, '\\D', '', 'g')]) as d,
              generate_series(1, length(d) - 2) as i)), 'A')
       || case when $3::int = 0 then ''::tsvector else setweight(to_tsvector('english', (
            select string_agg(${sentence}, E'\\n' order by p) from generate_series(1, $3::int) p)), 'C') end
     from calls c cross join lateral (select ${fromTag} as g) n
     where c.call_sid like $2 || '-%' and c.provider = 'carrier_a'`,
    [sentences, tag, segments],
  );
}
