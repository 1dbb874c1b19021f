/**
 * /api/v1/campaigns/{id}/schedule (set, read) and /unschedule. A bad schedule body answers 400, not
 * 422 (platform-api.md Errors, decisions §2), whether the schema or the schedule rules refuse it.
 * The schema checks the shape; `parseSchedule` then checks zones, times in the past and the end date.
 */
import { Type } from 'typebox';
import { access } from '../../../http/access.js';
import { principalOf } from '../../../http/auth.js';
import { errors } from '../../../http/responses.js';
import { IdParam } from '../../../http/schemas.js';
import type { App } from '../../../http/types.js';
import { Nullable } from '../../../lib/schema.js';
import { MAX_INTERVAL } from './recurrence.js';
import type { CampaignScheduleService } from './service.js';
import { ScheduleOut, scheduleView } from './views.js';

const tags = ['campaigns'];

const Zone = Type.String({
  minLength: 1,
  maxLength: 64,
  description: 'IANA zone name, such as Europe/Berlin',
});

const RecurringConfigIn = Type.Object(
  {
    frequency: Type.Union([Type.Literal('daily'), Type.Literal('weekly'), Type.Literal('monthly')]),
    interval: Type.Optional(
      Nullable(
        Type.Integer({
          minimum: 1,
          maximum: MAX_INTERVAL,
          description: 'Every N days, weeks or months, counted from the date the schedule is set (default 1)',
        }),
      ),
    ),
    days_of_week: Type.Optional(
      Nullable(
        Type.Array(Type.Integer({ minimum: 1, maximum: 7 }), {
          minItems: 1,
          maxItems: 7,
          uniqueItems: true,
          description: 'weekly (required): 1 is Monday … 7 Sunday',
        }),
      ),
    ),
    day_of_month: Type.Optional(
      Nullable(
        Type.Integer({
          minimum: 1,
          maximum: 31,
          description: 'monthly (required); a month without that day runs on its last day',
        }),
      ),
    ),
    time: Type.String({ pattern: '^([01][0-9]|2[0-3]):[0-5][0-9]$', description: '24-hour HH:MM' }),
    time_zone: Type.Optional(
      Nullable({ ...Zone, description: "The recurrence's zone; wins over timezone (default timezone)" }),
    ),
    end_date: Type.Optional(
      Nullable(
        Type.String({
          pattern: '^[0-9]{4}-[0-9]{2}-[0-9]{2}$',
          description: 'YYYY-MM-DD: the last date (inclusive, in the zone) a run may happen',
        }),
      ),
    ),
  },
  { additionalProperties: false, title: 'RecurringConfig' },
);

const ScheduleBody = Type.Object(
  {
    schedule_type: Type.Union([
      Type.Literal('immediate'),
      Type.Literal('scheduled'),
      Type.Literal('recurring'),
    ]),
    scheduled_at: Type.Optional(
      Nullable(
        Type.String({
          maxLength: 64,
          description:
            'scheduled (required): ISO 8601 date and time in the future; without an offset it is wall-clock time in timezone',
        }),
      ),
    ),
    timezone: Type.Optional(Nullable({ ...Zone, description: 'IANA zone name (default UTC)' })),
    recurring_config: Type.Optional(Nullable(RecurringConfigIn)),
  },
  { additionalProperties: false },
);

const Answer = Type.Object({ success: Type.Boolean(), message: Type.String() });

export function campaignScheduleRoutes(app: App, schedules: CampaignScheduleService): void {
  const params = IdParam('campaign_id');
  // Bodies (and path ids) answer 400 when invalid on the schedule's write routes.
  const write = { access: access.area('campaigns'), validationStatus: 400 as const };
  const notFound = 'Campaign not found in your organization';

  app.post(
    '/api/v1/campaigns/:campaign_id/schedule',
    {
      config: write,
      schema: {
        operationId: 'scheduleCampaign',
        tags,
        summary: 'Schedule a campaign once or on a recurrence, or clear its schedule (immediate)',
        description:
          'scheduled / recurring on a draft or scheduled campaign: status scheduled (a schedule replaces the one ' +
          'before). immediate on a scheduled campaign: back to draft, schedule cleared; on a draft: stays draft. ' +
          '400: invalid body, a time in the past, an unknown time zone, a recurrence with no run left. ' +
          '409: the campaign is running, paused or finished.',
        params,
        body: ScheduleBody,
        response: {
          200: Answer,
          ...errors({
            400: 'Invalid schedule: a time in the past, an unknown time zone, a recurrence with no run left…',
            404: notFound,
            409: 'The campaign is running, paused or finished',
          }),
        },
      },
    },
    async (request) =>
      schedules.set(principalOf(request), request.params.campaign_id, request.body as unknown),
  );

  app.get(
    '/api/v1/campaigns/:campaign_id/schedule',
    {
      config: { access: access.area('campaigns') },
      schema: {
        operationId: 'getCampaignSchedule',
        tags,
        summary: "The campaign's schedule (schedule_type immediate, with nulls, when it has none)",
        params,
        response: { 200: ScheduleOut, ...errors({ 404: notFound }) },
      },
    },
    async (request) => scheduleView(await schedules.get(principalOf(request), request.params.campaign_id)),
  );

  app.post(
    '/api/v1/campaigns/:campaign_id/unschedule',
    {
      config: write,
      schema: {
        operationId: 'unscheduleCampaign',
        tags,
        summary: 'Take a scheduled campaign back to draft and delete its schedule',
        description: '409 unless the campaign is scheduled.',
        params,
        response: { 200: Answer, ...errors({ 404: notFound, 409: 'The campaign is not scheduled' }) },
      },
    },
    async (request) => schedules.unschedule(principalOf(request), request.params.campaign_id),
  );
}
