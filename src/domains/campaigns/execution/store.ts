/**
 * SQL of the campaign executor: an attempt's rows read and locked by id (row-reads.ts, in the order
 * executor.ts lays down), counting attempts in flight, claiming due contacts into execution rows (one
 * statement, so a contact and its attempt number move together), claiming an execution before it
 * runs, and settling an attempt's contact.
 *
 * Row locks are FOR NO KEY UPDATE — what an UPDATE of these rows takes anyway, as no key ever
 * changes — rather than FOR UPDATE, which would also block the FOR KEY SHARE that PostgreSQL's
 * foreign-key checks take on a campaign or contact whenever an execution row is written.
 */
import { and, asc, eq, inArray, or, sql } from 'drizzle-orm';
import { scopedStatement } from '../../../db/built.js';
import type { Executor } from '../../../db/client.js';
import {
  type ContactStatus,
  campaignContacts,
  campaignExecutions,
  campaignSchedules,
  campaigns,
  type ExecutionStatus,
} from '../../../db/schema/index.js';
import { ownedByPlaceholder, type Tenant } from '../../../db/tenant.js';
import { withUpdatedAt } from '../../../db/touch.js';
import { progressAnnouncement } from '../events.js';
import type { CampaignRecord, ExecutionRecord } from './row-reads.js';

export {
  attemptRows,
  type CampaignRecord,
  type ContactRecord,
  type ExecutionRecord,
  executionOf,
  findCampaignRecord,
  findContact,
  findExecution,
  lockAttempt,
  lockCampaign,
  shareCampaign,
} from './row-reads.js';

export type ScheduleRecord = typeof campaignSchedules.$inferSelect;

/** Attempts that hold a slot of the campaign's and the organization's concurrency. */
export const IN_FLIGHT: ExecutionStatus[] = ['pending', 'in_progress'];

function rowsOf<T>(result: unknown): T[] {
  return (result as { rows: T[] }).rows;
}

export async function updateCampaign(
  ex: Executor,
  tenant: Tenant,
  id: number,
  changes: Partial<Omit<CampaignRecord, 'id' | 'organizationId' | 'createdAt'>>,
): Promise<void> {
  await ex
    .update(campaigns)
    .set(withUpdatedAt(changes))
    .where(tenant.where(campaigns, eq(campaigns.id, id)));
}

/** The update that counts a finished contact in its campaign's counters (of the current occurrence). */
function finishedContactCount(ex: Executor, tenant: Tenant, id: number, outcome: 'completed' | 'failed') {
  const column = outcome === 'completed' ? campaigns.completedContacts : campaigns.failedContacts;
  return ex
    .update(campaigns)
    .set({ [outcome === 'completed' ? 'completedContacts' : 'failedContacts']: sql`${column} + 1` })
    .where(tenant.where(campaigns, eq(campaigns.id, id)));
}

/**
 * Serialises dispatching within one organization (its concurrency limit spans its campaigns):
 * a transaction-scoped advisory lock, released at commit.
 */
export async function lockOrganizationDispatch(ex: Executor, tenant: Tenant): Promise<void> {
  await ex.execute(
    sql`select pg_advisory_xact_lock(hashtext('campaign-dispatch'), ${tenant.organizationId})`,
  );
}

/** Attempts in flight for the campaign and for the whole organization. */
export async function inFlight(
  ex: Executor,
  tenant: Tenant,
  campaignId: number,
): Promise<{ campaign: number; organization: number }> {
  const [row] = await ex
    .select({
      campaign: sql<number>`count(*) filter (where ${campaignExecutions.campaignId} = ${campaignId})::int`,
      organization: sql<number>`count(*)::int`,
    })
    .from(campaignExecutions)
    .where(tenant.where(campaignExecutions, inArray(campaignExecutions.status, IN_FLIGHT)));
  return { campaign: Number(row?.campaign ?? 0), organization: Number(row?.organization ?? 0) };
}

/** Where the campaign's contacts stand: unfinished now, and the next retry time among the waiting. */
export async function contactOutlook(
  ex: Executor,
  tenant: Tenant,
  campaignId: number,
): Promise<{ unfinished: number; dueNow: number; nextRetryAt: Date | null }> {
  const [row] = await ex
    .select({
      unfinished: sql<number>`count(*) filter (where ${campaignContacts.status} in ('pending', 'in_progress'))::int`,
      dueNow: sql<number>`count(*) filter (where ${campaignContacts.status} = 'pending' and (${campaignContacts.nextAttemptAt} is null or ${campaignContacts.nextAttemptAt} <= now()))::int`,
      nextRetryAt: sql<
        string | null
      >`min(${campaignContacts.nextAttemptAt}) filter (where ${campaignContacts.status} = 'pending' and ${campaignContacts.nextAttemptAt} > now())`,
    })
    .from(campaignContacts)
    .where(tenant.where(campaignContacts, eq(campaignContacts.campaignId, campaignId)));
  return {
    unfinished: Number(row?.unfinished ?? 0),
    dueNow: Number(row?.dueNow ?? 0),
    nextRetryAt: row?.nextRetryAt ? new Date(row.nextRetryAt) : null,
  };
}

