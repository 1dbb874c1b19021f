/** SQL of wallets and the ledger. */
import { desc, sql } from 'drizzle-orm';
import type { Executor } from '../../db/client.js';
import { type LedgerKind, ledgerEntries, wallets } from '../../db/schema/index.js';
import type { Tenant } from '../../db/tenant.js';

export type LedgerRow = typeof ledgerEntries.$inferSelect;

/**
 * Adds `amount` (negative for a charge) to the organization's wallet and records the ledger entry
 * with the resulting balance — one statement, so it is atomic on its own and inside a transaction.
 * The upsert's row lock serialises concurrent changes to one wallet: none is lost, and each entry's
 * `balance_after` is the balance right after it.
 */
export async function applyToWallet(
  ex: Executor,
  values: {
    organizationId: number;
    amount: number;
    kind: LedgerKind;
    description: string;
    reference: string | null;
  },
): Promise<LedgerRow> {
  const result = (await ex.execute(sql`
    with wallet as (
      insert into wallets (organization_id, balance) values (${values.organizationId}, ${values.amount}::numeric)
      on conflict (organization_id) do update set balance = wallets.balance + excluded.balance, updated_at = now()
      returning balance
    )
    insert into ledger_entries (organization_id, amount, balance_after, kind, description, reference)
    select ${values.organizationId}, ${values.amount}::numeric, wallet.balance, ${values.kind}::text,
           ${values.description}::text, ${values.reference}::text
    from wallet
    returning id, organization_id, amount::float8 as amount, balance_after::float8 as balance_after,
              kind, description, reference, created_at`)) as unknown as { rows: Record<string, unknown>[] };
  const row = result.rows[0]!;
  return {
    id: Number(row.id),
    organizationId: Number(row.organization_id),
    amount: Number(row.amount),
    balanceAfter: Number(row.balance_after),
    kind: row.kind as LedgerKind,
    description: String(row.description),
    reference: (row.reference as string | null) ?? null,
    createdAt: new Date(row.created_at as string | Date),
  };
}

/**
 * Applies several changes to one organization's wallet in one statement: the wallet moves once by
 * their sum, and each change gets its ledger entry, in the order given, with the balance right after
 * it (the balance after the last is the wallet's) — the entries `applyToWallet` would have written
 * one by one, under one lock of the wallet row.
 */
export async function applyManyToWallet(
  ex: Executor,
  organizationId: number,
  changes: Array<{ amount: number; kind: LedgerKind; description: string; reference: string | null }>,
): Promise<number> {
  if (changes.length === 0) return 0;
  const input = changes.map((change, ord) => ({ ord, ...change }));
  const result = (await ex.execute(sql`
    with input as (
      select * from jsonb_to_recordset(${JSON.stringify(input)}::jsonb)
        as i(ord int, amount numeric, kind text, description text, reference text)
    ),
    wallet as (
      insert into wallets (organization_id, balance)
      select ${organizationId}::int, sum(input.amount) from input
      on conflict (organization_id) do update set balance = wallets.balance + excluded.balance, updated_at = now()
      returning balance
    ),
    entries as (
      insert into ledger_entries (organization_id, amount, balance_after, kind, description, reference)
      select ${organizationId}::int, input.amount,
        wallet.balance - coalesce(sum(input.amount) over (
          order by input.ord rows between 1 following and unbounded following
        ), 0),
        input.kind, input.description, input.reference
      from input cross join wallet
      order by input.ord
      returning 1
    )
    select count(*)::int as n from entries`)) as unknown as { rows: Array<{ n: number }> };
  return Number(result.rows[0]?.n ?? 0);
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
