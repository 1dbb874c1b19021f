/**
 * SQL of campaigns: the campaign rows (with their assistant's name), their list with filters, the
 * metrics computed from contacts and executions, and the unfinished campaigns that use an assistant.
 */
import { and, asc, desc, eq, getTableColumns, ilike, inArray, ne, or, type SQL, sql } from 'drizzle-orm';
import type { Executor } from '../../db/client.js';
import {
  assistants,
  type CampaignStatus,
  type CampaignType,
  calls,
  campaignContacts,
  campaignExecutions,
  campaigns,
} from '../../db/schema/index.js';
import type { Tenant } from '../../db/tenant.js';
import { withUpdatedAt } from '../../db/touch.js';
import { offsetOf, type Page } from '../../lib/page.js';

export type CampaignRow = typeof campaigns.$inferSelect & { assistantName: string | null };
export type CampaignValues = Pick<
  typeof campaigns.$inferInsert,
  | 'name'
  | 'description'
  | 'campaignType'
  | 'assistantId'
  | 'welcomeMessageTemplate'
  | 'agendaTemplate'
  | 'endCallMessageTemplate'
  | 'smsMessageTemplate'
  | 'fallbackValues'
  | 'variableMappings'
  | 'maxAttempts'
  | 'retryDelayMinutes'
  | 'concurrencyLimit'
>;

export interface CampaignMetrics {
  /** 100 × completed / (completed + failed) contacts, 2 decimals; 0 when both are 0. */
  successRate: number;
  /** 100 × answered / finished call attempts, 2 decimals; 0 when there is no finished attempt. */
  answerRate: number;
  averageDurationSeconds: number;
  totalDurationSeconds: number;
  actualCost: number;
}

export const NO_METRICS: CampaignMetrics = {
  successRate: 0,
  answerRate: 0,
  averageDurationSeconds: 0,
  totalDurationSeconds: 0,
  actualCost: 0,
};

/** The statuses of a campaign that has not finished: it still needs its assistant. */
export const UNFINISHED_STATUSES = [
  'draft',
  'scheduled',
  'running',
  'paused',
] as const satisfies CampaignStatus[];

/** Call outcomes that count as an attempt for `answer_rate` (pending, in_progress and skipped do not). */
const FINISHED_CALL = sql.raw(`('completed', 'failed', 'no_answer', 'busy', 'voicemail')`);

// The assistant must also be of the campaign's organization: the foreign key alone does not say so.
const withAssistantName = { ...getTableColumns(campaigns), assistantName: assistants.name };

function selectWithAssistant(ex: Executor) {
  return ex
    .select(withAssistantName)
    .from(campaigns)
    .leftJoin(
      assistants,
      and(eq(assistants.id, campaigns.assistantId), eq(assistants.organizationId, campaigns.organizationId)),
    );
}

export async function findCampaign(
  ex: Executor,
  tenant: Tenant,
  id: number,
): Promise<CampaignRow | undefined> {
  const [row] = await selectWithAssistant(ex).where(tenant.where(campaigns, eq(campaigns.id, id)));
  return row;
}

/** The campaign's status, or undefined when it is not the tenant's. */
export async function statusOf(
  ex: Executor,
  tenant: Tenant,
  id: number,
): Promise<CampaignStatus | undefined> {
  const [row] = await ex
    .select({ status: campaigns.status })
    .from(campaigns)
    .where(tenant.where(campaigns, eq(campaigns.id, id)));
  return row?.status;
}

export interface CampaignFilters {
  status?: CampaignStatus;
  campaignType?: CampaignType;
  assistantId?: number;
  /** Matched, case-insensitively and literally, anywhere in the name or the description. */
  search?: string;
}

