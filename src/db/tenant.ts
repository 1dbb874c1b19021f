/**
 * Tenant isolation lives here. Every store function that reads or writes an organization-owned table
 * takes a `Tenant` (built only from the authenticated principal) and filters with `tenant.owns(table)`;
 * a row of another organization is then indistinguishable from a missing one. A statement built once
 * (db/built.ts) filters with `ownedByPlaceholder(table)` instead, and is run only with a Tenant,
 * which fills the placeholder.
 */
import { and, eq, type SQL, sql } from 'drizzle-orm';
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

  /**
   * `owns(table)` for a walk along an index led by `organization_id`, in that index's order: the
   * caller orders by `organization_id` then the index's next column. Written as `= any(array[…])`
   * because the planner drops a column equal to a constant from ORDER BY, and would then walk any
   * index on the next column alone (the primary key, say) through every organization's rows.
   */
  ownsAlongIndex(table: OrganizationOwned): SQL {
    return sql`${table.organizationId} = any(array[${this.organizationId}]::integer[])`;
  }

  /** `owns(table)` combined with further conditions. */
  where(table: OrganizationOwned, ...conditions: Array<SQL | undefined>): SQL {
    return and(this.owns(table), ...conditions) as SQL;
  }
}

/** The placeholder naming the organization in a statement built once (db/built.ts fills it). */
export const ORGANIZATION_PLACEHOLDER = 'organizationId';

/** `Tenant.owns(table)` for a statement built once: the organization is filled in at each use. */
export function ownedByPlaceholder(table: OrganizationOwned): SQL {
  return eq(table.organizationId, sql.placeholder(ORGANIZATION_PLACEHOLDER));
}
