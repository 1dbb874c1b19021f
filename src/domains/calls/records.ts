/**
 * Call records as the API shows them: listing, one call, its transcript and turns, hanging up a live
 * call, full-text search and the streamed export. Placing calls and applying carrier statuses stay in
 * `service.ts`; this is what users do with the records afterwards.
 */
import { pipeline, Readable } from 'node:stream';
import type { Database, Db } from '../../db/client.js';
import { FINAL_CALL_STATUSES, TURN_KINDS } from '../../db/schema/telephony.js';
import type { Tenant } from '../../db/tenant.js';
import { type Carriers, isTelephonyProvider } from '../../providers/carriers/index.js';
import { ProviderError } from '../../providers/errors.js';
import type { TurnRecord } from '../../voice/turn-metrics.js';
import { type AnalysisRow, findAnalysis } from '../analysis/reads.js';
import { conflict, invalidField, notFound, upstreamFailed } from '../errors.js';
import type { Principal } from '../identity/principal.js';
import type { ConfigResolver } from '../runtime/resolve-config.js';
import { csvChunks, type ExportFormat, jsonChunks } from './export.js';
import { CSV_COPY_SETUP, crlfRecords, csvCopyStatement } from './export-copy.js';
import { WEB_PROVIDER, type WebCallStreamsEnd } from './live.js';
import { searchCalls } from './search.js';
import { MIN_QUERY_LENGTH, readSearchQuery } from './search-terms.js';
import * as store from './store.js';
import { appendTranscriptSegments, type NewTranscriptSegment, transcriptOf } from './transcripts.js';
import { type CallTurnRow, insertTurn, turnsOf } from './turns.js';

/** Rows per cursor fetch in an export: large enough to be fast, small enough to stay flat. */
const EXPORT_BATCH_ROWS = 1000;
/** The longest transcript segment stored, in characters. */
export const MAX_SEGMENT_TEXT = 10_000;
/** The longest provider id a turn names. */
const MAX_PROVIDER_ID = 100;
/** The largest value of an integer column: turn positions and milliseconds (about 24 days). */
const MAX_INT32 = 2_147_483_647;

/** What the calls domain asks of recordings (domains/recordings): their summary, and their bytes gone. */
export interface CallRecordingPort {
  summary(tenant: Tenant, callId: number): Promise<CallRecordingSummary | null>;
  deleteFor(tenant: Tenant, callId: number): Promise<void>;
}

export interface CallRecordingSummary {
  status: 'recording' | 'completed' | 'failed';
  durationMs: number | null;
  bytes: number | null;
  url: string;
}

export class CallRecords {
  constructor(
    private readonly deps: {
      db: Db;
      database: Database;
      carriers: Carriers;
      resolver: ConfigResolver;
      /** Without it calls have no recordings to show or delete. */
      recordings?: CallRecordingPort;
      /** Web calls' streams in this process: a web call is hung up by closing its browser's stream. */
      webCalls?: WebCallStreamsEnd;
    },
  ) {}

  list(principal: Principal, filter: store.CallFilter, page: { skip: number; limit: number }) {
    checkDateRange(filter);
    return store.listCalls(this.deps.db, principal.tenant, filter, page);
  }

  async get(principal: Principal, callId: number): Promise<store.CallRow> {
    const call = await store.findCall(this.deps.db, principal.tenant, callId);
    if (!call) throw notFound('Call not found');
    return call;
  }

  /**
   * One call with its after-call analysis (null until the call has ended) and its recording's summary
   * (null when it has none), for GET /calls/{id}.
   */
  async getWithAnalysis(
    principal: Principal,
    callId: number,
  ): Promise<{
    call: store.CallRow;
    analysis: AnalysisRow | null;
    recording: CallRecordingSummary | null;
  }> {
    const call = await this.get(principal, callId);
    const analysis = await findAnalysis(this.deps.db, principal.tenant, callId);
    const recording = (await this.deps.recordings?.summary(principal.tenant, callId)) ?? null;
    return { call, analysis: analysis ?? null, recording };
  }

