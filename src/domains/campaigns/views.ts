/** The JSON of a campaign (platform-api.md "Campaign"): every field, its counters and its metrics. */
import { Type } from 'typebox';
import { iso, Nullable, NullableTimestamp, Timestamp } from '../../lib/schema.js';
import type { CampaignMetrics, CampaignRow } from './store.js';

// The same values as CAMPAIGN_STATUSES and CAMPAIGN_TYPES (db/schema/campaigns.ts), as literals TypeBox can type.
export const CampaignStatus = Type.Union([
  Type.Literal('draft'),
  Type.Literal('scheduled'),
  Type.Literal('running'),
  Type.Literal('paused'),
  Type.Literal('completed'),
  Type.Literal('cancelled'),
  Type.Literal('failed'),
]);
export const CampaignType = Type.Union([Type.Literal('call'), Type.Literal('sms'), Type.Literal('mixed')]);

const percent = (description: string) => Type.Number({ minimum: 0, maximum: 100, description });

export const MetricsOut = Type.Object(
  {
    success_rate: percent('100 × completed / (completed + failed) contacts; 0 when both are 0'),
    answer_rate: percent(
      '100 × answered call attempts / call attempts with an outcome; 0 when there is none',
    ),
    average_duration_seconds: Type.Number({ description: 'Mean duration of the call attempts that lasted' }),
    total_duration_seconds: Type.Number({ description: 'Duration of every call attempt, summed' }),
    actual_cost: Type.Number({ description: 'What the attempts cost, at most 4 decimals' }),
  },
  { title: 'CampaignMetrics' },
);

const Template = Nullable(Type.String());

export const CampaignOut = Type.Object(
  {
    id: Type.Integer(),
    organization_id: Type.Integer(),
    name: Type.String(),
    description: Nullable(Type.String()),
    campaign_type: CampaignType,
    status: CampaignStatus,
    assistant_id: Nullable(
      Type.Integer({ description: 'null once the assistant of a finished campaign is deleted' }),
    ),
    assistant_name: Nullable(Type.String()),
    welcome_message_template: Template,
    agenda_template: Template,
    end_call_message_template: Template,
    sms_message_template: Template,
    fallback_values: Type.Object({}, { additionalProperties: true }),
    variable_mappings: Type.Object({}, { additionalProperties: Type.String() }),
    available_variables: Type.Array(Type.String()),
    max_attempts: Type.Integer(),
    retry_delay_minutes: Type.Integer(),
    concurrency_limit: Type.Integer(),
    total_contacts: Type.Integer(),
    completed_contacts: Type.Integer(),
    failed_contacts: Type.Integer(),
    failure_reason: Nullable(Type.String()),
    created_at: Timestamp,
    updated_at: Timestamp,
    started_at: NullableTimestamp,
    completed_at: NullableTimestamp,
    metrics: MetricsOut,
  },
  { title: 'Campaign' },
);

export function campaignView(row: CampaignRow, metrics: CampaignMetrics) {
  return {
    id: row.id,
    organization_id: row.organizationId,
    name: row.name,
    description: row.description,
    campaign_type: row.campaignType,
    status: row.status,
    assistant_id: row.assistantId,
    assistant_name: row.assistantName,
    welcome_message_template: row.welcomeMessageTemplate,
    agenda_template: row.agendaTemplate,
    end_call_message_template: row.endCallMessageTemplate,
    sms_message_template: row.smsMessageTemplate,
    fallback_values: row.fallbackValues,
    variable_mappings: row.variableMappings,
    available_variables: row.availableVariables,
    max_attempts: row.maxAttempts,
    retry_delay_minutes: row.retryDelayMinutes,
    concurrency_limit: row.concurrencyLimit,
    total_contacts: row.totalContacts,
    completed_contacts: row.completedContacts,
    failed_contacts: row.failedContacts,
    failure_reason: row.failureReason,
    created_at: iso(row.createdAt),
    updated_at: iso(row.updatedAt),
    started_at: iso(row.startedAt),
    completed_at: iso(row.completedAt),
    metrics: {
      success_rate: metrics.successRate,
      answer_rate: metrics.answerRate,
      average_duration_seconds: metrics.averageDurationSeconds,
      total_duration_seconds: metrics.totalDurationSeconds,
      actual_cost: metrics.actualCost,
    },
  };
}
