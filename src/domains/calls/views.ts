/** The JSON of a call record: the TypeBox schema and the function that fills it. */
import { Type } from 'typebox';
import { CALL_STATUSES, type CallStatus } from '../../db/schema/telephony.js';
import { iso, Nullable, OpenObject, Timestamp } from '../../lib/schema.js';
import type { CallRow } from './store.js';

export const CallStatusSchema = Type.Unsafe<CallStatus>({ type: 'string', enum: [...CALL_STATUSES] });

export const CallOut = Type.Object(
  {
    id: Type.Integer(),
    assistant_id: Nullable(Type.Integer({ description: 'Null once the assistant is deleted' })),
    call_sid: Nullable(Type.String({ description: "The carrier's call identifier" })),
    direction: Type.Union([Type.Literal('inbound'), Type.Literal('outbound')]),
    from_phone_number: Type.String({
      description: 'Our number on outbound calls, the caller on inbound ones',
    }),
    to_phone_number: Type.String(),
    customer_phone_number: Type.String({ description: 'The other party' }),
    status: CallStatusSchema,
    call_meta: OpenObject,
    duration: Nullable(Type.Integer({ description: 'Seconds' })),
    cost: Nullable(Type.Number()),
    started_at: Nullable(Timestamp),
    ended_at: Nullable(Timestamp),
    created_at: Timestamp,
    updated_at: Timestamp,
    graph_session_id: Nullable(Type.Integer()),
    campaign_id: Nullable(Type.Integer()),
  },
  { title: 'Call' },
);

/** Inbound calls show the caller as `from_phone_number`; outbound ones our number. */
export function callView(call: CallRow) {
  return {
    id: call.id,
    assistant_id: call.assistantId,
    call_sid: call.callSid,
    direction: call.direction,
    from_phone_number: call.direction === 'inbound' ? call.customerPhoneNumber : call.fromPhoneNumber,
    to_phone_number: call.toPhoneNumber,
    customer_phone_number: call.customerPhoneNumber,
    status: call.status,
    call_meta: call.callMeta,
    duration: call.duration,
    cost: call.cost,
    started_at: iso(call.startedAt),
    ended_at: iso(call.endedAt),
    created_at: iso(call.createdAt),
    updated_at: iso(call.updatedAt),
    graph_session_id: call.graphSessionId,
    campaign_id: call.campaignId,
  };
}
