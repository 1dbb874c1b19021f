/**
 * The organization wallet. Every credit and charge is one ledger entry written in the same
 * transaction as the balance change, so the balance always equals the sum of the ledger.
 */
import type { Db, Executor } from '../../db/client.js';
import type { LedgerKind } from '../../db/schema/index.js';
import type { Tenant } from '../../db/tenant.js';
import { offsetOf, type Page } from '../../lib/page.js';
import * as store from './store.js';

/** Amounts are kept to 4 decimals (the column's scale). */
export function roundMoney(amount: number): number {
  return Math.round(amount * 10_000) / 10_000;
}

export interface WalletChange {
  organizationId: number;
  /** Positive credits, negative charges. */
  amount: number;
  kind: LedgerKind;
  description: string;
  reference?: string | null;
}

export class BillingService {
  constructor(private readonly deps: { db: Db; currency?: string }) {}

  /**
   * Applies one change to a wallet and records it in the ledger (one atomic statement). Pass `ex`
   * to make it part of a larger transaction (e.g. creating an organization with its trial credits).
   */
  async apply(change: WalletChange, ex: Executor = this.deps.db): Promise<store.LedgerRow> {
    return store.applyToWallet(ex, {
      organizationId: change.organizationId,
      amount: roundMoney(change.amount),
      kind: change.kind,
      description: change.description,
      reference: change.reference ?? null,
    });
  }

  /**
   * Applies several changes to one organization's wallet at once (one statement, one ledger entry
   * each, in order): what `apply` would do for each, as the SMS drain charges a batch of messages.
   */
  async applyMany(
    organizationId: number,
    changes: Array<Omit<WalletChange, 'organizationId'>>,
    ex: Executor = this.deps.db,
  ): Promise<void> {
    await store.applyManyToWallet(
      ex,
      organizationId,
      changes.map((change) => ({
        amount: roundMoney(change.amount),
        kind: change.kind,
        description: change.description,
        reference: change.reference ?? null,
      })),
    );
  }

  async wallet(tenant: Tenant): Promise<{ balance: number; currency: string }> {
    const row = await store.findWallet(this.deps.db, tenant);
    return { balance: Number(row?.balance ?? 0), currency: row?.currency ?? 'USD' };
  }

  async ledger(tenant: Tenant, page: Page): Promise<{ entries: store.LedgerRow[]; total: number }> {
    const [entries, total] = await Promise.all([
      store.listLedger(this.deps.db, tenant, page.perPage, offsetOf(page)),
      store.countLedger(this.deps.db, tenant),
    ]);
    return { entries, total };
  }

  organizationExists(organizationId: number): Promise<boolean> {
    return store.organizationExists(this.deps.db, organizationId);
  }
}
