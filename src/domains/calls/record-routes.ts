/**
 * /api/v1/calls: the organization's call records — listing, search, export, one call, its
 * transcript and turns, hanging up, and deleting it (with its recording). `search` and `export` are
 * static paths, which the router always prefers to `/:call_id`, so neither is ever read as a call id.
 */
import type { Readable } from 'node:stream';
import { Type } from 'typebox';
import { access } from '../../http/access.js';
import { principalOf } from '../../http/auth.js';
import { SkipLimitQuery, skipLimitOf } from '../../http/pagination.js';
import { errors, noContent } from '../../http/responses.js';
import { Id, IdParam } from '../../http/schemas.js';
import type { App } from '../../http/types.js';
import { iso, Nullable, Timestamp } from '../../lib/schema.js';
import { AnalysisFields } from '../analysis/views.js';
import { EXPORT_FILES, type ExportFormat } from './export.js';
import type { CallRecords } from './records.js';
import type { CallFilter } from './store.js';
import { CallOut, CallStatusSchema, callView, recordingView, TurnOut, turnView } from './views.js';

const tags = ['calls'];
const SegmentOut = Type.Object(
  {
    speaker: Type.Union([Type.Literal('user'), Type.Literal('assistant')]),
    text: Type.String(),
    started_at: Timestamp,
    ended_at: Timestamp,
  },
  { title: 'TranscriptSegment' },
);

const Filters = {
  status: Type.Optional(CallStatusSchema),
  assistant_id: Type.Optional(Id),
  date_from: Type.Optional(Type.String({ format: 'date-time', description: 'Calls created at or after' })),
  date_to: Type.Optional(Type.String({ format: 'date-time', description: 'Calls created at or before' })),
};

function filterOf(query: {
  status?: CallFilter['status'];
  assistant_id?: number;
  date_from?: string;
  date_to?: string;
}): CallFilter {
  return {
    ...(query.status !== undefined ? { status: query.status } : {}),
    ...(query.assistant_id !== undefined ? { assistantId: query.assistant_id } : {}),
    ...(query.date_from !== undefined ? { dateFrom: new Date(query.date_from) } : {}),
    ...(query.date_to !== undefined ? { dateTo: new Date(query.date_to) } : {}),
  };
}

