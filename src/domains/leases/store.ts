/**
 * SQL of vendor key leases (`vendor_leases`): take a key for a call when fewer than its limit of
 * unexpired leases hold it, renew a call's leases, give them back, and sweep expired ones. Taking is
 * one transaction that first takes a transaction-scoped advisory lock on the key, so two processes
 * racing for a key's last slot take turns: the second counts the first's lease. Expiry is read from
 * the database clock, so processes whose clocks differ still agree on which leases count.
 */
import { and, eq, gt, lte, ne, sql } from 'drizzle-orm';
import type { Db, Executor } from '../../db/client.js';
import { type LeaseKind, vendorLeases } from '../../db/schema/index.js';
import type { Tenant } from '../../db/tenant.js';

export interface LeaseKey {
  kind: LeaseKind;
  provider: string;
  /** `organization` (the organization's api_keys entry) or `fallback:<id>`. */
  keyRef: string;
}

const expiry = (ttlMs: number) => sql`clock_timestamp() + ${ttlMs} * interval '1 millisecond'`;

/**
 * Takes `key` for `callId` unless `limit` other unexpired leases already hold it; true when the call
 * holds it now. A call that already holds the key keeps it (its lease is renewed).
 */
export async function acquireLease(
  db: Db,
  tenant: Tenant,
  callId: number,
  key: LeaseKey,
  limit: number,
  ttlMs: number,
): Promise<boolean> {
  return db.transaction(async (tx) => {
    // One lock per key of the organization (the bigint space, apart from the two-int locks others take).
    const name = `vendor-lease:${tenant.organizationId}:${key.provider}:${key.keyRef}`;
    await tx.execute(sql`select pg_advisory_xact_lock(hashtextextended(${name}, 0))`);
    const ofKey = and(eq(vendorLeases.provider, key.provider), eq(vendorLeases.keyRef, key.keyRef));
    // The key's expired leases go now, so a key in steady use never accumulates them.
    await tx
      .delete(vendorLeases)
      .where(tenant.where(vendorLeases, ofKey, lte(vendorLeases.expiresAt, sql`clock_timestamp()`)));
    const [held] = await tx
      .select({ count: sql<number>`count(*)::int` })
      .from(vendorLeases)
      .where(
        tenant.where(
          vendorLeases,
          ofKey,
          ne(vendorLeases.callId, callId),
          gt(vendorLeases.expiresAt, sql`clock_timestamp()`),
        ),
      );
    if (Number(held?.count ?? 0) >= limit) return false;
    await tx
      .insert(vendorLeases)
      .values({
        organizationId: tenant.organizationId,
        callId,
        kind: key.kind,
        provider: key.provider,
        keyRef: key.keyRef,
        expiresAt: expiry(ttlMs),
      })
      .onConflictDoUpdate({
        target: [vendorLeases.callId, vendorLeases.provider, vendorLeases.keyRef],
        set: { expiresAt: expiry(ttlMs) },
      });
    return true;
  });
}

/** Pushes the expiry of every lease of the call to `ttlMs` from now; how many it holds. */
export async function renewLeases(
  ex: Executor,
  tenant: Tenant,
  callId: number,
  ttlMs: number,
): Promise<number> {
  const rows = await ex
    .update(vendorLeases)
    .set({ expiresAt: expiry(ttlMs) })
    .where(tenant.where(vendorLeases, eq(vendorLeases.callId, callId)))
    .returning({ id: vendorLeases.id });
  return rows.length;
}

/** Gives back every lease of the call. */
export async function releaseLeases(ex: Executor, tenant: Tenant, callId: number): Promise<void> {
  await ex.delete(vendorLeases).where(tenant.where(vendorLeases, eq(vendorLeases.callId, callId)));
}

/** Unexpired leases of one key of the organization. */
export async function countLiveLeases(
  ex: Executor,
  tenant: Tenant,
  key: Pick<LeaseKey, 'provider' | 'keyRef'>,
): Promise<number> {
  const [row] = await ex
    .select({ count: sql<number>`count(*)::int` })
    .from(vendorLeases)
    .where(
      tenant.where(
        vendorLeases,
        eq(vendorLeases.provider, key.provider),
        eq(vendorLeases.keyRef, key.keyRef),
        gt(vendorLeases.expiresAt, sql`clock_timestamp()`),
      ),
    );
  return Number(row?.count ?? 0);
}

/**
 * Deletes expired leases of every organization (left by processes that stopped without giving them
 * back). Maintenance, not a tenant's read: it touches only rows that no longer count for anyone.
 */
export async function sweepExpiredLeases(ex: Executor): Promise<number> {
  const rows = await ex
    .delete(vendorLeases)
    .where(lte(vendorLeases.expiresAt, sql`clock_timestamp()`))
    .returning({ id: vendorLeases.id });
  return rows.length;
}
