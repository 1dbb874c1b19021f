/**
 * The `campaign.wakeup` and `campaign.dispatch` jobs: a schedule's time comes or retries fall due,
 * and due contacts are handed to attempts within the campaign's and the organization's limits (see
 * executor.ts for the whole run and the lock order).
 */
import type { Db } from '../../../db/client.js';
import { Tenant } from '../../../db/tenant.js';
import type { JobQueue } from '../../../queue/queue.js';
import type { BillingService } from '../../billing/service.js';
import { announceProgress } from '../events.js';
import { beginOccurrence, dispatchSoon, failCampaign, finishOccurrence } from './occurrence.js';
import type { CampaignSenders } from './sender.js';
import * as store from './store.js';

/** Computes the next run of a schedule (recurrence.ts); injected so the executor stays testable. */
export type NextRun = (
  schedule: {
    scheduleType: 'scheduled' | 'recurring';
    scheduledAt: Date | null;
    timezone: string;
    recurringConfig: Record<string, unknown> | null;
  },
  after: Date,
) => Date | null;

export interface ExecutorOptions {
  /** Attempts in flight per organization, over all its campaigns. */
  organizationConcurrency: number;
}

export interface DispatchDeps {
  db: Db;
  queue: JobQueue;
  billing: BillingService;
  senders: CampaignSenders;
  nextRunAfter: NextRun;
  options: ExecutorOptions;
}

/** `campaign.wakeup`: a schedule's time has come, or retries are due. Harmless when early. */
export async function runWakeup(
  deps: DispatchDeps,
  payload: { campaign_id: number; organization_id: number },
): Promise<void> {
  const tenant = new Tenant(payload.organization_id);
  await deps.queue.retryingTransaction(async (tx, jobs) => {
    const campaign = await store.lockCampaign(tx, tenant, payload.campaign_id);
    if (!campaign) return;
    const schedule = await store.findSchedule(tx, tenant, campaign.id);
    const now = new Date();
    if (schedule?.nextRunAt && schedule.nextRunAt <= now) {
      const next =
        schedule.scheduleType === 'recurring'
          ? deps.nextRunAfter(
              {
                scheduleType: schedule.scheduleType,
                scheduledAt: schedule.scheduledAt,
                timezone: schedule.timezone,
                recurringConfig: schedule.recurringConfig,
              },
              now,
            )
          : null;
      await store.updateSchedule(tx, tenant, campaign.id, { nextRunAt: next, lastRunAt: now });
      if (next) {
        await jobs.enqueue('campaign.wakeup', payload, {
          startAfterSeconds: Math.max(1, (next.getTime() - now.getTime()) / 1000),
        });
      }
      // An occurrence that comes while the previous one still runs (or is paused) is skipped.
      if (campaign.status === 'scheduled') {
        await beginOccurrence(tx, tenant, campaign);
        campaign.status = 'running';
        await announceProgress(tx, tenant.organizationId, campaign.id);
      }
    }
    if (campaign.status === 'running') await dispatchSoon(jobs, tenant, campaign.id);
  });
}

/** `campaign.dispatch`: hands due contacts to attempts within the limits (see executor.ts). */
export async function runDispatch(
  deps: DispatchDeps,
  payload: { campaign_id: number; organization_id: number },
): Promise<void> {
  const tenant = new Tenant(payload.organization_id);
  const id = payload.campaign_id;
  const peek = await store.findCampaignRecord(deps.db, tenant, id);
  if (peek?.status !== 'running') return;
  // Looked up before the transaction (they read settings and credentials), checked inside it.
  const sender = await deps.senders.of(tenant, peek);
  const wallet = await deps.billing.wallet(tenant);
  await deps.queue.retryingTransaction(async (tx, jobs) => {
    await store.lockOrganizationDispatch(tx, tenant);
    const campaign = await store.lockCampaign(tx, tenant, id);
    if (campaign?.status !== 'running') return;
    const outlook = await store.contactOutlook(tx, tenant, id);
    if (outlook.unfinished === 0) {
      await finishOccurrence(tx, tenant, campaign);
      return;
    }
    if (outlook.dueNow === 0) return; // retries wait for their wakeup
    if ('reason' in sender) {
      await failCampaign(tx, tenant, campaign, sender.reason);
      return;
    }
    if (!(wallet.balance > 0)) {
      await store.updateCampaign(tx, tenant, id, {
        status: 'paused',
        failureReason: 'Insufficient balance: add credits, then start the campaign again to resume',
      });
      await announceProgress(tx, tenant.organizationId, id);
      return;
    }
    const flight = await store.inFlight(tx, tenant, id);
    const slots = Math.min(
      campaign.concurrencyLimit - flight.campaign,
      deps.options.organizationConcurrency - flight.organization,
    );
    const claimed = await store.claimDueContacts(tx, tenant, campaign, slots);
    for (const executionId of claimed)
      await jobs.enqueue('campaign.attempt', {
        execution_id: executionId,
        organization_id: tenant.organizationId,
      });
    if (claimed.length > 0) await announceProgress(tx, tenant.organizationId, id);
  });
}
