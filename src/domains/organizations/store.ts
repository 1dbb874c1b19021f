/** SQL of organizations as seen by their members. */
import { eq } from 'drizzle-orm';
import type { Executor } from '../../db/client.js';
import { organizations } from '../../db/schema/index.js';
import type { Tenant } from '../../db/tenant.js';

export type OrganizationRow = typeof organizations.$inferSelect;

/** The tenant's own organization row (the tenant is the organization itself). */
export async function findOwnOrganization(
  ex: Executor,
  tenant: Tenant,
): Promise<OrganizationRow | undefined> {
  const [row] = await ex
    .select()
    .from(organizations)
    .where(eq(organizations.id, tenant.organizationId))
    .limit(1);
  return row;
}
