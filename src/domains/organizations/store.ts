/** SQL of organizations as seen by their members, and of their stored credentials. */
import { and, asc, eq, isNull, sql } from 'drizzle-orm';
import { scopedStatement } from '../../db/built.js';
import type { Executor } from '../../db/client.js';
import { organizations, providerCredentials } from '../../db/schema/index.js';
import { ORGANIZATION_PLACEHOLDER, ownedByPlaceholder, type Tenant } from '../../db/tenant.js';
import { withUpdatedAt } from '../../db/touch.js';

export type OrganizationRow = typeof organizations.$inferSelect;
export type CredentialRow = typeof providerCredentials.$inferSelect;

/**
 * The tenant's own organization row (the tenant is the organization itself). With `forUpdate` the
 * row stays locked until the transaction ends, for read-merge-write updates.
 */
export async function findOwnOrganization(
  ex: Executor,
  tenant: Tenant,
  options: { forUpdate?: boolean } = {},
): Promise<OrganizationRow | undefined> {
  if (!options.forUpdate) {
    const [row] = await organizationRead(ex, tenant, {});
    return row;
  }
  const query = ex.select().from(organizations).where(eq(organizations.id, tenant.organizationId)).limit(1);
  const [row] = await query.for('update');
  return row;
}

const organizationRead = scopedStatement((ex) =>
  ex
    .select()
    .from(organizations)
    .where(eq(organizations.id, sql.placeholder(ORGANIZATION_PLACEHOLDER)))
    .limit(1),
);

export async function insertOrganization(
  ex: Executor,
  values: { name: string; slug: string; description?: string | null; domain?: string | null },
): Promise<OrganizationRow | undefined> {
  const [row] = await ex
    .insert(organizations)
    .values(values)
    .onConflictDoNothing({ target: organizations.slug })
    .returning();
  return row;
}

export async function updateOrganization(
  ex: Executor,
  tenant: Tenant,
  changes: Partial<Pick<OrganizationRow, 'name' | 'settings' | 'sipTrunkConfig' | 'concurrencySettings'>>,
): Promise<OrganizationRow | undefined> {
  const [row] = await ex
    .update(organizations)
    .set(withUpdatedAt(changes))
    .where(eq(organizations.id, tenant.organizationId))
    .returning();
  return row;
}

export async function listCredentials(ex: Executor, tenant: Tenant): Promise<CredentialRow[]> {
  return credentialsRead(ex, tenant, {});
}

const credentialsRead = scopedStatement((ex) =>
  ex.select().from(providerCredentials).where(ownedByPlaceholder(providerCredentials)),
);

export async function upsertCredential(ex: Executor, tenant: Tenant, provider: string, sealed: string) {
  await ex
    .insert(providerCredentials)
    .values({ organizationId: tenant.organizationId, provider, sealed })
    .onConflictDoUpdate({
      target: [providerCredentials.organizationId, providerCredentials.provider],
      set: withUpdatedAt({ sealed }),
    });
}

export async function deleteCredential(ex: Executor, tenant: Tenant, provider: string): Promise<void> {
  await ex
    .delete(providerCredentials)
    .where(tenant.where(providerCredentials, eq(providerCredentials.provider, provider)));
}

// ---- the organization's webhook signing secret (made and rotated by the webhooks domain) ----

/** The organization's sealed webhook secret, or null when none was made yet. */
export async function findSealedWebhookSecret(ex: Executor, tenant: Tenant): Promise<string | null> {
  const [row] = await ex
    .select({ sealed: organizations.webhookSecretSealed })
    .from(organizations)
    .where(eq(organizations.id, tenant.organizationId))
    .limit(1);
  return row?.sealed ?? null;
}

/** Stores `sealed` only if the organization has no secret yet; true when it was stored. */
export async function storeWebhookSecretIfMissing(
  ex: Executor,
  tenant: Tenant,
  sealed: string,
): Promise<boolean> {
  const rows = await ex
    .update(organizations)
    .set({ webhookSecretSealed: sealed })
    .where(and(eq(organizations.id, tenant.organizationId), isNull(organizations.webhookSecretSealed)))
    .returning({ id: organizations.id });
  return rows.length === 1;
}

/** Replaces the organization's secret; false when the organization does not exist. */
export async function replaceWebhookSecret(ex: Executor, tenant: Tenant, sealed: string): Promise<boolean> {
  const rows = await ex
    .update(organizations)
    .set({ webhookSecretSealed: sealed })
    .where(eq(organizations.id, tenant.organizationId))
    .returning({ id: organizations.id });
  return rows.length === 1;
}

/**
 * Every organization whose SIP trunk names a `sip_domain`, platform-wide: for the SIP agent's trunk
 * upkeep (pings, registrations), which serves all of them and has no principal.
 */
export async function organizationsWithTrunkOnPlatform(ex: Executor): Promise<number[]> {
  const rows = await ex
    .select({ id: organizations.id })
    .from(organizations)
    .where(sql`coalesce(${organizations.sipTrunkConfig} ->> 'sip_domain', '') <> ''`)
    .orderBy(asc(organizations.id));
  return rows.map((row) => row.id);
}
