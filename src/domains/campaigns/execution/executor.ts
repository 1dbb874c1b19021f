/**
 * The campaign executor. All state is in the database and every step runs as a job, so a process
 * that dies mid-run loses nothing and no contact attempt is made twice:
 *
 * - `campaign.dispatch` (at most one queued and one running per campaign) locks the campaign, counts
 *   the attempts in flight against the campaign's `concurrency_limit` and the organization's limit,
 *   and claims due contacts into `pending` execution rows, each with a `campaign.attempt` job — all
 *   in one transaction. It also notices when nothing is left (completed) or the campaign cannot go
 *   on (failed: assistant gone, no number, no credentials; paused: no balance).
 * - `campaign.attempt` claims its row (`pending` → `in_progress`, once), then places the call (the
 *   call record is written in the claiming transaction) or queues the SMS (row and send job in the
 *   claiming transaction, sent by the SMS queue under the number's rate).
 * - The attempt finishes when its call reaches a final status (status callback, or the carrier's
 *   record when a callback was lost) or its message is settled, in that same transaction: the
 *   execution gets its outcome, the contact is completed, failed, or waits `retry_delay_minutes`
 *   for its next attempt (up to `max_attempts`; a mixed campaign then sends its SMS), and the
 *   campaign is dispatched again.
 * - `campaign.wakeup` starts a scheduled campaign at its time and dispatches retries that are due;
 *   the sweep (see recovery.ts) catches whatever a crash left behind.
 *
 * Lock order. Moves, dispatches, attempts and their outcomes run at the same time, so every
 * transaction that writes a campaign's rows takes their locks in one order — the campaign, then its
 * schedule, then contacts, then executions — and none waits for a row earlier in that order while
 * holding a later one (which is how two of them could wait for each other: a deadlock):
 *
 * - the campaign row comes first, locked FOR NO KEY UPDATE (`lockCampaign`: moves, dispatch,
 *   wakeup, attempt outcomes, contact imports) or FOR SHARE (`shareCampaign`: an attempt claiming
 *   its execution, which also re-reads the campaign's status there). A dispatch takes its
 *   organization's advisory lock before it, and nothing takes that lock after a campaign row;
 * - contacts next: claimed by a dispatch, settled by an outcome (`lockAttempt`), skipped by a stop
 *   (`skipWaiting`: contacts, then executions), reset for a new occurrence;
 * - executions last, including the foreign-key checks an execution's insert or second update makes
 *   on its campaign and contact (FOR KEY SHARE, which those lock modes do not block);
 * - the call or message whose news settles an attempt is locked before all of these: it is what
 *   the news changes first, and no campaign transaction locks an existing call or message;
 * - dispatch jobs, unique per campaign while they wait, are enqueued for several campaigns in the
 *   order of their ids (`runningCampaigns`).
 *
 * Each of these transactions runs in `queue.retryingTransaction`: should PostgreSQL still abort one
 * for a deadlock or a serialization failure, it runs again instead of failing a request or a job.
 */
import type { Db, Executor } from '../../../db/client.js';
import { Tenant } from '../../../db/tenant.js';
import type { Principal } from '../../../http/access.js';
import { AppError, badRequest, conflict, notFound } from '../../../http/errors.js';
import { TemplateError } from '../../../lib/templates.js';
import type { JobEnqueuer, JobQueue } from '../../../queue/queue.js';
import type { BillingService } from '../../billing/service.js';
import type { CallRow } from '../../calls/reads.js';
import type { CallService } from '../../calls/service.js';
import type { ConfigResolver } from '../../runtime/resolve-config.js';
import type { MessageRow } from '../../sms/reads.js';
import type { SmsService } from '../../sms/service.js';
import { canSendOutbound } from '../../sms-compliance/service.js';
import { announceProgress } from '../events.js';
import { type AttemptOutcome, callOutcome, messageOutcome, nextStep } from './outcomes.js';
import { contactVariables, personalize } from './personalize.js';
import { CampaignSenders } from './sender.js';
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

export class CampaignExecutor {
  readonly #senders: CampaignSenders;

