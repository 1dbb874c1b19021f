/** The JSON of a campaign contact: the TypeBox schema and the function that fills it. */
import { Type } from 'typebox';
import { iso, Nullable, NullableTimestamp, Timestamp } from '../../../lib/schema.js';
import type { ContactRow } from './store.js';

export const ContactStatus = Type.Union([
  Type.Literal('pending'),
  Type.Literal('in_progress'),
  Type.Literal('completed'),
  Type.Literal('failed'),
  Type.Literal('skipped'),
]);

export const ContactOut = Type.Object(
  {
    id: Type.Integer(),
    campaign_id: Type.Integer(),
    phone_number: Type.String({ description: 'E.164' }),
    name: Nullable(Type.String()),
    email: Nullable(Type.String()),
    company: Nullable(Type.String()),
    custom_fields: Type.Object({}, { additionalProperties: true }),
    status: ContactStatus,
    attempts: Type.Integer(),
    next_attempt_at: NullableTimestamp,
    created_at: Timestamp,
    updated_at: Timestamp,
  },
  { title: 'CampaignContact' },
);

export function contactView(row: ContactRow) {
  return {
    id: row.id,
    campaign_id: row.campaignId,
    phone_number: row.phoneNumber,
    name: row.name,
    email: row.email,
    company: row.company,
    custom_fields: row.customFields,
    status: row.status,
    attempts: row.attempts,
    next_attempt_at: iso(row.nextAttemptAt),
    created_at: iso(row.createdAt),
    updated_at: iso(row.updatedAt),
  };
}
