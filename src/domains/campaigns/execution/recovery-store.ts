/**
 * SQL of the campaign sweep (recovery.ts): what it looks for on the whole platform, each row naming
 * its organization.
 */
import { and, eq, sql } from 'drizzle-orm';
import type { Executor } from '../../../db/client.js';
import {
  type CampaignStatus,
  campaignExecutions,
  campaignSchedules,
  campaigns,
} from '../../../db/schema/index.js';
import type { ExecutionRecord } from './store.js';

/**
 * Work the sweep looks for, on the whole platform (each row names its organization): schedules
 * that are due, running campaigns, attempts in flight with no news for `staleSeconds`, and
 * executions whose attempt job has not run for a while.
 */
export const sweepQueries = {
  async dueSchedules(ex: Executor): Promise<Array<{ campaignId: number; organizationId: number }>> {
    return ex
      .select({ campaignId: campaignSchedules.campaignId, organizationId: campaignSchedules.organizationId })
      .from(campaignSchedules)
      .where(sql`${campaignSchedules.nextRunAt} <= now()`);
  },

  async runningCampaigns(ex: Executor): Promise<Array<{ campaignId: number; organizationId: number }>> {
    return ex
      .select({ campaignId: campaigns.id, organizationId: campaigns.organizationId })
      .from(campaigns)
      .where(eq(campaigns.status, 'running' satisfies CampaignStatus));
  },

  async staleAttempts(ex: Executor, staleSeconds: number): Promise<ExecutionRecord[]> {
    return ex
      .select()
      .from(campaignExecutions)
      .where(
        and(
          eq(campaignExecutions.status, 'in_progress'),
          sql`coalesce(${campaignExecutions.checkedAt}, ${campaignExecutions.updatedAt}) < now() - make_interval(secs => ${staleSeconds}::float8)`,
        ),
      )
      .limit(500);
  },

  async waitingExecutions(ex: Executor, staleSeconds: number): Promise<ExecutionRecord[]> {
    return ex
      .select()
      .from(campaignExecutions)
      .innerJoin(campaigns, eq(campaigns.id, campaignExecutions.campaignId))
      .where(
        and(
          eq(campaignExecutions.status, 'pending'),
          eq(campaigns.status, 'running'),
          sql`${campaignExecutions.updatedAt} < now() - make_interval(secs => ${staleSeconds}::float8)`,
        ),
      )
      .limit(500)
      .then((rows) => rows.map((row) => row.campaign_executions));
  },
};
