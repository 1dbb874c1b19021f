/** SQL of an organization's fallback keys (per provider). */
import { and, asc, eq } from 'drizzle-orm';
import { scopedStatement } from '../../db/built.js';
import type { Executor } from '../../db/client.js';
import { fallbackKeys } from '../../db/schema/index.js';
import { ownedByPlaceholder, type Tenant } from '../../db/tenant.js';
import { withUpdatedAt } from '../../db/touch.js';

export type FallbackKeyRow = typeof fallbackKeys.$inferSelect;

export async function listFallbackKeys(
  ex: Executor,
  tenant: Tenant,
  provider?: string,
): Promise<FallbackKeyRow[]> {
  if (!provider) return allFallbackKeys(ex, tenant, {});
  return ex
    .select()
    .from(fallbackKeys)
    .where(tenant.where(fallbackKeys, eq(fallbackKeys.provider, provider)))
    .orderBy(asc(fallbackKeys.id));
}

/** Every call's configuration reads them all: built once. */
const allFallbackKeys = scopedStatement((ex) =>
  ex.select().from(fallbackKeys).where(ownedByPlaceholder(fallbackKeys)).orderBy(asc(fallbackKeys.id)),
);

export async function insertFallbackKey(
  ex: Executor,
  tenant: Tenant,
  values: {
    provider: string;
    name: string;
    apiKeySealed: string;
    enabled: boolean;
    concurrentLimit: number | null;
  },
): Promise<FallbackKeyRow | undefined> {
  const [row] = await ex
    .insert(fallbackKeys)
    .values({ ...values, organizationId: tenant.organizationId })
    .onConflictDoNothing()
    .returning();
  return row;
}

export async function updateFallbackKey(
  ex: Executor,
  tenant: Tenant,
  provider: string,
  id: number,
  changes: Partial<Pick<FallbackKeyRow, 'name' | 'apiKeySealed' | 'enabled' | 'concurrentLimit'>>,
): Promise<FallbackKeyRow | undefined> {
  const [row] = await ex
    .update(fallbackKeys)
    .set(withUpdatedAt(changes))
    .where(tenant.where(fallbackKeys, eq(fallbackKeys.provider, provider), eq(fallbackKeys.id, id)))
    .returning();
  return row;
}

export async function deleteFallbackKey(
  ex: Executor,
  tenant: Tenant,
  provider: string,
  id: number,
): Promise<boolean> {
  const rows = await ex
    .delete(fallbackKeys)
    .where(and(tenant.owns(fallbackKeys), eq(fallbackKeys.provider, provider), eq(fallbackKeys.id, id)))
    .returning({ id: fallbackKeys.id });
  return rows.length === 1;
}
