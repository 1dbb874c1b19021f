/** Phone numbers an organization brings, each routed to one assistant or one graph. */
import { sql } from 'drizzle-orm';
import {
  check,
  doublePrecision,
  foreignKey,
  index,
  integer,
  pgTable,
  text,
  timestamp,
  uniqueIndex,
} from 'drizzle-orm/pg-core';
import { TELEPHONY_PROVIDERS } from '../../providers/ids.js';
import { assistants } from './assistants.js';
import { oneOf } from './checks.js';
import { timestamps } from './columns.js';
import { assistantGraphs } from './graphs.js';
import { organizationColumn } from './identity.js';

export const phoneNumbers = pgTable(
  'phone_numbers',
  {
    id: integer('id').primaryKey().generatedAlwaysAsIdentity(),
    organizationId: organizationColumn(),
    /** E.164; one organization owns a number on the whole platform. */
    phoneNumber: text('phone_number').notNull(),
    provider: text('provider').notNull(),
    friendlyName: text('friendly_name'),
    assistantId: integer('assistant_id'),
    /** The graph routing this number (its entry assistant answers). */
    graphId: integer('graph_id'),
    /** null: the carrier-typical default for the number's kind (phone-numbers/service.ts). */
    smsRatePerSecond: doublePrecision('sms_rate_per_second'),
    /** When this number's next SMS may start (keeps sends at sms_rate_per_second, across processes). */
    smsNextSendAt: timestamp('sms_next_send_at', { withTimezone: true }),
    ...timestamps,
  },
  (t) => [
    uniqueIndex('phone_numbers_phone_number_key').on(t.phoneNumber),
    index('phone_numbers_organization_idx').on(t.organizationId),
    index('phone_numbers_assistant_idx').on(t.assistantId),
    // The assistant must be of the same organization, and cannot be deleted while a number uses it
    // (NO ACTION, checked at the end of the statement, so deleting a whole organization cascades).
    foreignKey({
      name: 'phone_numbers_assistant_fk',
      columns: [t.organizationId, t.assistantId],
      foreignColumns: [assistants.organizationId, assistants.id],
    }),
    // The graph likewise: of the same organization, and not deleted while a number routes to it.
    foreignKey({
      name: 'phone_numbers_graph_fk',
      columns: [t.organizationId, t.graphId],
      foreignColumns: [assistantGraphs.organizationId, assistantGraphs.id],
    }),
    check('phone_numbers_one_target', sql`${t.assistantId} is null or ${t.graphId} is null`),
    check('phone_numbers_provider_check', oneOf(t.provider, TELEPHONY_PROVIDERS)),
  ],
);
