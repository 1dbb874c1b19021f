/**
 * Tenant isolation lives here. Every store function that reads or writes an organization-owned table
 * takes a `Tenant` (built only from the authenticated principal) and filters with `tenant.owns(table)`;
 * a row of another organization is then indistinguishable from a missing one.
 */
import { and, eq, type SQL } from 'drizzle-orm';
import type { PgColumn } from 'drizzle-orm/pg-core';

interface OrganizationOwned {
  organizationId: PgColumn;
}

export class Tenant {
  constructor(readonly organizationId: number) {}

  /** The predicate that restricts `table` to this organization's rows. */
  owns(table: OrganizationOwned): SQL {
    return eq(table.organizationId, this.organizationId);
  }

  /** `owns(table)` combined with further conditions. */
  where(table: OrganizationOwned, ...conditions: Array<SQL | undefined>): SQL {
    return and(this.owns(table), ...conditions) as SQL;
  }
}
