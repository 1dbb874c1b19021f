/** Billing: one wallet per organization and the ledger every credit and charge is written to. */
import { index, integer, pgTable, text, timestamp } from 'drizzle-orm/pg-core';
import { money } from './columns.js';
import { organizationColumn, organizations } from './identity.js';

export const wallets = pgTable('wallets', {
  organizationId: integer('organization_id')
    .primaryKey()
    .references(() => organizations.id, { onDelete: 'cascade' }),
  balance: money('balance').notNull().default(0),
  currency: text('currency').notNull().default('USD'),
  updatedAt: timestamp('updated_at', { withTimezone: true }).notNull().defaultNow(),
});

export const ledgerEntries = pgTable(
  'ledger_entries',
  {
    id: integer('id').primaryKey().generatedAlwaysAsIdentity(),
    organizationId: organizationColumn(),
    /** Positive for a credit, negative for a charge. */
    amount: money('amount').notNull(),
    /** The wallet balance right after this entry (entries of one wallet are serialised by its row lock). */
    balanceAfter: money('balance_after').notNull(),
    kind: text('kind').$type<LedgerKind>().notNull(),
    description: text('description').notNull(),
    /** What the entry is for, e.g. `call:42`; null for grants. */
    reference: text('reference'),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [index('ledger_entries_organization_idx').on(t.organizationId, t.id)],
);

export type LedgerKind = 'trial_credit' | 'grant' | 'call' | 'sms' | 'adjustment';