/** `%` and `_` in a search are literal characters, not wildcards. */
function containing(text: string): string {
  return `%${text.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}

/** A page of the organization's campaigns, newest first, and how many match in all. */
export async function listCampaigns(
  ex: Executor,
  tenant: Tenant,
  page: Page,
  filters: CampaignFilters,
): Promise<{ rows: CampaignRow[]; total: number }> {
  const pattern = filters.search === undefined ? undefined : containing(filters.search);
  const where = tenant.where(
    campaigns,
    filters.status === undefined ? undefined : eq(campaigns.status, filters.status),
    filters.campaignType === undefined ? undefined : eq(campaigns.campaignType, filters.campaignType),
    filters.assistantId === undefined ? undefined : eq(campaigns.assistantId, filters.assistantId),
    pattern === undefined
      ? undefined
      : (or(ilike(campaigns.name, pattern), ilike(campaigns.description, pattern)) as SQL),
  );
  const [rows, [count]] = await Promise.all([
    selectWithAssistant(ex)
      .where(where)
      .orderBy(desc(campaigns.id))
      .limit(page.perPage)
      .offset(offsetOf(page)),
    ex.select({ n: sql<number>`count(*)::int` }).from(campaigns).where(where),
  ]);
  return { rows, total: Number(count?.n ?? 0) };
}

/**
 * The metrics of the given campaigns (of the tenant), in two grouped statements: contacts by status
 * for `success_rate`, and executions (joined to their calls) for the rest. A duration is the call's
 * own (`calls.duration`, from the carrier) or else `execution_data.duration_seconds`; the average is
 * over the call attempts that lasted (duration > 0). A cost is the execution's, or else its call's.
 * Campaigns without contacts or executions get zeros.
 */
export async function metricsOf(
  ex: Executor,
  tenant: Tenant,
  ids: number[],
): Promise<Map<number, CampaignMetrics>> {
  const metrics = new Map<number, CampaignMetrics>(ids.map((id) => [id, { ...NO_METRICS }]));
  if (ids.length === 0) return metrics;
  const duration = sql`coalesce(${calls.duration}::numeric, case when jsonb_typeof(${campaignExecutions.executionData} -> 'duration_seconds') = 'number' then (${campaignExecutions.executionData} ->> 'duration_seconds')::numeric end)`;
  const isCall = sql`${campaignExecutions.channel} = 'call'`;
  const [contacts, executions] = await Promise.all([
    ex
      .select({
        campaignId: campaignContacts.campaignId,
        successRate: sql<number>`coalesce(round(100.0 * count(*) filter (where ${campaignContacts.status} = 'completed') / nullif(count(*) filter (where ${campaignContacts.status} in ('completed', 'failed')), 0), 2), 0)::float8`,
      })
      .from(campaignContacts)
      .where(tenant.where(campaignContacts, inArray(campaignContacts.campaignId, ids)))
      .groupBy(campaignContacts.campaignId),
    ex
      .select({
        campaignId: campaignExecutions.campaignId,
        answerRate: sql<number>`coalesce(round(100.0 * count(*) filter (where ${isCall} and ${campaignExecutions.status} = 'completed') / nullif(count(*) filter (where ${isCall} and ${campaignExecutions.status} in ${FINISHED_CALL}), 0), 2), 0)::float8`,
        totalDuration: sql<number>`coalesce(sum(${duration}) filter (where ${isCall}), 0)::float8`,
        averageDuration: sql<number>`coalesce(round(avg(${duration}) filter (where ${isCall} and ${duration} > 0), 2), 0)::float8`,
        actualCost: sql<number>`round(coalesce(sum(coalesce(${campaignExecutions.cost}, ${calls.cost})), 0), 4)::float8`,
      })
      .from(campaignExecutions)
      .leftJoin(
        calls,
        and(
          eq(calls.id, campaignExecutions.callId),
          eq(calls.organizationId, campaignExecutions.organizationId),
        ),
      )
      .where(tenant.where(campaignExecutions, inArray(campaignExecutions.campaignId, ids)))
      .groupBy(campaignExecutions.campaignId),
  ]);
  for (const row of contacts) {
    const entry = metrics.get(row.campaignId);
    if (entry) entry.successRate = Number(row.successRate);
  }
  for (const row of executions) {
    const entry = metrics.get(row.campaignId);
    if (!entry) continue;
    entry.answerRate = Number(row.answerRate);
    entry.totalDurationSeconds = Number(row.totalDuration);
    entry.averageDurationSeconds = Number(row.averageDuration);
    entry.actualCost = Number(row.actualCost);
  }
  return metrics;
}

export async function insertCampaign(
  ex: Executor,
  tenant: Tenant,
  values: CampaignValues & { createdByUserId: number; availableVariables: string[] },
): Promise<number> {
  const [row] = await ex
    .insert(campaigns)
    .values({ ...values, organizationId: tenant.organizationId })
    .returning({ id: campaigns.id });
  return row!.id;
}

/** Changes a campaign that is not running; false when none such is the tenant's. */
export async function updateIdleCampaign(
  ex: Executor,
  tenant: Tenant,
  id: number,
  changes: Partial<CampaignValues>,
): Promise<boolean> {
  const rows = await ex
    .update(campaigns)
    .set(withUpdatedAt(changes))
    .where(tenant.where(campaigns, eq(campaigns.id, id), ne(campaigns.status, 'running')))
    .returning({ id: campaigns.id });
  return rows.length === 1;
}

/** Deletes a campaign that is not running (its schedule, contacts and executions cascade). */
export async function deleteIdleCampaign(ex: Executor, tenant: Tenant, id: number): Promise<boolean> {
  const rows = await ex
    .delete(campaigns)
    .where(tenant.where(campaigns, eq(campaigns.id, id), ne(campaigns.status, 'running')))
    .returning({ id: campaigns.id });
  return rows.length === 1;
}

/** The unfinished campaigns (draft, scheduled, running, paused) of an assistant, for the 409 that protects it. */
export async function unfinishedCampaignsOfAssistant(
  ex: Executor,
  tenant: Tenant,
  assistantId: number,
): Promise<Array<{ id: number; name: string; status: CampaignStatus }>> {
  return ex
    .select({ id: campaigns.id, name: campaigns.name, status: campaigns.status })
    .from(campaigns)
    .where(
      tenant.where(
        campaigns,
        eq(campaigns.assistantId, assistantId),
        inArray(campaigns.status, UNFINISHED_STATUSES),
      ),
    )
    .orderBy(asc(campaigns.id));
}