/**
 * Claims up to `limit` due contacts (pending, retry time reached; oldest due first) and creates one
 * pending execution for each, numbered with the contact's attempt counter — in one statement, so a
 * contact never gets two rows for one attempt number (the unique index would refuse it anyway).
 * Contacts another dispatch holds are skipped. A mixed campaign's attempts after `max_attempts`
 * calls are the SMS. Returns the new executions' ids.
 */
export async function claimDueContacts(
  ex: Executor,
  tenant: Tenant,
  campaign: Pick<CampaignRecord, 'id' | 'campaignType' | 'maxAttempts' | 'currentOccurrence'>,
  limit: number,
): Promise<number[]> {
  if (limit <= 0) return [];
  const channel =
    campaign.campaignType === 'sms'
      ? sql`'sms'`
      : campaign.campaignType === 'call'
        ? sql`'call'`
        : sql`case when claimed.attempts > ${campaign.maxAttempts} then 'sms' else 'call' end`;
  const result = await ex.execute(sql`
    with due as (
      select id from campaign_contacts
      where organization_id = ${tenant.organizationId} and campaign_id = ${campaign.id}
        and status = 'pending' and (next_attempt_at is null or next_attempt_at <= now())
      order by next_attempt_at asc nulls first, id
      limit ${limit}
      for update skip locked
    ), claimed as (
      update campaign_contacts c
      set status = 'in_progress', attempts = c.attempts + 1, occurrence = ${campaign.currentOccurrence},
          next_attempt_at = null, updated_at = now()
      from due where c.id = due.id
      returning c.id, c.attempts
    )
    insert into campaign_executions
      (organization_id, campaign_id, contact_id, attempt_number, occurrence, channel, status, execution_data)
    select ${tenant.organizationId}, ${campaign.id}, claimed.id, claimed.attempts, ${campaign.currentOccurrence},
      ${channel}, 'pending',
      case when claimed.attempts > 1 then jsonb_build_object('retry_reason', (
        select 'previous attempt ' || e.status from campaign_executions e
        where e.contact_id = claimed.id and e.occurrence = ${campaign.currentOccurrence}
        order by e.attempt_number desc limit 1)) else '{}'::jsonb end
    from claimed
    returning id`);
  return rowsOf<{ id: number }>(result).map((row) => Number(row.id));
}

/** The campaign's executions still waiting for their attempt job (to hand out again on resume). */
export async function pendingExecutions(ex: Executor, tenant: Tenant, campaignId: number): Promise<number[]> {
  const rows = await ex
    .select({ id: campaignExecutions.id })
    .from(campaignExecutions)
    .where(
      tenant.where(
        campaignExecutions,
        eq(campaignExecutions.campaignId, campaignId),
        eq(campaignExecutions.status, 'pending'),
      ),
    );
  return rows.map((row) => row.id);
}

/**
 * The executions whose attempts are these messages (those that are one), not locked, ordered by
 * campaign and contact: settling them in that order takes their locks in one order everywhere.
 */
export async function executionsOfMessages(
  ex: Executor,
  tenant: Tenant,
  messageIds: string[],
): Promise<ExecutionRecord[]> {
  if (messageIds.length === 0) return [];
  return ex
    .select()
    .from(campaignExecutions)
    .where(tenant.where(campaignExecutions, inArray(campaignExecutions.smsId, messageIds)))
    .orderBy(
      asc(campaignExecutions.campaignId),
      asc(campaignExecutions.contactId),
      asc(campaignExecutions.id),
    );
}

/**
 * pending → in_progress, once: the attempt that wins this update is the only one that runs.
 * `whileRunning`: only while the execution's campaign runs — the campaign share-locked and read by
 * the subquery, which runs before the execution's row is locked (the lock order), so a claim and a
 * pause or stop take turns in one statement. Undefined when the claim did not happen.
 */
export async function claimExecution(
  ex: Executor,
  tenant: Tenant,
  execution: { id: number; campaignId: number },
  options: { whileRunning: boolean },
): Promise<ExecutionRecord | undefined> {
  const running = sql`(select ${campaigns.status} from ${campaigns}
    where ${campaigns.organizationId} = ${tenant.organizationId} and ${campaigns.id} = ${execution.campaignId}
    for share) = 'running'`;
  const [row] = await ex
    .update(campaignExecutions)
    .set(withUpdatedAt({ status: 'in_progress', executedAt: sql`now()` }))
    .where(
      tenant.where(
        campaignExecutions,
        eq(campaignExecutions.id, execution.id),
        eq(campaignExecutions.status, 'pending'),
        options.whileRunning ? running : undefined,
      ),
    )
    .returning();
  return row;
}

/**
 * Changes an execution; `announceFor`: the campaign whose progress the change announces, with it
 * (events.ts) — the execution must exist, as the announcement is made for the row updated.
 */
