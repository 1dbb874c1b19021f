/**
 * SQL of a campaign's executions page and its progress. Every statement is scoped by the tenant and
 * the campaign, and walks the indexes the schema has: executions by (campaign_id, id), contacts by
 * (campaign_id, status, …), calls and contacts by primary key. The metrics come from
 * `store.metricsOf`, so the list, GET and progress always show the same figures.
 */
import { and, desc, eq, sql } from 'drizzle-orm';
import type { Executor } from '../../../db/client.js';
import {
  type CampaignStatus,
  calls,
  campaignContacts,
  campaignExecutions,
  campaigns,
  type ExecutionStatus,
} from '../../../db/schema/index.js';
import type { Tenant } from '../../../db/tenant.js';
import { offsetOf, type Page } from '../../../lib/page.js';
import { type CampaignMetrics, metricsOf, NO_METRICS } from '../store.js';

export interface ExecutionRow {
  id: number;
  contactId: number;
  contactName: string | null;
  contactPhone: string | null;
  status: ExecutionStatus;
  channel: 'call' | 'sms';
  attemptNumber: number;
  occurrence: number;
  callId: number | null;
  smsId: string | null;
  cost: number | null;
  executedAt: Date | null;
  finishedAt: Date | null;
  executionData: Record<string, unknown>;
  /** The linked call's duration (seconds), when the carrier reported one. */
  callDuration: number | null;
}

/** A page of the campaign's executions, newest first (id desc), and how many it has in all. */
export async function listExecutions(
  ex: Executor,
  tenant: Tenant,
  campaignId: number,
  page: Page,
): Promise<{ rows: ExecutionRow[]; total: number }> {
  const where = tenant.where(campaignExecutions, eq(campaignExecutions.campaignId, campaignId));
  // The joins repeat the tenant: a foreign key alone does not prove the row is the organization's.
  // The page is cut from the executions alone, then only its rows are joined: joining first would
  // join every execution of the campaign before the offset (400 ms deep into 100k rows, not 40).
  const pageOf = ex
    .select({
      id: campaignExecutions.id,
      organizationId: campaignExecutions.organizationId,
      contactId: campaignExecutions.contactId,
      status: campaignExecutions.status,
      channel: campaignExecutions.channel,
      attemptNumber: campaignExecutions.attemptNumber,
      occurrence: campaignExecutions.occurrence,
      callId: campaignExecutions.callId,
      smsId: campaignExecutions.smsId,
      cost: campaignExecutions.cost,
      executedAt: campaignExecutions.executedAt,
      finishedAt: campaignExecutions.finishedAt,
      executionData: campaignExecutions.executionData,
    })
    .from(campaignExecutions)
    .where(where)
    .orderBy(desc(campaignExecutions.id))
    .limit(page.perPage)
    .offset(offsetOf(page))
    .as('page');
  const [rows, [count]] = await Promise.all([
    ex
      .select({
        id: pageOf.id,
        contactId: pageOf.contactId,
        contactName: campaignContacts.name,
        contactPhone: campaignContacts.phoneNumber,
        status: pageOf.status,
        channel: pageOf.channel,
        attemptNumber: pageOf.attemptNumber,
        occurrence: pageOf.occurrence,
        callId: pageOf.callId,
        smsId: pageOf.smsId,
        cost: pageOf.cost,
        executedAt: pageOf.executedAt,
        finishedAt: pageOf.finishedAt,
        executionData: pageOf.executionData,
        callDuration: calls.duration,
      })
      .from(pageOf)
      .leftJoin(
        campaignContacts,
        and(
          eq(campaignContacts.id, pageOf.contactId),
          eq(campaignContacts.organizationId, pageOf.organizationId),
        ),
      )
      .leftJoin(calls, and(eq(calls.id, pageOf.callId), eq(calls.organizationId, pageOf.organizationId)))
      .orderBy(desc(pageOf.id)),
    ex.select({ n: sql<number>`count(*)::int` }).from(campaignExecutions).where(where),
  ]);
  return { rows, total: Number(count?.n ?? 0) };
}

export interface RecentActivity {
  executionId: number;
  contactPhone: string | null;
  status: ExecutionStatus;
  executedAt: Date | null;
  callId: number | null;
}

export interface ProgressRow {
  campaignId: number;
  status: CampaignStatus;
  startedAt: Date | null;
  completedAt: Date | null;
  lastUpdated: Date;
  contacts: {
    total: number;
    completed: number;
    failed: number;
    processing: number;
    pending: number;
    skipped: number;
    /** 100 × (completed + failed + skipped) / total, 2 decimals; 0 without contacts. */
    progressPercentage: number;
    /** 100 × completed / total, 2 decimals; 0 without contacts. */
    completionRate: number;
    /** Contacts completed or failed with at least one attempt (`attempts > 0`): the divisor of the cost estimate. */
    finishedWithExecution: number;
  };
  metrics: CampaignMetrics;
  /** actual_cost + (pending + processing) × actual_cost / finishedWithExecution, 4 decimals. */
  costEstimate: number;
  recentActivity: RecentActivity[];
}

export const RECENT_ACTIVITY_SIZE = 10;

const percentOfTotal = (part: ReturnType<typeof sql>) =>
  sql<number>`coalesce(round(100.0 * ${part} / nullif(count(*), 0), 2), 0)::float8`;
const contactsIn = (...statuses: string[]) =>
  sql`count(*) filter (where ${campaignContacts.status} in ${sql.raw(`(${statuses.map((s) => `'${s}'`).join(', ')})`)})`;

