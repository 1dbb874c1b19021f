/** The JSON of a phone number: the TypeBox schema and the function that fills it. */
import { Type } from 'typebox';
import { isTollFree } from '../../lib/phone.js';
import { iso, Nullable } from '../../lib/schema.js';
import { TELEPHONY_PROVIDERS } from '../../providers/ids.js';
import { defaultSmsRate } from './service.js';
import type { PhoneNumberRow } from './store.js';

export const PhoneNumberOut = Type.Object(
  {
    id: Type.Integer(),
    organization_id: Type.Integer(),
    phone_number: Type.String(),
    provider: Type.Unsafe<string>({ type: 'string', enum: [...TELEPHONY_PROVIDERS] }),
    friendly_name: Nullable(Type.String()),
    assistant_id: Nullable(Type.Integer()),
    assistant_name: Nullable(Type.String()),
    graph_id: Nullable(Type.Integer()),
    is_toll_free: Type.Boolean(),
    sms_rate_per_second: Type.Number(),
    created_at: Type.String({ format: 'date-time' }),
    updated_at: Type.String({ format: 'date-time' }),
  },
  {
    title: 'PhoneNumber',
    examples: [
      {
        id: 3,
        organization_id: 1,
        phone_number: '+14155552671',
        provider: 'carrier_a',
        friendly_name: 'Support line',
        assistant_id: 7,
        assistant_name: 'Front desk',
        graph_id: null,
        is_toll_free: false,
        sms_rate_per_second: 1,
        created_at: '2026-11-21T09:00:00.000Z',
        updated_at: '2026-11-21T09:00:00.000Z',
      },
    ],
  },
);

export function phoneNumberView(row: PhoneNumberRow) {
  return {
    id: row.id,
    organization_id: row.organizationId,
    phone_number: row.phoneNumber,
    provider: row.provider,
    friendly_name: row.friendlyName,
    assistant_id: row.assistantId,
    assistant_name: row.assistantName,
    graph_id: row.graphId,
    is_toll_free: isTollFree(row.phoneNumber),
    sms_rate_per_second: row.smsRatePerSecond ?? defaultSmsRate(row.phoneNumber),
    created_at: iso(row.createdAt),
    updated_at: iso(row.updatedAt),
  };
}
