/** /v1/billing: the organization's wallet and its ledger. */
import { Type } from 'typebox';
import type { LedgerKind } from '../../db/schema/billing.js';
import { access } from '../../http/access.js';
import { principalOf } from '../../http/auth.js';
import { PageQuery, PaginationOut, pageOf, paginationView } from '../../http/pagination.js';
import type { App } from '../../http/types.js';
import { iso, Timestamp } from '../../lib/schema.js';
import type { BillingService } from './service.js';

const tags = ['billing'];
const Money = Type.Number({ description: 'Amount in the wallet currency, at most 4 decimals.' });

const LedgerEntryOut = Type.Object(
  {
    id: Type.Integer(),
    amount: Money,
    balance_after: Money,
    kind: Type.Unsafe<LedgerKind>({
      type: 'string',
      enum: ['trial_credit', 'grant', 'call', 'sms', 'adjustment'] satisfies LedgerKind[],
      description: 'What the entry is for',
    }),
    description: Type.String(),
    reference: Type.Union([Type.String(), Type.Null()]),
    created_at: Timestamp,
  },
  { title: 'LedgerEntry' },
);

export function billingRoutes(app: App, billing: BillingService): void {
  app.get(
    '/v1/billing/wallet',
    {
      config: { access: access.area('organization') },
      schema: {
        operationId: 'getWallet',
        tags,
        summary: "The organization's balance",
        response: { 200: Type.Object({ balance: Money, currency: Type.String() }) },
      },
    },
    async (request) => billing.wallet(principalOf(request).tenant),
  );

  app.get(
    '/v1/billing/ledger',
    {
      config: { access: access.area('organization') },
      schema: {
        operationId: 'listLedgerEntries',
        tags,
        summary: 'Every credit and charge of the wallet, newest first',
        querystring: Type.Object(PageQuery),
        response: { 200: Type.Object({ entries: Type.Array(LedgerEntryOut), pagination: PaginationOut }) },
      },
    },
    async (request) => {
      const page = pageOf(request.query);
      const { entries, total } = await billing.ledger(principalOf(request).tenant, page);
      return {
        entries: entries.map((entry) => ({
          id: entry.id,
          amount: Number(entry.amount),
          balance_after: Number(entry.balanceAfter),
          kind: entry.kind,
          description: entry.description,
          reference: entry.reference,
          created_at: iso(entry.createdAt),
        })),
        pagination: paginationView(page, total),
      };
    },
  );
}
