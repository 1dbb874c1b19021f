/**
 * Vendor key leases: which live call holds which limited key right now, shared by every process of a
 * cluster so an organization's `concurrent_limit`s hold whichever process serves the call
 * (domains/leases). A lease counts until `expires_at`; the process serving the call pushes that
 * forward while the call lives, so the lease of a crashed process stops counting on its own.
 */
import { check, index, integer, pgTable, text, timestamp, uniqueIndex } from 'drizzle-orm/pg-core';
import { oneOf } from './checks.js';
import { organizationColumn } from './identity.js';
import { calls } from './telephony.js';

export const LEASE_KINDS = ['llm', 'stt', 'tts'] as const;
export type LeaseKind = (typeof LEASE_KINDS)[number];

export const vendorLeases = pgTable(
  'vendor_leases',
  {
    id: integer('id').primaryKey().generatedAlwaysAsIdentity(),
    organizationId: organizationColumn(),
    callId: integer('call_id')
      .notNull()
      .references(() => calls.id, { onDelete: 'cascade' }),
    kind: text('kind').$type<LeaseKind>().notNull(),
    provider: text('provider').notNull(),
    /** Which of the organization's keys of `provider`: `organization` (api_keys) or `fallback:<id>`. */
    keyRef: text('key_ref').notNull(),
    expiresAt: timestamp('expires_at', { withTimezone: true }).notNull(),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    // Counting a key's live leases reads only this index.
    index('vendor_leases_key_idx').on(t.organizationId, t.provider, t.keyRef, t.expiresAt),
    // A call holds a key once: taking it again renews the lease.
    uniqueIndex('vendor_leases_call_key_key').on(t.callId, t.provider, t.keyRef),
    // The sweep of expired leases.
    index('vendor_leases_expires_idx').on(t.expiresAt),
    check('vendor_leases_kind_check', oneOf(t.kind, LEASE_KINDS)),
  ],
);