  /**
   * Deletes a call that has ended, with everything recorded of it: transcript, turns, events,
   * analysis, and its recording — the bytes first, so none are left behind a call that is gone.
   */
  async delete(principal: Principal, callId: number): Promise<void> {
    const call = await this.get(principal, callId);
    if (!FINAL_CALL_STATUSES.includes(call.status))
      throw conflict(`The call is still ${call.status}: end it first, or wait until it has ended`);
    await this.deps.recordings?.deleteFor(principal.tenant, callId);
    if (!(await store.deleteCall(this.deps.db, principal.tenant, callId))) throw notFound('Call not found');
  }

  async transcript(principal: Principal, callId: number) {
    await this.get(principal, callId);
    return transcriptOf(this.deps.db, principal.tenant, callId);
  }

  /** The call's turns in order: what was said and how long each stage took. */
  async turns(principal: Principal, callId: number): Promise<CallTurnRow[]> {
    await this.get(principal, callId);
    return turnsOf(this.deps.db, principal.tenant, callId);
  }

  /** What happened during the call, in order (tool calls, vendor switches, interruptions, keys…). */
  async events(
    principal: Principal,
    callId: number,
    options: { type?: string; skip: number; limit: number },
  ): Promise<store.CallEventRow[]> {
    await this.get(principal, callId);
    return store.eventsOf(this.deps.db, principal.tenant, callId, options);
  }

  /**
   * Asks the call's carrier to hang up. The record changes when the carrier reports the end (its
   * status callback), exactly as for a call the customer ended.
   */
  async end(principal: Principal, callId: number): Promise<store.CallRow> {
    const { tenant } = principal;
    const call = await this.get(principal, callId);
    if (FINAL_CALL_STATUSES.includes(call.status))
      throw conflict(`The call has already ended (${call.status})`);
    if (call.provider === WEB_PROVIDER) {
      if (!this.deps.webCalls?.end(callId, 'hung_up'))
        throw conflict("The web call's browser is not connected to this server");
      await store.insertCallEvent(this.deps.db, tenant, callId, 'call.end_requested', {
        by_user_id: principal.user.id,
      });
      return call;
    }
    if (!call.callSid || !isTelephonyProvider(call.provider))
      throw conflict('The call has not reached the carrier yet; try again in a moment');
    const { credentials } = await this.deps.resolver.telephonyCredentials(tenant, {
      provider: call.provider,
      assistantId: call.assistantId,
    });
    if (!credentials) throw conflict(`No ${call.provider} credentials to reach the carrier with`);
    try {
      await this.deps.carriers[call.provider].hangUp(credentials, call.callSid);
    } catch (error) {
      if (!(error instanceof ProviderError)) throw error;
      throw upstreamFailed(`The carrier did not end the call: ${error.message}`);
    }
    await store.insertCallEvent(this.deps.db, tenant, callId, 'call.end_requested', {
      by_user_id: principal.user.id,
    });
    return call;
  }

  /** The organization's calls best matching `q` (at least 3 characters besides spaces). */
  async search(principal: Principal, q: string, limit: number): Promise<store.CallRow[]> {
    if (q.trim().length < MIN_QUERY_LENGTH)
      throw invalidField(['query', 'q'], 'String should have at least 3 characters', 'string_too_short');
    const matches = await searchCalls(this.deps.db, principal.tenant, readSearchQuery(q), limit);
    const rows = await store.callsByIds(
      this.deps.db,
      principal.tenant,
      matches.map((match) => match.callId),
    );
    const byId = new Map(rows.map((row) => [row.id, row]));
    return matches.flatMap((match) => byId.get(match.callId) ?? []);
  }

