/**
 * The JSON of a call's analysis: the API's answer (GET /api/v1/calls/{id}/analysis, and `analysis`
 * on one call), and the `data` of the `call.analyzed` webhook.
 */
import { Type } from 'typebox';
import { ANALYSIS_STATUSES, SENTIMENTS } from '../../db/schema/index.js';
import { iso, literalUnion, Nullable, Timestamp } from '../../lib/schema.js';
import type { CallRow } from '../calls/reads.js';
import type { AnalysisRow } from './store.js';

const StructuredData = Type.Unknown({
  description:
    'What the assistant’s `custom_settings.structured_data_prompt` / `structured_data_schema` asked ' +
    'for, as the model answered it (its text, when it answered no JSON); null when nothing was asked',
});

export const AnalysisFields = {
  summary: Nullable(Type.String({ description: 'Two or three sentences on the call' })),
  sentiment: Nullable(literalUnion(SENTIMENTS, { description: 'The caller’s overall mood' })),
  sentiment_score: Nullable(Type.Number({ minimum: -1, maximum: 1, description: '-1 (very negative) to 1' })),
  structured_data: StructuredData,
  structured_data_valid: Nullable(
    Type.Boolean({
      description:
        'Whether `structured_data` is valid against the assistant’s `structured_data_schema`; null when ' +
        'no structured data was asked for',
    }),
  ),
  structured_data_error: Nullable(Type.String({ description: 'Why `structured_data` is not valid' })),
};

export const AnalysisOut = Type.Object(
  {
    call_id: Type.Integer(),
    status: literalUnion(ANALYSIS_STATUSES, {
      description:
        '`pending` until the after-call job has run (a few seconds after the call ends); `skipped` when ' +
        'there was no conversation (`error` says why); `failed` when the model could not do it',
    }),
    ...AnalysisFields,
    provider: Nullable(Type.String({ description: 'The language model that did the analysis' })),
    error: Nullable(Type.String({ description: 'Why it failed or was skipped' })),
    created_at: Timestamp,
    completed_at: Nullable(Timestamp),
  },
  { title: 'CallAnalysis' },
);

function structuredValidity(row: AnalysisRow): boolean | null {
  if (row.status !== 'completed') return null;
  if (row.structuredData === null && row.structuredDataError === null) return null;
  return row.structuredDataError === null;
}

export function analysisView(row: AnalysisRow) {
  return {
    call_id: row.callId,
    status: row.status,
    summary: row.summary,
    sentiment: row.sentiment,
    sentiment_score: row.sentimentScore,
    structured_data: row.structuredData ?? null,
    structured_data_valid: structuredValidity(row),
    structured_data_error: row.structuredDataError,
    provider: row.provider,
    error: row.error,
    created_at: iso(row.createdAt),
    completed_at: iso(row.completedAt),
  };
}

/** The `call.analyzed` webhook's data: the call it is about, and what was found. */
export function analysisEventData(row: AnalysisRow, call: CallRow): Record<string, unknown> {
  return {
    call_id: call.id,
    call_sid: call.callSid,
    assistant_id: call.assistantId,
    campaign_id: call.campaignId,
    summary: row.summary,
    sentiment: row.sentiment,
    sentiment_score: row.sentimentScore,
    structured_data: row.structuredData ?? null,
    structured_data_valid: structuredValidity(row),
    structured_data_error: row.structuredDataError,
    provider: row.provider,
    completed_at: iso(row.completedAt),
  };
}
