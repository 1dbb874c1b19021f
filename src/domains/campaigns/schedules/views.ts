/** The JSON of a campaign's schedule: the TypeBox schema and the function that fills it (internal recurrence keys left out). */
import { Type } from 'typebox';
import { iso, Nullable, NullableTimestamp } from '../../../lib/schema.js';
import { INTERNAL_CONFIG_KEYS } from './recurrence.js';
import type { ScheduleState } from './service.js';

export const ScheduleOut = Type.Object(
  {
    campaign_id: Type.Integer(),
    schedule_type: Type.Union(
      [Type.Literal('immediate'), Type.Literal('scheduled'), Type.Literal('recurring')],
      {
        description: 'immediate: no schedule; the campaign runs when it is started',
      },
    ),
    scheduled_at: NullableTimestamp,
    timezone: Type.String(),
    recurring_config: Nullable(Type.Object({}, { additionalProperties: true })),
    next_run_at: {
      ...NullableTimestamp,
      description: 'When the campaign next starts by itself; null when never',
    },
    last_run_at: NullableTimestamp,
  },
  { title: 'CampaignSchedule' },
);

export function scheduleView(state: ScheduleState) {
  let config: Record<string, unknown> | null = null;
  if (state.recurringConfig) {
    config = { ...state.recurringConfig };
    for (const key of INTERNAL_CONFIG_KEYS) delete config[key];
  }
  return {
    campaign_id: state.campaignId,
    schedule_type: state.scheduleType,
    scheduled_at: iso(state.scheduledAt),
    timezone: state.timezone,
    recurring_config: config,
    next_run_at: iso(state.nextRunAt),
    last_run_at: iso(state.lastRunAt),
  };
}