export async function updateExecution(
  ex: Executor,
  tenant: Tenant,
  id: number,
  changes: Partial<Omit<ExecutionRecord, 'id' | 'organizationId' | 'createdAt'>>,
  announceFor?: number,
): Promise<void> {
  const update = ex
    .update(campaignExecutions)
    .set(withUpdatedAt(changes))
    .where(tenant.where(campaignExecutions, eq(campaignExecutions.id, id)));
  if (announceFor === undefined) await update;
  else await update.returning({ announced: progressAnnouncement(tenant.organizationId, announceFor) });
}

/**
 * Moves a contact on; `countedIn`: the campaign whose counters count the contact finished (completed
 * or failed), in the same statement.
 */
export async function updateContact(
  ex: Executor,
  tenant: Tenant,
  id: number,
  changes: { status: ContactStatus; nextAttemptAt?: Date | null },
  countedIn?: number,
): Promise<void> {
  const update = ex
    .update(campaignContacts)
    .set(withUpdatedAt(changes))
    .where(tenant.where(campaignContacts, eq(campaignContacts.id, id)));
  const { status } = changes;
  if (countedIn === undefined || (status !== 'completed' && status !== 'failed')) {
    await update;
    return;
  }
  const counted = finishedContactCount(ex, tenant, countedIn, status);
  await ex.execute(sql`with moved as (${update.getSQL()}) ${counted.getSQL()}`);
}

/** A new occurrence: every contact waits again, with no attempt made in it yet. */
export async function resetContacts(
  ex: Executor,
  tenant: Tenant,
  campaignId: number,
  occurrence: number,
): Promise<void> {
  await ex
    .update(campaignContacts)
    .set(withUpdatedAt({ status: 'pending', attempts: 0, nextAttemptAt: null, occurrence }))
    .where(tenant.where(campaignContacts, eq(campaignContacts.campaignId, campaignId)));
}

/**
 * Stop: waiting contacts and executions not yet started are skipped (attempts already under way
 * finish, with no retry) — contacts first, then executions, the order of every campaign
 * transaction. The caller holds the campaign, so no execution is claimed or created meanwhile.
 * Returns how many contacts were skipped.
 */
export async function skipWaiting(ex: Executor, tenant: Tenant, campaignId: number): Promise<number> {
  const notStarted = and(
    tenant.owns(campaignExecutions),
    eq(campaignExecutions.campaignId, campaignId),
    eq(campaignExecutions.status, 'pending'),
  );
  // A contact claimed by a dispatch is `in_progress` while its execution waits for its job.
  const held = ex
    .select({ contactId: campaignExecutions.contactId })
    .from(campaignExecutions)
    .where(notStarted);
  const skipped = await ex
    .update(campaignContacts)
    .set(withUpdatedAt({ status: 'skipped', nextAttemptAt: null }))
    .where(
      tenant.where(
        campaignContacts,
        eq(campaignContacts.campaignId, campaignId),
        or(eq(campaignContacts.status, 'pending'), inArray(campaignContacts.id, held)),
      ),
    )
    .returning({ id: campaignContacts.id });
  await ex
    .update(campaignExecutions)
    .set(
      withUpdatedAt({
        status: 'skipped',
        finishedAt: sql`now()`,
        executionData: sql`${campaignExecutions.executionData} || '{"error_details": "The campaign was stopped before this attempt started"}'::jsonb`,
      }),
    )
    .where(notStarted);
  return skipped.length;
}

export async function findSchedule(
  ex: Executor,
  tenant: Tenant,
  campaignId: number,
): Promise<ScheduleRecord | undefined> {
  const [row] = await ex
    .select()
    .from(campaignSchedules)
    .where(tenant.where(campaignSchedules, eq(campaignSchedules.campaignId, campaignId)));
  return row;
}

export async function updateSchedule(
  ex: Executor,
  tenant: Tenant,
  campaignId: number,
  changes: { nextRunAt?: Date | null; lastRunAt?: Date },
): Promise<void> {
  await ex
    .update(campaignSchedules)
    .set(withUpdatedAt(changes))
    .where(tenant.where(campaignSchedules, eq(campaignSchedules.campaignId, campaignId)));
}

/** The running campaigns of the organization (to dispatch when one of its slots frees up). */
export async function runningCampaigns(ex: Executor, tenant: Tenant): Promise<number[]> {
  const rows = await runningCampaignsStatement(ex, tenant, {});
  return rows.map((row) => row.id);
}

const runningCampaignsStatement = scopedStatement((ex) =>
  ex
    .select({ id: campaigns.id })
    .from(campaigns)
    .where(and(ownedByPlaceholder(campaigns), eq(campaigns.status, 'running')))
    // One order for every transaction that enqueues their dispatches: each dispatch is unique per
    // campaign while it waits, so two transactions enqueueing the same ones wait on each other.
    .orderBy(asc(campaigns.id)),
);
