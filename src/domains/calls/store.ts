/** SQL of call records and their events. */
import { and, eq, sql } from 'drizzle-orm';
import type { Executor } from '../../db/client.js';
import { assistants, callEvents, calls } from '../../db/schema/index.js';
import type { Tenant } from '../../db/tenant.js';

export type CallRow = typeof calls.$inferSelect;
export type NewCall = Omit<typeof calls.$inferInsert, 'id' | 'organizationId' | 'createdAt' | 'updatedAt'>;

export async function insertCall(ex: Executor, tenant: Tenant, values: NewCall): Promise<CallRow> {
  const [row] = await ex
    .insert(calls)
    .values({ ...values, organizationId: tenant.organizationId })
    .returning();
  return row!;
}

/** Inserts a call the carrier announced, once per carrier call id; undefined when it exists. */
export async function insertCallOnce(
  ex: Executor,
  tenant: Tenant,
  values: NewCall,
): Promise<CallRow | undefined> {
  const [row] = await ex
    .insert(calls)
    .values({ ...values, organizationId: tenant.organizationId })
    .onConflictDoNothing({ target: [calls.provider, calls.callSid] })
    .returning();
  return row;
}

export async function findCall(
  ex: Executor,
  tenant: Tenant,
  id: number,
  options: { forUpdate?: boolean } = {},
): Promise<CallRow | undefined> {
  const query = ex
    .select()
    .from(calls)
    .where(tenant.where(calls, eq(calls.id, id)))
    .limit(1);
  const [row] = options.forUpdate ? await query.for('update') : await query;
  return row;
}

export async function updateCall(
  ex: Executor,
  tenant: Tenant,
  id: number,
  changes: Partial<Omit<CallRow, 'id' | 'organizationId' | 'createdAt'>>,
): Promise<CallRow | undefined> {
  const [row] = await ex
    .update(calls)
    .set({ ...changes, updatedAt: sql`now()` })
    .where(and(tenant.owns(calls), eq(calls.id, id)))
    .returning();
  return row;
}

/** Sets the carrier's call id unless a webhook that arrived first already did. */
export async function setCallSid(ex: Executor, tenant: Tenant, id: number, callSid: string): Promise<void> {
  await ex
    .update(calls)
    .set({ callSid, updatedAt: sql`now()` })
    .where(tenant.where(calls, eq(calls.id, id), sql`${calls.callSid} is null`));
}

export async function insertCallEvent(
  ex: Executor,
  tenant: Tenant,
  callId: number,
  type: string,
  data: Record<string, unknown> = {},
): Promise<void> {
  await ex.insert(callEvents).values({ organizationId: tenant.organizationId, callId, type, data });
}

/**
 * Carrier webhooks arrive before we know the organization: these lookups are platform-wide on
 * purpose, and only the webhook router uses them. What they find is trusted only after the webhook's
 * signature is verified with that organization's credentials.
 */
export const unscoped = {
  async callById(ex: Executor, id: number): Promise<CallRow | undefined> {
    const [row] = await ex.select().from(calls).where(eq(calls.id, id)).limit(1);
    return row;
  },

  async callBySid(ex: Executor, provider: string, callSid: string): Promise<CallRow | undefined> {
    const [row] = await ex
      .select()
      .from(calls)
      .where(and(eq(calls.provider, provider), eq(calls.callSid, callSid)))
      .limit(1);
    return row;
  },

  /** The organization an assistant belongs to, to tell "another organization's" (403) from "none" (404). */
  async assistantOrganization(ex: Executor, id: number): Promise<number | undefined> {
    const [row] = await ex
      .select({ organizationId: assistants.organizationId })
      .from(assistants)
      .where(eq(assistants.id, id))
      .limit(1);
    return row?.organizationId;
  },
};
