/**
 * GET /api/v1/calls/{id}/events: what happened during a call, in order — the tools the model ran with
 * their arguments and results, vendor switches, interruptions, keys pressed, the carrier's status
 * changes. The catalogue of event types is in docs/voice.md ("What is recorded").
 */
import { Type } from 'typebox';
import { access } from '../../http/access.js';
import { principalOf } from '../../http/auth.js';
import { SkipLimitQuery, skipLimitOf } from '../../http/pagination.js';
import { errors } from '../../http/responses.js';
import { IdParam } from '../../http/schemas.js';
import type { App } from '../../http/types.js';
import { iso, OpenObject, Timestamp } from '../../lib/schema.js';
import type { CallRecords } from './records.js';

const CallEventOut = Type.Object(
  {
    id: Type.Integer(),
    type: Type.String({ description: 'For example call.tool, call.vendor_fallback, call.interrupted' }),
    data: OpenObject,
    created_at: Timestamp,
  },
  { title: 'CallRecordedEvent' },
);

export function callEventRoutes(app: App, records: CallRecords): void {
  app.get(
    '/api/v1/calls/:call_id/events',
    {
      config: { access: access.area('calls') },
      schema: {
        tags: ['calls'],
        operationId: 'getCallEvents',
        summary: 'What happened during the call, oldest first',
        description:
          'Tool calls (`call.tool`: name, arguments, ok, duration_ms, result), vendor switches, ' +
          'interruptions, keys pressed and the other events of docs/voice.md, in the order they ' +
          'were recorded. `type` keeps one kind.',
        params: IdParam('call_id'),
        querystring: Type.Object(
          {
            type: Type.Optional(Type.String({ minLength: 1, maxLength: 100, pattern: '^[a-z_.]+$' })),
            ...SkipLimitQuery,
          },
          { additionalProperties: false },
        ),
        response: {
          200: Type.Array(CallEventOut),
          ...errors({ 404: 'Call not found in your organization' }),
        },
      },
    },
    async (request) => {
      const events = await records.events(principalOf(request), request.params.call_id, {
        ...(request.query.type ? { type: request.query.type } : {}),
        ...skipLimitOf(request.query),
      });
      return events.map((event) => ({
        id: event.id,
        type: event.type,
        data: event.data,
        created_at: iso(event.createdAt),
      }));
    },
  );
}
