/**
 * Reading conversation sessions and graph analytics:
 * GET /api/v1/assistant-graphs/{graph_id}/sessions, GET /api/v1/assistant-graphs/sessions/{call_sid}
 * and GET /api/v1/assistant-graphs/{graph_id}/analytics. `sessions` is a static segment, so the
 * router prefers it to the integer `{graph_id}` of the graph routes: both resolve.
 */

import { Type } from 'typebox';
import { access } from '../../http/access.js';
import { principalOf } from '../../http/auth.js';
import { SkipLimitQuery, skipLimitOf } from '../../http/pagination.js';
import { errors } from '../../http/responses.js';
import { Id } from '../../http/schemas.js';
import type { App } from '../../http/types.js';
import type { GraphAnalyticsService } from './analytics.js';
import type { GraphSessionService } from './sessions.js';
import { SessionOut, sessionView } from './views.js';

const tags = ['assistant-graphs'];

const TransitionUsageOut = Type.Object({
  from_node: Type.String(),
  to_node: Type.String(),
  count: Type.Integer(),
  percentage: Type.Number({ description: 'Share of all transitions in the period, 0 to 100' }),
});

const NodeUsageOut = Type.Object({
  node_name: Type.String(),
  sessions_started: Type.Integer({ description: 'Distinct sessions that entered the node' }),
  avg_time_in_node: Type.Number({ description: 'Seconds per finished visit' }),
  exit_rate: Type.Number({
    description: 'Sessions that ended at the node / sessions that entered it (0 to 1)',
  }),
});

const AnalyticsOut = Type.Object(
  {
    graph_id: Type.Integer(),
    graph_name: Type.String(),
    period_days: Type.Integer(),
    total_sessions: Type.Integer(),
    total_transitions: Type.Integer(),
    avg_session_duration: Type.Number({ description: 'Seconds, over ended sessions' }),
    most_used_transitions: Type.Array(TransitionUsageOut),
    node_usage_stats: Type.Record(Type.String({ pattern: '^[0-9]+$' }), NodeUsageOut, {
      description: 'Keyed by node id',
    }),
  },
  { title: 'GraphAnalytics' },
);

export function graphSessionRoutes(
  app: App,
  deps: { sessions: GraphSessionService; analytics: GraphAnalyticsService },
): void {
  const config = { access: access.area('graphs') };

  app.get(
    '/api/v1/assistant-graphs/:graph_id/sessions',
    {
      config,
      schema: {
        operationId: 'listGraphSessions',
        tags,
        summary: "A graph's conversation sessions, most recently started first (total in X-Total-Count)",
        params: Type.Object({ graph_id: Id }),
        querystring: Type.Object({
          ...SkipLimitQuery,
          active_only: Type.Optional(
            Type.Boolean({ default: false, description: 'true: only sessions still going' }),
          ),
        }),
        response: { 200: Type.Array(SessionOut), ...errors({ 404: 'Graph not found in your organization' }) },
      },
    },
    async (request, reply) => {
      const { rows, total } = await deps.sessions.list(principalOf(request).tenant, request.params.graph_id, {
        ...skipLimitOf(request.query),
        activeOnly: request.query.active_only ?? false,
      });
      reply.header('X-Total-Count', total);
      return rows.map(sessionView);
    },
  );

  app.get(
    '/api/v1/assistant-graphs/sessions/:call_sid',
    {
      config,
      schema: {
        operationId: 'getGraphSessionByCallSid',
        tags,
        summary: 'The conversation session of a call SID (the latest, should the call have had several)',
        params: Type.Object({ call_sid: Type.String({ minLength: 1, maxLength: 256 }) }),
        response: {
          200: SessionOut,
          ...errors({ 404: 'No graph session of your organization for this call SID' }),
        },
      },
    },
    async (request) =>
      sessionView(await deps.sessions.byCallSid(principalOf(request).tenant, request.params.call_sid)),
  );

  app.get(
    '/api/v1/assistant-graphs/:graph_id/analytics',
    {
      config,
      schema: {
        operationId: 'getGraphAnalytics',
        tags,
        summary: 'How conversations walked the graph: sessions started in the last `days`',
        params: Type.Object({ graph_id: Id }),
        querystring: Type.Object({
          days: Type.Optional(Type.Integer({ minimum: 1, maximum: 365, default: 30 })),
        }),
        response: { 200: AnalyticsOut, ...errors({ 404: 'Graph not found in your organization' }) },
      },
    },
    async (request) =>
      deps.analytics.compute(principalOf(request).tenant, request.params.graph_id, request.query.days ?? 30),
  );
}
