/**
 * GET /api/v1/calls/analytics: the organization's call figures over a range of days (analytics.ts).
 * A static path, registered before `/api/v1/calls/:call_id` (the router prefers it anyway), so it is
 * never read as a call id.
 */
import { Type } from 'typebox';
import { access } from '../../http/access.js';
import { principalOf } from '../../http/auth.js';
import { Id } from '../../http/schemas.js';
import type { App } from '../../http/types.js';
import { Nullable } from '../../lib/schema.js';
import type { CallAnalytics } from './analytics.js';

// Compact on purpose: every field is documented in docs/calls.md, and the shared parts are named
// schemas (one component each in the OpenAPI document) rather than copies.
const Count = Type.Integer();
const Ms = Nullable(Type.Number());

const Outcomes = Type.Object(
  {
    calls: Count,
    answered: Count,
    completed: Count,
    by_status: Type.Object(
      { completed: Count, voicemail: Count, busy: Count, 'no-answer': Count, failed: Count, canceled: Count },
      { title: 'CallOutcomeCounts' },
    ),
    inbound: Count,
    outbound: Count,
  },
  { title: 'CallOutcomes' },
);
const Durations = Type.Object(
  { total: Type.Number(), avg: Ms, p50: Ms, p95: Ms },
  { title: 'CallDurationFigures', description: 'Seconds, of the answered calls' },
);
const Breakdown = {
  duration_seconds: Durations,
  cost: Type.Number(),
  transfers: Count,
  end_to_end_ms: Type.Object({ p50: Ms, p95: Ms }, { title: 'LatencyMedianP95' }),
};
const Percentiles = Type.Object(
  { turns: Count, p50: Ms, p90: Ms, p95: Ms, p99: Ms },
  { title: 'TurnLatencyPercentiles' },
);

const CallAnalyticsOut = Type.Object(
  {
    date_from: Type.String({ format: 'date-time' }),
    date_to: Type.String({ format: 'date-time' }),
    time_zone: Type.String(),
    percentile_relative_error: Type.Number(),
    totals: Type.Intersect([Outcomes, Type.Object({ duration_seconds: Durations, cost: Type.Number() })]),
    per_day: Type.Array(
      Type.Intersect([
        Outcomes,
        Type.Object({
          date: Type.String({ format: 'date' }),
          duration_seconds: Type.Number(),
          cost: Type.Number(),
          transfers: Count,
        }),
      ]),
    ),
    transfers: Type.Object({ count: Count, rate: Type.Number() }),
    tool_use: Type.Array(Type.Object({ name: Type.String(), calls: Count, failures: Count })),
    interruptions: Type.Object({ count: Count, turns: Count, rate: Type.Number() }),
    latency: Type.Object({
      end_to_end_ms: Percentiles,
      llm_ttft_ms: Percentiles,
      tts_ttfb_ms: Percentiles,
      stt_delay_ms: Percentiles,
      platform_ms: Percentiles,
    }),
    by_assistant: Type.Array(
      Type.Intersect([
        Outcomes,
        Type.Object({ assistant_id: Nullable(Id), assistant_name: Nullable(Type.String()), ...Breakdown }),
      ]),
    ),
    by_number: Type.Array(
      Type.Intersect([Outcomes, Type.Object({ phone_number: Type.String(), ...Breakdown })]),
    ),
  },
  { title: 'CallAnalytics' },
);

const DateOrTimestamp = (description: string) => Type.String({ maxLength: 40, description });

export function callAnalyticsRoutes(app: App, analytics: CallAnalytics): void {
  app.get(
    '/api/v1/calls/analytics',
    {
      config: { access: access.area('calls') },
      schema: {
        tags: ['calls'],
        operationId: 'getCallAnalytics',
        summary: 'Call figures over a range of days: outcomes, durations, transfers, tools, latency',
        description:
          'Calls count once they reach a final status, under the day (in time_zone) they were created. ' +
          'Default range: the last 30 days, today included; at most 366 days. Percentiles are read from ' +
          'log-scale histograms (see percentile_relative_error). docs/calls.md describes every field.',
        querystring: Type.Object({
          date_from: Type.Optional(DateOrTimestamp('First day (ISO date, in time_zone) or hour (timestamp)')),
          date_to: Type.Optional(DateOrTimestamp('Last day or hour, included')),
          assistant_id: Type.Optional(Id),
          phone_number: Type.Optional(
            Type.String({
              maxLength: 32,
              description: 'One of our numbers: calls made from or received on it',
            }),
          ),
          time_zone: Type.Optional(
            Type.String({ maxLength: 64, default: 'UTC', description: 'IANA time zone of the days' }),
          ),
        }),
        response: { 200: CallAnalyticsOut },
      },
    },
    async (request) => analytics.report(principalOf(request), request.query),
  );
}