  constructor(
    private readonly deps: {
      db: Db;
      queue: JobQueue;
      calls: CallService;
      sms: SmsService;
      resolver: ConfigResolver;
      billing: BillingService;
      nextRunAfter: NextRun;
      options: ExecutorOptions;
    },
  ) {
    this.#senders = new CampaignSenders(deps);
    deps.calls.onCallFinished((tx, jobs, tenant, call) => this.callFinished(tx, jobs, tenant, call));
    deps.sms.onMessageSettled((tx, jobs, tenant, message) => this.messageSettled(tx, jobs, tenant, message));
  }

  // ---- moves -------------------------------------------------------------------------------

  /**
   * `draft` or `scheduled` → `running` (a new occurrence when the campaign ran before), or resumes
   * a `paused` campaign. Refused (400) when it could not run: no contacts, no assistant, no number,
   * no credentials, an SMS campaign without its template; 402 without balance; 409 in other states.
   */
  async start(principal: Principal, id: number): Promise<void> {
    const tenant = principal.tenant;
    const current = await store.findCampaignRecord(this.deps.db, tenant, id);
    if (!current) throw notFound('Campaign not found');
    if (!['draft', 'scheduled', 'paused'].includes(current.status))
      throw conflict(`A ${current.status} campaign cannot be started`);
    if (current.status !== 'paused' && current.totalContacts === 0)
      throw badRequest('The campaign has no contacts: add or import contacts first');
    this.#senders.forget(id);
    const sender = await this.#senders.of(tenant, current);
    if ('reason' in sender) throw badRequest(sender.reason);
    const wallet = await this.deps.billing.wallet(tenant);
    if (!(wallet.balance > 0))
      throw new AppError(402, 'Insufficient balance: add credits to run the campaign');

    await this.deps.queue.retryingTransaction(async (tx, jobs) => {
      const campaign = await store.lockCampaign(tx, tenant, id);
      if (!campaign) throw notFound('Campaign not found');
      if (campaign.status === 'paused') {
        await store.updateCampaign(tx, tenant, id, { status: 'running', failureReason: null });
        // Attempts claimed before the pause whose job found the campaign paused run now.
        for (const executionId of await store.pendingExecutions(tx, tenant, id))
          await jobs.enqueue('campaign.attempt', {
            execution_id: executionId,
            organization_id: tenant.organizationId,
          });
      } else if (campaign.status === 'draft' || campaign.status === 'scheduled') {
        const schedule = await store.findSchedule(tx, tenant, id);
        // Starting now uses up a one-off schedule; a recurring one keeps its next occurrence.
        if (schedule?.scheduleType === 'scheduled')
          await store.updateSchedule(tx, tenant, id, { nextRunAt: null });
        await this.#beginOccurrence(tx, tenant, campaign);
      } else {
        throw conflict(`A ${campaign.status} campaign cannot be started`);
      }
      await this.#dispatchSoon(jobs, tenant, id);
      await announceProgress(tx, tenant.organizationId, id);
    });
  }

  /** `running` → `paused`: no new attempts start; those under way finish. */
  async pause(principal: Principal, id: number): Promise<void> {
    await this.#move(principal.tenant, id, ['running'], 'paused', 'paused');
  }

