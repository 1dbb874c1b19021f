/**
 * A campaign's run as a whole: an occurrence begins (every contact waiting again when the campaign
 * ran before), finishes (completed, or scheduled again), or the campaign fails; and a dispatch is
 * asked for. Shared by the moves, the jobs and the settlement of attempts, each inside its own
 * transaction, which holds the campaign's row lock already (the lock order is in executor.ts).
 */
import type { Executor } from '../../../db/client.js';
import type { Tenant } from '../../../db/tenant.js';
import type { JobEnqueuer } from '../../../queue/queue.js';
import { announceProgress } from '../events.js';
import * as store from './store.js';

/** Running again: a campaign that ran before starts a new occurrence with every contact waiting. */
export async function beginOccurrence(
  tx: Executor,
  tenant: Tenant,
  campaign: store.CampaignRecord,
): Promise<void> {
  const again = campaign.startedAt !== null;
  const occurrence = again ? campaign.currentOccurrence + 1 : campaign.currentOccurrence;
  if (again) await store.resetContacts(tx, tenant, campaign.id, occurrence);
  await store.updateCampaign(tx, tenant, campaign.id, {
    status: 'running',
    startedAt: campaign.startedAt ?? new Date(),
    completedAt: null,
    failureReason: null,
    currentOccurrence: occurrence,
    ...(again ? { completedContacts: 0, failedContacts: 0 } : {}),
  });
}

/** The occurrence is over: `completed`, or back to `scheduled` when a recurring schedule has more. */
export async function finishOccurrence(
  tx: Executor,
  tenant: Tenant,
  campaign: store.CampaignRecord,
): Promise<void> {
  const schedule = await store.findSchedule(tx, tenant, campaign.id);
  const more = schedule?.scheduleType === 'recurring' && schedule.nextRunAt !== null;
  await store.updateCampaign(
    tx,
    tenant,
    campaign.id,
    more ? { status: 'scheduled' } : { status: 'completed', completedAt: new Date() },
  );
  await announceProgress(tx, tenant.organizationId, campaign.id);
}

/** The campaign cannot go on: `failed` with the reason, its schedule ended, waiting contacts skipped. */
export async function failCampaign(
  tx: Executor,
  tenant: Tenant,
  campaign: store.CampaignRecord,
  reason: string,
): Promise<void> {
  await store.updateCampaign(tx, tenant, campaign.id, {
    status: 'failed',
    failureReason: reason,
    completedAt: new Date(),
  });
  await store.updateSchedule(tx, tenant, campaign.id, { nextRunAt: null });
  await store.skipWaiting(tx, tenant, campaign.id);
  await announceProgress(tx, tenant.organizationId, campaign.id);
}

/** Enqueues the campaign's dispatch, unless one waits already (one per campaign, by its key). */
export async function dispatchSoon(jobs: JobEnqueuer, tenant: Tenant, campaignId: number): Promise<void> {
  await jobs.enqueue(
    'campaign.dispatch',
    { campaign_id: campaignId, organization_id: tenant.organizationId },
    { singletonKey: String(campaignId) },
  );
}