export function callRecordRoutes(app: App, records: CallRecords): void {
  app.get(
    '/api/v1/calls',
    {
      config: { access: access.area('calls') },
      schema: {
        tags,
        operationId: 'listCalls',
        summary: "The organization's calls, newest first (total in X-Total-Count)",
        querystring: Type.Object({
          ...SkipLimitQuery,
          ...Filters,
        }),
        response: { 200: Type.Array(CallOut) },
      },
    },
    async (request, reply) => {
      const { rows, total } = await records.list(
        principalOf(request),
        filterOf(request.query),
        skipLimitOf(request.query),
      );
      reply.header('X-Total-Count', total);
      return rows.map((row) => callView(row));
    },
  );

  app.get(
    '/api/v1/calls/search',
    {
      config: { access: access.area('calls') },
      schema: {
        tags,
        operationId: 'searchCalls',
        summary: 'Full-text search over assistant names, phone numbers (3+ digits, any part) and transcripts',
        description:
          'Words are stemmed (English) and may use web-search syntax: "a phrase", or, -word. A query of ' +
          'digits (with +, spaces, dashes or brackets) matches any part of a phone number. Best match first ' +
          'among the newest 1,000 matching calls; equal matches newest first.',
        querystring: Type.Object({
          q: Type.String({ minLength: 3, maxLength: 200 }),
          limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 200, default: 50 })),
        }),
        response: { 200: Type.Array(CallOut) },
      },
    },
    async (request) => {
      const rows = await records.search(principalOf(request), request.query.q, request.query.limit ?? 50);
      return rows.map((row) => callView(row));
    },
  );

  app.get(
    '/api/v1/calls/export',
    {
      config: { access: access.area('calls') },
      schema: {
        tags,
        operationId: 'exportCalls',
        summary: 'Download the calls as calls_export.csv or calls_export.json (streamed, oldest first)',
        querystring: Type.Object({
          format: Type.Optional(Type.String({ pattern: '^(csv|json)$', default: 'csv' })),
          ...Filters,
        }),
        response: {
          // A file download, streamed in the format asked for: the schemas document it; the stream
          // itself is not serialised.
          200: {
            description: 'calls_export.csv or calls_export.json (Content-Disposition: attachment)',
            content: {
              'text/csv': {
                // Both forms leave as a stream of the rows, read from a cursor in batches.
                schema: Type.Unsafe<Readable>({
                  type: 'string',
                  description:
                    'format=csv: a header row (Call ID, Call SID, Assistant Name, Customer Phone, Status, ' +
                    'Duration (seconds), Started At, Ended At, Summary, Sentiment, Sentiment Score, ' +
                    'Structured Data), then one row per call; the analysis cells are empty until it ' +
                    'completed, Structured Data is JSON text.',
                }),
              },
              'application/json': {
                schema: Type.Array(
                  Type.Object({
                    id: Type.Integer(),
                    call_sid: Nullable(Type.String()),
                    assistant_name: Nullable(Type.String()),
                    customer_phone_number: Type.String(),
                    status: CallStatusSchema,
                    duration: Nullable(Type.Integer({ description: 'Seconds' })),
                    started_at: Nullable(Timestamp),
                    ended_at: Nullable(Timestamp),
                    summary: AnalysisFields.summary,
                    sentiment: AnalysisFields.sentiment,
                    sentiment_score: AnalysisFields.sentiment_score,
                    structured_data: AnalysisFields.structured_data,
                  }),
                  { description: 'format=json: one object per call' },
                ),
              },
            },
          },
        },
      },
    },
    async (request, reply) => {
      const format = (request.query.format ?? 'csv') as ExportFormat;
      const file = await records.export(principalOf(request), format, filterOf(request.query));
      const { contentType, fileName } = EXPORT_FILES[format];
      reply
        .header('Content-Type', contentType)
        .header('Content-Disposition', `attachment; filename="${fileName}"`)
        .header('Cache-Control', 'no-store');
      return reply.send(file);
    },
  );

  app.get(
    '/api/v1/calls/:call_id',
    {
      config: { access: access.area('calls') },
      schema: {
        tags,
        operationId: 'getCall',
        summary: 'One call, with its after-call analysis',
        description:
          '`analysis` is what GET /api/v1/calls/{call_id}/analysis answers, or null until the call has ' +
          'ended; listings and searches leave it out.',
        params: IdParam('call_id'),
        response: { 200: CallOut, ...errors({ 404: 'Call not found in your organization' }) },
      },
    },
    async (request) => {
      const { call, analysis, recording } = await records.getWithAnalysis(
        principalOf(request),
        request.params.call_id,
      );
      return { ...callView(call, analysis), recording: recordingView(recording) };
    },
  );

  app.delete(
    '/api/v1/calls/:call_id',
    {
      config: { access: { role: 'admin', area: 'calls' } },
      schema: {
        tags,
        operationId: 'deleteCall',
        summary: 'Delete a call that has ended, with its transcript, turns, events and recording',
        description:
          'For admins (an API key needs calls read_write). The recording’s audio is deleted with the call. ' +
          '409 while the call is still under way (not in a final status).',
        params: IdParam('call_id'),
        response: {
          204: Type.Null(),
          ...errors({ 404: 'Call not found in your organization', 409: 'The call has not ended yet' }),
        },
      },
    },
    async (request, reply) => {
      await records.delete(principalOf(request), request.params.call_id);
      return noContent(reply);
    },
  );

  app.get(
    '/api/v1/calls/:call_id/transcript',
    {
      config: { access: access.area('calls') },
      schema: {
        tags,
        operationId: 'getCallTranscript',
        summary: "The call's transcript: segments in spoken order",
        params: IdParam('call_id'),
        response: { 200: Type.Array(SegmentOut), ...errors({ 404: 'Call not found in your organization' }) },
      },
    },
    async (request) => {
      const segments = await records.transcript(principalOf(request), request.params.call_id);
      return segments.map((segment) => ({
        speaker: segment.speaker,
        text: segment.text,
        started_at: iso(segment.startedAt),
        ended_at: iso(segment.endedAt),
      }));
    },
  );

  app.get(
    '/api/v1/calls/:call_id/turns',
    {
      config: { access: access.area('calls') },
      schema: {
        tags,
        operationId: 'getCallTurns',
        summary: "The call's turns in order: what was said and how long each stage took",
        description:
          'One entry per turn the live call runtime finished: the greeting (position 0), each answer to ' +
          'the caller, idle prompts and the goodbye, with the latency figures of the turn in milliseconds ' +
          '(null where the turn had no such stage) and the raw moments they derive from. A call still ' +
          'under way shows the turns finished so far.',
        params: IdParam('call_id'),
        response: { 200: Type.Array(TurnOut), ...errors({ 404: 'Call not found in your organization' }) },
      },
    },
    async (request) => {
      const turns = await records.turns(principalOf(request), request.params.call_id);
      return turns.map(turnView);
    },
  );

  app.post(
    '/api/v1/calls/:call_id/end',
    {
      config: { access: access.area('calls', 'read_write') },
      schema: {
        tags,
        operationId: 'endCall',
        summary: "Ask the call's carrier to hang up",
        description:
          'The status changes when the carrier reports the end (a web call: its browser is told `ended` and ' +
          'the call completes). 409 when the call has ended or has not reached the carrier yet (a web call: ' +
          'no browser connected to this server); 502 when the carrier refuses.',
        params: IdParam('call_id'),
        response: {
          200: Type.Object({ message: Type.String(), call: CallOut }),
          ...errors({
            404: 'Call not found in your organization',
            409: 'The call has ended, has not reached the carrier yet, or has no carrier credentials',
            502: 'The carrier refused to hang up or could not be reached',
          }),
        },
      },
    },
    async (request) => ({
      message: 'Hang-up requested',
      call: callView(await records.end(principalOf(request), request.params.call_id)),
    }),
  );
}