  /**
   * The export file as a stream. On a server the CSV file is PostgreSQL's own COPY output (see
   * export-copy.ts); otherwise, and for JSON, rows come from a database cursor a batch at a time.
   * Either way the statement has started and its first bytes arrived before this resolves, so a
   * failing query still answers an error status rather than a truncated file.
   */
  async export(principal: Principal, format: ExportFormat, filter: store.CallFilter): Promise<Readable> {
    checkDateRange(filter);
    const { database } = this.deps;
    if (format === 'csv' && database.copyOut) {
      const copied = await database.copyOut(csvCopyStatement(principal.tenant, filter), CSV_COPY_SETUP);
      // A reader that goes away destroys the last stream; pipeline passes that on to the COPY.
      return pipeline(copied, crlfRecords(), () => {});
    }
    const query = store.exportQuery(principal.tenant, filter);
    const cursor = database.cursor(query, EXPORT_BATCH_ROWS);
    const first = await cursor.next();
    async function* batches() {
      if (first.done) return;
      yield first.value;
      yield* cursor;
    }
    const chunks = format === 'json' ? jsonChunks(batches()) : csvChunks(batches());
    return Readable.from(chunks, { objectMode: false });
  }

  /**
   * Appends what was said to a call's transcript — the store function the live call runtime calls
   * as utterances finish. Undefined when the call is not the organization's.
   */
  async appendTranscript(tenant: Tenant, callId: number, segments: readonly NewTranscriptSegment[]) {
    for (const [index, segment] of segments.entries()) {
      if (segment.text.length > MAX_SEGMENT_TEXT)
        throw invalidField(['segments', index, 'text'], `At most ${MAX_SEGMENT_TEXT} characters`);
      if (segment.endedAt < segment.startedAt)
        throw invalidField(['segments', index, 'ended_at'], 'Ends before it starts');
    }
    return appendTranscriptSegments(this.deps.db, tenant, callId, segments);
  }

  /**
   * Stores a finished turn of a call — the store function the live call runtime calls at the end of
   * each turn. A turn written again at its position replaces the first write. Undefined when the call
   * is not the organization's.
   */
  async recordTurn(tenant: Tenant, callId: number, turn: TurnRecord): Promise<CallTurnRow | undefined> {
    checkTurn(turn);
    return insertTurn(this.deps.db, tenant, callId, turn);
  }
}

/** What the database would refuse, or should not hold, refused first with the field it concerns. */
function checkTurn(turn: TurnRecord): void {
  if (!Number.isInteger(turn.position) || turn.position < 0 || turn.position > MAX_INT32)
    throw invalidField(['turn', 'position'], 'A whole number from 0');
  if (!TURN_KINDS.includes(turn.kind))
    throw invalidField(['turn', 'kind'], `One of ${TURN_KINDS.join(', ')}`);
  if (Number.isNaN(turn.startedAt.getTime())) throw invalidField(['turn', 'started_at'], 'Not a date');
  for (const [field, text] of [
    ['user_text', turn.userText],
    ['assistant_text', turn.assistantText],
  ] as const) {
    if (text.length > MAX_SEGMENT_TEXT)
      throw invalidField(['turn', field], `At most ${MAX_SEGMENT_TEXT} characters`);
  }
  if (turn.llmProvider !== null && turn.llmProvider.length > MAX_PROVIDER_ID)
    throw invalidField(['turn', 'llm_provider'], `At most ${MAX_PROVIDER_ID} characters`);
  for (const [name, ms] of Object.entries(turn.measurements)) {
    if (ms !== null && !(Number.isFinite(ms) && ms >= 0 && ms <= MAX_INT32))
      throw invalidField(['turn', 'measurements', name], 'Milliseconds from 0 to 2147483647');
  }
  for (const [name, at] of Object.entries(turn.marks)) {
    if (at !== undefined && !Number.isFinite(at))
      throw invalidField(['turn', 'marks', name], 'Milliseconds since the session started');
  }
}

function checkDateRange(filter: store.CallFilter): void {
  if (filter.dateFrom && filter.dateTo && filter.dateFrom > filter.dateTo)
    throw invalidField(['query', 'date_to'], 'date_to is before date_from');
}
