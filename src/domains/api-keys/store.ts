/** SQL of user API keys. Every query is scoped to the owning user and the tenant. */
import { and, desc, eq, sql } from 'drizzle-orm';
import type { Executor } from '../../db/client.js';
import { apiKeys, memberships, users } from '../../db/schema/index.js';
import type { Tenant } from '../../db/tenant.js';
import { withUpdatedAt } from '../../db/touch.js';
import type { Permissions } from '../identity/principal.js';
import { type PrincipalRow, principalColumns } from '../identity/reads.js';

export type ApiKeyRow = typeof apiKeys.$inferSelect;

export async function listKeys(ex: Executor, tenant: Tenant, userId: number): Promise<ApiKeyRow[]> {
  return ex
    .select()
    .from(apiKeys)
    .where(tenant.where(apiKeys, eq(apiKeys.userId, userId)))
    .orderBy(desc(apiKeys.id));
}

export async function insertKey(
  ex: Executor,
  tenant: Tenant,
  values: {
    userId: number;
    name: string;
    keyPrefix: string;
    keyHash: string;
    permissions: Permissions;
    rateLimit: number | null;
  },
): Promise<ApiKeyRow> {
  const [row] = await ex
    .insert(apiKeys)
    .values({ ...values, organizationId: tenant.organizationId })
    .returning();
  return row!;
}

export async function updateKey(
  ex: Executor,
  tenant: Tenant,
  userId: number,
  keyId: number,
  changes: Partial<{ name: string; permissions: Permissions; rateLimit: number | null; isActive: boolean }>,
): Promise<ApiKeyRow | undefined> {
  const [row] = await ex
    .update(apiKeys)
    .set(withUpdatedAt(changes))
    .where(tenant.where(apiKeys, eq(apiKeys.id, keyId), eq(apiKeys.userId, userId)))
    .returning();
  return row;
}

export async function deleteKey(
  ex: Executor,
  tenant: Tenant,
  userId: number,
  keyId: number,
): Promise<boolean> {
  const rows = await ex
    .delete(apiKeys)
    .where(tenant.where(apiKeys, eq(apiKeys.id, keyId), eq(apiKeys.userId, userId)))
    .returning({ id: apiKeys.id });
  return rows.length === 1;
}

/**
 * The principal behind an active key: its owner, the key's organization and the owner's current
 * role there. This is how a request with only a key learns its tenant, so it is not tenant-scoped.
 */
export async function loadKeyPrincipal(
  ex: Executor,
  keyHash: string,
): Promise<
  | (PrincipalRow & {
      keyId: number;
      organizationId: number;
      permissions: Permissions;
      rateLimit: number | null;
    })
  | undefined
> {
  const [row] = await ex
    .select({
      ...principalColumns,
      keyId: apiKeys.id,
      organizationId: apiKeys.organizationId,
      permissions: apiKeys.permissions,
      rateLimit: apiKeys.rateLimit,
    })
    .from(apiKeys)
    .innerJoin(users, eq(users.id, apiKeys.userId))
    .innerJoin(
      memberships,
      and(eq(memberships.userId, apiKeys.userId), eq(memberships.organizationId, apiKeys.organizationId)),
    )
    .where(and(eq(apiKeys.keyHash, keyHash), eq(apiKeys.isActive, true)))
    .limit(1);
  return row;
}

/** Adds batched usage: `uses` requests per key, the latest at `lastUsedAt`. */
export async function addUsage(
  ex: Executor,
  usage: Array<{ keyId: number; uses: number; lastUsedAt: Date }>,
): Promise<void> {
  if (usage.length === 0) return;
  const ids = `{${usage.map((u) => u.keyId).join(',')}}`;
  const counts = `{${usage.map((u) => u.uses).join(',')}}`;
  const times = `{${usage.map((u) => `"${u.lastUsedAt.toISOString()}"`).join(',')}}`;
  await ex.execute(sql`
    update api_keys as k
    set usage_count = k.usage_count + v.uses,
        last_used_at = greatest(k.last_used_at, v.last_used_at)
    from unnest(${ids}::int[], ${counts}::int[], ${times}::timestamptz[]) as v(id, uses, last_used_at)
    where k.id = v.id`);
}
