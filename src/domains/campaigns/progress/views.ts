/**
 * The JSON of a campaign execution and of a campaign's progress (platform-api.md "Campaign
 * execution", "Campaign progress"). The progress view is also what the live WebSocket sends, so the
 * polling route and the socket can never disagree.
 */
import { Type } from 'typebox';
import { iso, Nullable, NullableTimestamp, Timestamp } from '../../../lib/schema.js';
import { CampaignStatus } from '../views.js';
import type { ExecutionRow, ProgressRow } from './store.js';

// The same values as EXECUTION_STATUSES (db/schema/campaigns.ts), as literals TypeBox can type.
const ExecutionStatus = Type.Union([
  Type.Literal('pending'),
  Type.Literal('in_progress'),
  Type.Literal('completed'),
  Type.Literal('failed'),
  Type.Literal('no_answer'),
  Type.Literal('busy'),
  Type.Literal('voicemail'),
  Type.Literal('skipped'),
]);

export const ExecutionOut = Type.Object(
  {
    id: Type.Integer(),
    execution_id: Type.Integer({ description: 'The same as id' }),
    contact_id: Type.Integer(),
    contact_name: Nullable(Type.String()),
    contact_phone: Nullable(Type.String()),
    status: ExecutionStatus,
    call_id: Nullable(Type.String({ description: "The call record's id, as a string; null for SMS" })),
    sms_id: Nullable(Type.String()),
    executed_at: NullableTimestamp,
    execution_data: Type.Object(
      {},
      {
        additionalProperties: true,
        description:
          'from_number, to_number, personalized_welcome_message, personalized_agenda (when set), ' +
          'template_variables_used, duration_seconds (the call’s own when it has one), error_details ' +
          '(when failed), retry_reason, voice_analytics, call_sid, personalized_sms',
      },
    ),
    attempt_number: Type.Integer({ description: '1 for the first attempt at the contact' }),
    channel: Type.Union([Type.Literal('call'), Type.Literal('sms')]),
    occurrence: Type.Integer({ description: 'The run of a recurring campaign (0 for the first)' }),
    finished_at: NullableTimestamp,
    cost: Nullable(Type.Number()),
  },
  { title: 'CampaignExecution' },
);

export function executionView(row: ExecutionRow) {
  return {
    id: row.id,
    execution_id: row.id,
    contact_id: row.contactId,
    contact_name: row.contactName,
    contact_phone: row.contactPhone,
    status: row.status,
    call_id: row.callId === null ? null : String(row.callId),
    sms_id: row.smsId,
    executed_at: iso(row.executedAt),
    // The carrier's figure is the truth once the call has one; until then the executor's.
    execution_data:
      row.callDuration === null
        ? row.executionData
        : { ...row.executionData, duration_seconds: row.callDuration },
    attempt_number: row.attemptNumber,
    channel: row.channel,
    occurrence: row.occurrence,
    finished_at: iso(row.finishedAt),
    cost: row.cost,
  };
}

const count = (description: string) => Type.Integer({ minimum: 0, description });
const percent = (description: string) => Type.Number({ minimum: 0, maximum: 100, description });

export const ProgressOut = Type.Object(
  {
    campaign_id: Type.Integer(),
    status: CampaignStatus,
    progress: Type.Object({
      total_contacts: count('Every contact, skipped ones included'),
      completed: count('Contacts completed'),
      failed: count('Contacts failed'),
      processing: count('Contacts in progress'),
      pending: count('Contacts waiting for an attempt'),
      progress_percentage: percent('100 × (completed + failed + skipped) / total_contacts'),
      success_rate: percent('100 × completed / (completed + failed)'),
    }),
    metrics: Type.Object({
      total_duration_seconds: Type.Number(),
      average_duration_seconds: Type.Number(),
      success_rate: percent('As in the campaign metrics'),
      answer_rate: percent('As in the campaign metrics'),
      completion_rate: percent('100 × completed / total_contacts'),
      cost_estimate: Type.Number({
        description: 'actual_cost + (pending + processing) × the mean cost of a finished contact',
      }),
      actual_cost: Type.Number(),
      last_updated: Timestamp,
    }),
    started_at: NullableTimestamp,
    completed_at: NullableTimestamp,
    recent_activity: Type.Array(
      Type.Object({
        execution_id: Type.Integer(),
        contact_phone: Nullable(Type.String()),
        status: ExecutionStatus,
        executed_at: NullableTimestamp,
        call_id: Nullable(Type.String()),
      }),
      { description: 'The 10 latest executions, most recent first' },
    ),
  },
  { title: 'CampaignProgress' },
);

export type ProgressView = ReturnType<typeof progressView>;

export function progressView(row: ProgressRow) {
  const { contacts, metrics } = row;
  return {
    campaign_id: row.campaignId,
    status: row.status,
    progress: {
      total_contacts: contacts.total,
      completed: contacts.completed,
      failed: contacts.failed,
      processing: contacts.processing,
      pending: contacts.pending,
      progress_percentage: contacts.progressPercentage,
      success_rate: metrics.successRate,
    },
    metrics: {
      total_duration_seconds: metrics.totalDurationSeconds,
      average_duration_seconds: metrics.averageDurationSeconds,
      success_rate: metrics.successRate,
      answer_rate: metrics.answerRate,
      completion_rate: contacts.completionRate,
      cost_estimate: row.costEstimate,
      actual_cost: metrics.actualCost,
      last_updated: iso(row.lastUpdated),
    },
    started_at: iso(row.startedAt),
    completed_at: iso(row.completedAt),
    recent_activity: row.recentActivity.map((a) => ({
      execution_id: a.executionId,
      contact_phone: a.contactPhone,
      status: a.status,
      executed_at: iso(a.executedAt),
      call_id: a.callId === null ? null : String(a.callId),
    })),
  };
}