  /**
   * Any live state → `cancelled`: waiting contacts and attempts not yet started are skipped;
   * attempts under way finish without retries; no schedule runs any more.
   */
  async stop(principal: Principal, id: number): Promise<void> {
    await this.#move(
      principal.tenant,
      id,
      ['draft', 'scheduled', 'running', 'paused'],
      'cancelled',
      'stopped',
    );
  }

  async #move(
    tenant: Tenant,
    id: number,
    from: string[],
    to: 'paused' | 'cancelled',
    verb: string,
  ): Promise<void> {
    await this.deps.queue.retryingTransaction(async (tx) => {
      const campaign = await store.lockCampaign(tx, tenant, id);
      if (!campaign) throw notFound('Campaign not found');
      if (!from.includes(campaign.status)) throw conflict(`A ${campaign.status} campaign cannot be ${verb}`);
      await store.updateCampaign(tx, tenant, id, {
        status: to,
        ...(to === 'cancelled' ? { completedAt: new Date() } : {}),
      });
      if (to === 'cancelled') {
        await store.updateSchedule(tx, tenant, id, { nextRunAt: null });
        await store.skipWaiting(tx, tenant, id);
      }
      await announceProgress(tx, tenant.organizationId, id);
    });
  }

  /** Running again: a campaign that ran before starts a new occurrence with every contact waiting. */
  async #beginOccurrence(tx: Executor, tenant: Tenant, campaign: store.CampaignRecord): Promise<void> {
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
  async #finishOccurrence(tx: Executor, tenant: Tenant, campaign: store.CampaignRecord): Promise<void> {
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

  async #fail(tx: Executor, tenant: Tenant, campaign: store.CampaignRecord, reason: string): Promise<void> {
    await store.updateCampaign(tx, tenant, campaign.id, {
      status: 'failed',
      failureReason: reason,
      completedAt: new Date(),
    });
    await store.updateSchedule(tx, tenant, campaign.id, { nextRunAt: null });
    await store.skipWaiting(tx, tenant, campaign.id);
    await announceProgress(tx, tenant.organizationId, campaign.id);
  }

  async #dispatchSoon(jobs: JobEnqueuer, tenant: Tenant, campaignId: number): Promise<void> {
    await jobs.enqueue(
      'campaign.dispatch',
      { campaign_id: campaignId, organization_id: tenant.organizationId },
      { singletonKey: String(campaignId) },
    );
  }

  // ---- jobs ---------------------------------------------------------------------------------

  /** `campaign.wakeup`: a schedule's time has come, or retries are due. Harmless when early. */
  async runWakeup(payload: { campaign_id: number; organization_id: number }): Promise<void> {
    const tenant = new Tenant(payload.organization_id);
    await this.deps.queue.retryingTransaction(async (tx, jobs) => {
      const campaign = await store.lockCampaign(tx, tenant, payload.campaign_id);
      if (!campaign) return;
      const schedule = await store.findSchedule(tx, tenant, campaign.id);
      const now = new Date();
      if (schedule?.nextRunAt && schedule.nextRunAt <= now) {
        const next =
          schedule.scheduleType === 'recurring'
            ? this.deps.nextRunAfter(
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
          await this.#beginOccurrence(tx, tenant, campaign);
          campaign.status = 'running';
          await announceProgress(tx, tenant.organizationId, campaign.id);
        }
      }
      if (campaign.status === 'running') await this.#dispatchSoon(jobs, tenant, campaign.id);
    });
  }

  /** `campaign.dispatch`: hands due contacts to attempts within the limits (see the file comment). */
  async runDispatch(payload: { campaign_id: number; organization_id: number }): Promise<void> {
    const tenant = new Tenant(payload.organization_id);
    const id = payload.campaign_id;
    const peek = await store.findCampaignRecord(this.deps.db, tenant, id);
    if (peek?.status !== 'running') return;
    // Looked up before the transaction (they read settings and credentials), checked inside it.
    const sender = await this.#senders.of(tenant, peek);
    const wallet = await this.deps.billing.wallet(tenant);
    await this.deps.queue.retryingTransaction(async (tx, jobs) => {
      await store.lockOrganizationDispatch(tx, tenant);
      const campaign = await store.lockCampaign(tx, tenant, id);
      if (campaign?.status !== 'running') return;
      const outlook = await store.contactOutlook(tx, tenant, id);
      if (outlook.unfinished === 0) {
        await this.#finishOccurrence(tx, tenant, campaign);
        return;
      }
      if (outlook.dueNow === 0) return; // retries wait for their wakeup
      if ('reason' in sender) {
        await this.#fail(tx, tenant, campaign, sender.reason);
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
        this.deps.options.organizationConcurrency - flight.organization,
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

  /** `campaign.attempt`: one contact attempt (see the file comment). */
  async runAttempt(payload: { execution_id: number; organization_id: number }): Promise<void> {
    const { db, queue } = this.deps;
    const tenant = new Tenant(payload.organization_id);
    const execution = await store.findExecution(db, tenant, payload.execution_id);
    if (execution?.status !== 'pending') return; // made already, or skipped
    const [campaign, contact] = await Promise.all([
      store.findCampaignRecord(db, tenant, execution.campaignId),
      store.findContact(db, tenant, execution.contactId),
    ]);
    if (!campaign || !contact) return;
    if (campaign.status === 'paused') return; // resuming hands it out again
    const skip = async (reason: string, failCampaign = false) =>
      queue.retryingTransaction(async (tx, jobs) => {
        const locked = await store.lockAttempt(tx, tenant, execution);
        if (locked.execution?.status !== 'pending') return;
        await this.#settleAttempt(tx, jobs, tenant, locked, { status: 'skipped', error: reason });
        // After this attempt is settled with its own reason, the campaign's others are skipped.
        if (failCampaign && locked.campaign && ['running', 'paused'].includes(locked.campaign.status))
          await this.#fail(tx, tenant, locked.campaign, reason);
      });
    if (campaign.status !== 'running') return skip('The campaign is no longer running');
    const sender = await this.#senders.of(tenant, campaign);
    if ('reason' in sender) return skip(sender.reason, true);

    const variables = contactVariables(contact, campaign, sender.assistantName);
    let texts: ReturnType<typeof personalize>;
    try {
      texts = personalize(campaign, variables, execution.channel);
    } catch (error) {
      if (!(error instanceof TemplateError)) throw error;
      return this.#failBeforeStart(tenant, execution, `Template error: ${error.message}`);
    }
    const common = {
      ...execution.executionData,
      from_number: sender.phoneNumber,
      to_number: contact.phoneNumber,
      template_variables_used: texts.variablesUsed,
    };

    if (execution.channel === 'sms') {
      if (!texts.sms) return this.#failBeforeStart(tenant, execution, 'The campaign has no SMS template');
      const settings = await this.deps.resolver.organizationSettings(tenant);
      if (settings.enforce_sms_compliance === true) {
        const verdict = await canSendOutbound(db, tenant, sender.numberId);
        if (!verdict.can_send)
          return this.#failBeforeStart(tenant, execution, `SMS compliance: ${verdict.reason}`);
      }
      await queue.retryingTransaction(async (tx, jobs) => {
        if (!(await this.#claim(tx, tenant, execution))) return;
        const message = await this.deps.sms.queueOutbound(tx, jobs, tenant, {
          phoneNumberId: sender.numberId,
          assistantId: sender.assistantId,
          provider: sender.provider,
          from: sender.phoneNumber,
          to: contact.phoneNumber,
          body: texts.sms!,
        });
        await store.updateExecution(tx, tenant, execution.id, {
          smsId: message.id,
          executionData: { ...common, personalized_sms: texts.sms },
        });
        await announceProgress(tx, tenant.organizationId, campaign.id);
      });
      return;
    }

    const call = await queue.retryingTransaction(async (tx) => {
      if (!(await this.#claim(tx, tenant, execution))) return undefined;
      const row = await this.deps.calls.recordOutbound(tx, tenant, {
        assistantId: sender.assistantId,
        phoneNumberId: sender.numberId,
        provider: sender.provider,
        from: sender.phoneNumber,
        to: contact.phoneNumber,
        campaignId: campaign.id,
        callMeta: {
          ...(texts.welcomeMessage ? { welcome_message: texts.welcomeMessage } : {}),
          ...(texts.agenda ? { agenda: texts.agenda } : {}),
          ...(texts.endCallMessage ? { end_call_message: texts.endCallMessage } : {}),
          variables,
          template_variables_used: texts.variablesUsed,
          campaign_id: campaign.id,
          campaign_execution_id: execution.id,
          contact_id: contact.id,
        },
      });
      await store.updateExecution(tx, tenant, execution.id, {
        callId: row.id,
        executionData: {
          ...common,
          ...(texts.welcomeMessage ? { personalized_welcome_message: texts.welcomeMessage } : {}),
          ...(texts.agenda ? { personalized_agenda: texts.agenda } : {}),
          ...(texts.endCallMessage ? { personalized_end_call_message: texts.endCallMessage } : {}),
        },
      });
      await announceProgress(tx, tenant.organizationId, campaign.id);
      return row;
    });
    // A refusal fails the call, and the call's listener (callFinished) finishes the attempt.
    if (call) await this.deps.calls.dial(tenant, call, sender.credentials, { detectMachine: true });
  }

  /**
   * pending → in_progress for the attempt about to be made, while its campaign still runs: the
   * campaign is share-locked first (the lock order), so a pause or stop either waits for this claim
   * or is seen by it. A paused campaign's attempt stays pending for the resume to hand out again;
   * a stop or failure has skipped it already.
   */
  async #claim(tx: Executor, tenant: Tenant, execution: store.ExecutionRecord): Promise<boolean> {
    const campaign = await store.shareCampaign(tx, tenant, execution.campaignId);
    if (campaign?.status !== 'running') return false;
    return (await store.claimExecution(tx, tenant, execution.id)) !== undefined;
  }

  /** An attempt that cannot start (template, compliance): claimed and failed at once. */
  async #failBeforeStart(tenant: Tenant, execution: store.ExecutionRecord, reason: string): Promise<void> {
    await this.deps.queue.retryingTransaction(async (tx, jobs) => {
      const locked = await store.lockAttempt(tx, tenant, execution);
      if (locked.execution?.status !== 'pending') return;
      const claimed = await store.claimExecution(tx, tenant, execution.id);
      const outcome: AttemptOutcome = { status: 'failed', error: reason };
      if (claimed) await this.#settleAttempt(tx, jobs, tenant, { ...locked, execution: claimed }, outcome);
    });
  }

  // ---- outcomes -----------------------------------------------------------------------------

  /** A campaign call reached a final status: its attempt finishes in the same transaction. */
  async callFinished(tx: Executor, jobs: JobEnqueuer, tenant: Tenant, call: CallRow): Promise<void> {
    if (call.campaignId === null) return;
    const execution = await store.executionOf(tx, tenant, { callId: call.id });
    if (!execution) return;
    await this.finishAttempt(tx, jobs, tenant, execution, callOutcome(call));
  }

  /** A campaign message was accepted, refused or cancelled: its attempt finishes with it. */
  async messageSettled(tx: Executor, jobs: JobEnqueuer, tenant: Tenant, message: MessageRow): Promise<void> {
    const execution = await store.executionOf(tx, tenant, { messageId: message.id });
    if (!execution) return;
    await this.finishAttempt(tx, jobs, tenant, execution, messageOutcome(message));
  }

  /**
   * Records an attempt's outcome and moves its contact on: completed; waiting for a retry (after
   * `retry_delay_minutes`, while attempts remain and the campaign is live); waiting for the SMS of a
   * mixed campaign whose calls did not connect; or failed. Runs in the caller's transaction, which
   * has locked the call or message that brought the news and nothing of the campaign yet: the
   * campaign, contact and execution are locked here, in that order.
   */
  async finishAttempt(
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
    await this.#settleAttempt(tx, jobs, tenant, locked, outcome);
  }

  /** `finishAttempt` on rows locked already (`lockAttempt`); an attempt finished already is left. */
  async #settleAttempt(
    tx: Executor,
    jobs: JobEnqueuer,
    tenant: Tenant,
    locked: Awaited<ReturnType<typeof store.lockAttempt>>,
    outcome: AttemptOutcome,
  ): Promise<void> {
    const { campaign, contact, execution } = locked;
    if (!execution || !store.IN_FLIGHT.includes(execution.status)) return; // finished already
    await store.updateExecution(tx, tenant, execution.id, {
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
    });
    if (!campaign || !contact) return;
    await announceProgress(tx, tenant.organizationId, campaign.id);
    // Only the contact's attempt in flight moves it (a stop may have skipped it meanwhile).
    if (contact.status !== 'in_progress') return;

    const { next, retryAt } = nextStep(campaign, contact, execution, outcome);
    await store.updateContact(tx, tenant, contact.id, { status: next, nextAttemptAt: retryAt });
    if (next === 'completed' || next === 'failed')
      await store.countFinishedContact(tx, tenant, campaign.id, next);
    if (retryAt && campaign.retryDelayMinutes > 0) {
      await jobs.enqueue(
        'campaign.wakeup',
        { campaign_id: campaign.id, organization_id: tenant.organizationId },
        { startAfterSeconds: campaign.retryDelayMinutes * 60 },
      );
    }
    // A slot is free: this campaign, and the organization's others (its limit spans them), go on.
    for (const campaignId of await store.runningCampaigns(tx, tenant))
      await this.#dispatchSoon(jobs, tenant, campaignId);
  }
}
