/** SQL of wallets and the ledger. */
import { desc, sql } from 'drizzle-orm';
import type { Executor } from '../../db/client.js';
import { type LedgerKind, ledgerEntries, wallets } from '../../db/schema/index.js';
import type { Tenant } from '../../db/tenant.js';

export type LedgerRow = typeof ledgerEntries.$inferSelect;

/**
 * Adds `amount` (negative for a charge) to the wallet and returns the new balance. A single
 * upsert: the row lock it takes serialises concurrent changes, so none is lost.
 */
export async function addToWallet(ex: Executor, organizationId: number, amount: number): Promise<number> {
  const [row] = await ex
    .insert(wallets)
    .values({ organizationId, balance: amount })
    .onConflictDoUpdate({
      target: wallets.organizationId,
      set: { balance: sql`${wallets.balance} + excluded.balance`, updatedAt: sql`now()` },
    })
    .returning({ balance: wallets.balance });
  return Number(row!.balance);
}

export async function insertLedgerEntry(
  ex: Executor,
  values: {
    organizationId: number;
    amount: number;
    balanceAfter: number;
    kind: LedgerKind;
    description: string;
    reference: string | null;
  },
): Promise<LedgerRow> {
  const [row] = await ex.insert(ledgerEntries).values(values).returning();
  return row!;
}

export async function findWallet(ex: Executor, tenant: Tenant) {
  const [row] = await ex.select().from(wallets).where(tenant.owns(wallets)).limit(1);
  return row;
}

export async function listLedger(
  ex: Executor,
  tenant: Tenant,
  limit: number,
  offset: number,
): Promise<LedgerRow[]> {
  return ex
    .select()
    .from(ledgerEntries)
    .where(tenant.owns(ledgerEntries))
    .orderBy(desc(ledgerEntries.id))
    .limit(limit)
    .offset(offset);
}

export async function countLedger(ex: Executor, tenant: Tenant): Promise<number> {
  const [row] = await ex
    .select({ n: sql<number>`count(*)::int` })
    .from(ledgerEntries)
    .where(tenant.owns(ledgerEntries));
  return Number(row?.n ?? 0);
}

export async function organizationExists(ex: Executor, organizationId: number): Promise<boolean> {
  const rows = await ex.execute(sql`select 1 from organizations where id = ${organizationId}`);
  return (rows as unknown as { rows: unknown[] }).rows.length > 0;
}
