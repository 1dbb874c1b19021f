/** The JSON of a number's SMS compliance status: the TypeBox schema and the function that fills it. */
import { Type } from 'typebox';
import { isTollFree } from '../../lib/phone.js';
import { iso, Nullable, NullableTimestamp } from '../../lib/schema.js';
import { canSendOf, stateOf } from './service.js';
import type { NumberCompliance } from './store.js';

export const Status = Type.Union([
  Type.Literal('pending'),
  Type.Literal('approved'),
  Type.Literal('rejected'),
]);

export const State = Type.Union([...Status.anyOf, Type.Literal('not_submitted')], {
  description: 'The record status; not_submitted for a number never submitted',
});

export const StatusOut = Type.Object(
  {
    found: Type.Boolean({ description: 'False when the number was never submitted' }),
    phone_number: Type.String(),
    phone_number_id: Type.Integer(),
    status: State,
    use_case: Nullable(Type.String()),
    submitted_at: NullableTimestamp,
    approved_at: NullableTimestamp,
    rejection_reason: Nullable(Type.String()),
    can_send_outbound: Type.Boolean(),
    is_toll_free: Type.Boolean(),
  },
  { title: 'SmsComplianceStatus' },
);

export function statusView({ phoneNumberId, phoneNumber, record }: NumberCompliance) {
  return {
    found: record !== null,
    phone_number: phoneNumber,
    phone_number_id: phoneNumberId,
    status: stateOf(record),
    use_case: record?.useCase ?? null,
    submitted_at: record ? iso(record.submittedAt) : null,
    approved_at: record ? iso(record.approvedAt) : null,
    rejection_reason: record?.rejectionReason ?? null,
    can_send_outbound: canSendOf(record).can_send,
    is_toll_free: isTollFree(phoneNumber),
  };
}
