/**
 * SQL of campaign schedules: the status move that guards every schedule change (a conditional
 * UPDATE, so the check and the change are one statement under the row lock), and the schedule row.
 */
import { eq, inArray } from 'drizzle-orm';
import type { Executor } from '../../../db/client.js';
import { type CampaignStatus, campaignSchedules, campaigns } from '../../../db/schema/index.js';
import type { Tenant } from '../../../db/tenant.js';
import { withUpdatedAt } from '../../../db/touch.js';

export type ScheduleRow = typeof campaignSchedules.$inferSelect;
export type ScheduleValues = Pick<
  typeof campaignSchedules.$inferInsert,
  'scheduleType' | 'scheduledAt' | 'timezone' | 'recurringConfig' | 'nextRunAt'
>;

/**
 * Sets the tenant's campaign `id` to `to` if its status is one of `from`; false when it is not (or
 * the campaign is not the tenant's). The row stays locked until the transaction ends, so concurrent
 * schedule changes of one campaign take turns.
 */
export async function moveStatus(
  ex: Executor,
  tenant: Tenant,
  id: number,
  from: readonly CampaignStatus[],
  to: CampaignStatus,
): Promise<boolean> {
  const rows = await ex
    .update(campaigns)
    .set(withUpdatedAt({ status: to }))
    .where(tenant.where(campaigns, eq(campaigns.id, id), inArray(campaigns.status, [...from])))
    .returning({ id: campaigns.id });
  return rows.length === 1;
}

export async function findSchedule(
  ex: Executor,
  tenant: Tenant,
  campaignId: number,
): Promise<ScheduleRow | undefined> {
  const [row] = await ex
    .select()
    .from(campaignSchedules)
    .where(tenant.where(campaignSchedules, eq(campaignSchedules.campaignId, campaignId)));
  return row;
}

/** Creates the campaign's schedule or replaces it (last_run_at, the history, is kept). */
export async function saveSchedule(
  ex: Executor,
  tenant: Tenant,
  campaignId: number,
  values: ScheduleValues,
): Promise<void> {
  await ex
    .insert(campaignSchedules)
    .values({ ...values, campaignId, organizationId: tenant.organizationId })
    .onConflictDoUpdate({
      target: campaignSchedules.campaignId,
      set: withUpdatedAt(values),
      // The campaign id came from a tenant-scoped UPDATE already; this keeps the row's owner fixed.
      setWhere: eq(campaignSchedules.organizationId, tenant.organizationId),
    });
}

/** Deletes the campaign's schedule; whether there was one. */
export async function deleteSchedule(ex: Executor, tenant: Tenant, campaignId: number): Promise<boolean> {
  const rows = await ex
    .delete(campaignSchedules)
    .where(tenant.where(campaignSchedules, eq(campaignSchedules.campaignId, campaignId)))
    .returning({ id: campaignSchedules.campaignId });
  return rows.length === 1;
}
