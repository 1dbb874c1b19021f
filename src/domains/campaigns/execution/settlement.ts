/**
 * An attempt's end: its call reached a final status or its message was settled, and the outcome is
 * recorded and moves the contact on, in the transaction that brought the news. The calls and SMS
 * services tell the executor (their listeners are wired in platform.ts); the sweep (recovery.ts)
 * settles what news never came.
 */
import type { Executor } from '../../../db/client.js';
import type { Tenant } from '../../../db/tenant.js';
import type { JobEnqueuer } from '../../../queue/queue.js';
import type { CallRow } from '../../calls/reads.js';
import type { MessageRow } from '../../sms/reads.js';
import { dispatchSoon } from './occurrence.js';
import { type AttemptOutcome, callOutcome, messageOutcome, nextStep } from './outcomes.js';
import * as store from './store.js';

/** A campaign call reached a final status: its attempt finishes in the same transaction. */
export async function callFinished(
  tx: Executor,
  jobs: JobEnqueuer,
  tenant: Tenant,
  call: CallRow,
): Promise<void> {
  if (call.campaignId === null) return;
  const execution = attemptNamedBy(call) ?? (await store.executionOf(tx, tenant, { callId: call.id }));
  if (!execution) return;
  await finishAttempt(tx, jobs, tenant, execution, callOutcome(call));
}

/**
 * The attempt a campaign call's record names (attempt.ts writes its ids into `call_meta`), with no
 * statement to find it: finishAttempt checks under its lock that the execution is still this call's.
 */
function attemptNamedBy(call: CallRow) {
  const { campaign_execution_id: id, contact_id: contactId } = call.callMeta;
  if (call.campaignId === null || typeof id !== 'number' || typeof contactId !== 'number') return undefined;
  return { id, campaignId: call.campaignId, contactId, callId: call.id, smsId: null };
}

/**
 * Campaign messages were accepted, refused or cancelled (a drained batch settles many at once):
 * each one's attempt finishes with it. One query finds which messages are attempts; they are
 * finished in campaign and contact order, so two batches lock campaigns in the same order.
 */
export async function messagesSettled(
  tx: Executor,
  jobs: JobEnqueuer,
  tenant: Tenant,
  messages: MessageRow[],
): Promise<void> {
  const byId = new Map(messages.map((message) => [message.id, message]));
  const executions = await store.executionsOfMessages(tx, tenant, [...byId.keys()]);
  for (const execution of executions) {
    const message = byId.get(execution.smsId!);
    if (message) await finishAttempt(tx, jobs, tenant, execution, messageOutcome(message));
  }
}

/**
 * Records an attempt's outcome and moves its contact on: completed; waiting for a retry (after
 * `retry_delay_minutes`, while attempts remain and the campaign is live); waiting for the SMS of a
 * mixed campaign whose calls did not connect; or failed. Runs in the caller's transaction, which
 * has locked the call or message that brought the news and nothing of the campaign yet: the
 * campaign, contact and execution are locked here, in that order.
 */
export async function finishAttempt(
  tx: Executor,
  jobs: JobEnqueuer,
  tenant: Tenant,
  execution: Pick<store.ExecutionRecord, 'id' | 'campaignId' | 'contactId' | 'callId' | 'smsId'>,
  outcome: AttemptOutcome,
): Promise<void> {
  const locked = await store.lockAttempt(tx, tenant, execution);
  // Read unlocked, the attempt may have moved on since: a dial made again (recovery.ts) is no
  // longer this call's attempt.
  const current = locked.execution;
  if (current && (current.callId !== execution.callId || current.smsId !== execution.smsId)) return;
  await settleAttempt(tx, jobs, tenant, locked, outcome);
}

/** `finishAttempt` on rows locked already (`lockAttempt`); an attempt finished already is left. */
export async function settleAttempt(
  tx: Executor,
  jobs: JobEnqueuer,
  tenant: Tenant,
  locked: Awaited<ReturnType<typeof store.lockAttempt>>,
  outcome: AttemptOutcome,
): Promise<void> {
  const { campaign, contact, execution } = locked;
  if (!execution || !store.IN_FLIGHT.includes(execution.status)) return; // finished already
  // The change announces the campaign's progress with it (when there is a campaign to speak of).
  const announceFor = campaign && contact ? campaign.id : undefined;
  await store.updateExecution(
    tx,
    tenant,
    execution.id,
    {
      status: outcome.status,
      finishedAt: new Date(),
      ...(outcome.cost !== undefined && outcome.cost !== null ? { cost: outcome.cost } : {}),
      executionData: {
        ...execution.executionData,
        ...outcome.data,
        ...(outcome.durationSeconds !== undefined && outcome.durationSeconds !== null
          ? { duration_seconds: outcome.durationSeconds }
          : {}),
        ...(outcome.error ? { error_details: outcome.error } : {}),
      },
    },
    announceFor,
  );
  if (!campaign || !contact) return;
  // Only the contact's attempt in flight moves it (a stop may have skipped it meanwhile).
  if (contact.status !== 'in_progress') return;

  const { next, retryAt } = nextStep(campaign, contact, execution, outcome);
  // A contact that finished (completed or failed) is counted in its campaign by the same statement.
  await store.updateContact(tx, tenant, contact.id, { status: next, nextAttemptAt: retryAt }, campaign.id);
  if (retryAt && campaign.retryDelayMinutes > 0) {
    await jobs.enqueue(
      'campaign.wakeup',
      { campaign_id: campaign.id, organization_id: tenant.organizationId },
      { startAfterSeconds: campaign.retryDelayMinutes * 60 },
    );
  }
  // A slot is free: this campaign, and the organization's others (its limit spans them), go on.
  for (const campaignId of await store.runningCampaigns(tx, tenant))
    await dispatchSoon(jobs, tenant, campaignId);
}