/** The campaign's progress, or undefined when the campaign is not the tenant's. */
export async function progressOf(
  ex: Executor,
  tenant: Tenant,
  campaignId: number,
): Promise<ProgressRow | undefined> {
  const byCampaign = (table: typeof campaignContacts | typeof campaignExecutions) =>
    tenant.where(table, eq(table.campaignId, campaignId));
  const [[campaign], [contacts], metrics, [executions], recent] = await Promise.all([
    ex
      .select({
        status: campaigns.status,
        startedAt: campaigns.startedAt,
        completedAt: campaigns.completedAt,
        updatedAt: campaigns.updatedAt,
      })
      .from(campaigns)
      .where(tenant.where(campaigns, eq(campaigns.id, campaignId))),
    // One pass over the campaign's contacts. A contact's `attempts` counts the executions the
    // executor made for it in the current run (it adds one with each), so `attempts > 0` is "has an
    // execution" without probing 100k executions (an EXISTS per contact cost 80–140 ms there).
    ex
      .select({
        total: sql<number>`count(*)::int`,
        completed: sql<number>`${contactsIn('completed')}::int`,
        failed: sql<number>`${contactsIn('failed')}::int`,
        processing: sql<number>`${contactsIn('in_progress')}::int`,
        pending: sql<number>`${contactsIn('pending')}::int`,
        skipped: sql<number>`${contactsIn('skipped')}::int`,
        progressPercentage: percentOfTotal(contactsIn('completed', 'failed', 'skipped')),
        completionRate: percentOfTotal(contactsIn('completed')),
        finishedWithExecution: sql<number>`(count(*) filter (where ${campaignContacts.status} in ('completed', 'failed') and ${campaignContacts.attempts} > 0))::int`,
      })
      .from(campaignContacts)
      .where(byCampaign(campaignContacts)),
    metricsOf(ex, tenant, [campaignId]),
    ex
      .select({ lastUpdated: sql<string | null>`max(${campaignExecutions.updatedAt})` })
      .from(campaignExecutions)
      .where(byCampaign(campaignExecutions)),
    recentActivity(ex, tenant, campaignId),
  ]);
  if (!campaign) return undefined;
  const counts = {
    total: 0,
    completed: 0,
    failed: 0,
    processing: 0,
    pending: 0,
    skipped: 0,
    progressPercentage: 0,
    completionRate: 0,
    finishedWithExecution: 0,
    ...(contacts ? mapValues(contacts, Number) : {}),
  };
  const measured = metrics.get(campaignId) ?? NO_METRICS;
  // A raw max() is not mapped by Drizzle: a string on node-postgres and on PGlite alike.
  const executionsUpdated = executions?.lastUpdated ? new Date(executions.lastUpdated) : null;
  return {
    campaignId,
    status: campaign.status,
    startedAt: campaign.startedAt,
    completedAt: campaign.completedAt,
    lastUpdated:
      executionsUpdated && executionsUpdated > campaign.updatedAt ? executionsUpdated : campaign.updatedAt,
    contacts: counts,
    metrics: measured,
    costEstimate: costEstimate(
      measured.actualCost,
      counts.pending + counts.processing,
      counts.finishedWithExecution,
    ),
    recentActivity: recent,
  };
}

/** The latest executions (by executed_at, or creation while not started; then id), joined to their contacts. */
async function recentActivity(ex: Executor, tenant: Tenant, campaignId: number): Promise<RecentActivity[]> {
  // The ten are picked from the executions alone; only they are joined to their contacts.
  const latest = ex
    .select({
      id: campaignExecutions.id,
      organizationId: campaignExecutions.organizationId,
      contactId: campaignExecutions.contactId,
      status: campaignExecutions.status,
      executedAt: campaignExecutions.executedAt,
      callId: campaignExecutions.callId,
      at: sql<Date>`coalesce(${campaignExecutions.executedAt}, ${campaignExecutions.createdAt})`.as('at'),
    })
    .from(campaignExecutions)
    .where(tenant.where(campaignExecutions, eq(campaignExecutions.campaignId, campaignId)))
    .orderBy(
      desc(sql`coalesce(${campaignExecutions.executedAt}, ${campaignExecutions.createdAt})`),
      desc(campaignExecutions.id),
    )
    .limit(RECENT_ACTIVITY_SIZE)
    .as('latest');
  return ex
    .select({
      executionId: latest.id,
      contactPhone: campaignContacts.phoneNumber,
      status: latest.status,
      executedAt: latest.executedAt,
      callId: latest.callId,
    })
    .from(latest)
    .leftJoin(
      campaignContacts,
      and(
        eq(campaignContacts.id, latest.contactId),
        eq(campaignContacts.organizationId, latest.organizationId),
      ),
    )
    .orderBy(desc(latest.at), desc(latest.id));
}

/**
 * What the campaign will have cost once the contacts still to go are done, if each costs what the
 * finished ones did on average: actual + remaining × actual / finished. Without a finished contact
 * there is no average, and the estimate is what was spent so far.
 */
export function costEstimate(actualCost: number, remaining: number, finished: number): number {
  if (finished === 0) return actualCost;
  return roundTo(actualCost + (remaining * actualCost) / finished, 4);
}

/** Rounds at `decimals`; the nudge of a few ulps keeps 1.005 from becoming 1.00 through binary error. */
export function roundTo(value: number, decimals: number): number {
  const factor = 10 ** decimals;
  return Math.round(value * factor * (1 + 4 * Number.EPSILON)) / factor;
}

function mapValues<T extends Record<string, unknown>, V>(object: T, fn: (value: unknown) => V) {
  return Object.fromEntries(Object.entries(object).map(([k, v]) => [k, fn(v)])) as { [K in keyof T]: V };
}
