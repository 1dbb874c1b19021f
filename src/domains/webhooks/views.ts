/** The JSON of a webhook delivery (docs/webhooks.md): the TypeBox schema and the function that fills it. */
import { Type } from 'typebox';
import { iso, Nullable, NullableTimestamp, OpenObject, Timestamp } from '../../lib/schema.js';
import type { DeliveryRow } from './service.js';

export const Status = Type.Union([
  Type.Literal('pending'),
  Type.Literal('delivered'),
  Type.Literal('failed'),
]);

export const DeliveryOut = Type.Object(
  {
    id: Type.Integer(),
    event_id: Type.String({
      format: 'uuid',
      description: 'X-Switchboard-Event-Id; the same on every attempt',
    }),
    event_type: Type.String(),
    url: Type.String(),
    status: Status,
    attempts: Type.Integer({ description: 'Requests made so far (every round of delivery counts)' }),
    last_status_code: Nullable(Type.Integer()),
    last_error: Nullable(Type.String()),
    payload: Type.Object(
      {
        id: Type.String(),
        type: Type.String(),
        created_at: Type.String(),
        organization_id: Type.Integer(),
        data: OpenObject,
      },
      { additionalProperties: true, description: 'The JSON body posted to the receiver' },
    ),
    created_at: Timestamp,
    delivered_at: NullableTimestamp,
    updated_at: Timestamp,
  },
  { title: 'WebhookDelivery' },
);

export function deliveryView(row: DeliveryRow) {
  return {
    id: row.id,
    event_id: row.eventId,
    event_type: row.eventType,
    url: row.url,
    status: row.status,
    attempts: row.attempts,
    last_status_code: row.lastStatusCode,
    last_error: row.lastError,
    payload: row.payload as {
      id: string;
      type: string;
      created_at: string;
      organization_id: number;
      data: Record<string, unknown>;
    },
    created_at: iso(row.createdAt),
    delivered_at: iso(row.deliveredAt),
    updated_at: iso(row.updatedAt),
  };
}
