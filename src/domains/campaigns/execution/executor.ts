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
 *
 * The parts: the moves (start, pause, stop) are here; occurrence.ts begins, finishes and fails a
 * campaign's run; dispatch.ts holds the wakeup and dispatch jobs, attempt.ts the attempt job, and
 * settlement.ts the end of an attempt. `CampaignExecutor` is what routes, workers and the sweep call.
 */
import type { Db, Executor } from '../../../db/client.js';
import type { Tenant } from '../../../db/tenant.js';
import type { JobEnqueuer, JobQueue } from '../../../queue/queue.js';
import type { BillingService } from '../../billing/service.js';
import type { CallRow } from '../../calls/reads.js';
import type { CallService } from '../../calls/service.js';
import { badRequest, conflict, notFound, paymentRequired } from '../../errors.js';
import type { Principal } from '../../identity/principal.js';
import type { ConfigResolver } from '../../runtime/resolve-config.js';
import type { MessageRow } from '../../sms/reads.js';
import type { SmsService } from '../../sms/service.js';

import { announceProgress } from '../events.js';
import { type AttemptDeps, runAttempt } from './attempt.js';
import { type DispatchDeps, type ExecutorOptions, type NextRun, runDispatch, runWakeup } from './dispatch.js';
import { beginOccurrence, dispatchSoon } from './occurrence.js';
import type { AttemptOutcome } from './outcomes.js';
import { CampaignSenders } from './sender.js';
import { callFinished, finishAttempt, messagesSettled } from './settlement.js';
import * as store from './store.js';
import { keepVoiceAnalytics } from './voice-analytics.js';

export type { ExecutorOptions, NextRun };

export class CampaignExecutor {
  readonly #senders: CampaignSenders;
  /** What the job handlers get: these dependencies and the senders (whose cache the moves share). */
  readonly #jobDeps: DispatchDeps & AttemptDeps;

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
    this.#jobDeps = { ...deps, senders: this.#senders };
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
    if (!(wallet.balance > 0)) throw paymentRequired('Insufficient balance: add credits to run the campaign');

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
        await beginOccurrence(tx, tenant, campaign);
      } else {
        throw conflict(`A ${campaign.status} campaign cannot be started`);
      }
      await dispatchSoon(jobs, tenant, id);
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

  // ---- jobs (dispatch.ts, attempt.ts) -----------------------------------------------------

  /** `campaign.wakeup`: a schedule's time has come, or retries are due. Harmless when early. */
  runWakeup(payload: { campaign_id: number; organization_id: number }): Promise<void> {
    return runWakeup(this.#jobDeps, payload);
  }

  /** `campaign.dispatch`: hands due contacts to attempts within the limits (see the file comment). */
  runDispatch(payload: { campaign_id: number; organization_id: number }): Promise<void> {
    return runDispatch(this.#jobDeps, payload);
  }

  /** `campaign.attempt`: one contact attempt (see the file comment). */
  runAttempt(payload: { execution_id: number; organization_id: number }): Promise<void> {
    return runAttempt(this.#jobDeps, payload);
  }

  // ---- outcomes (settlement.ts) ------------------------------------------------------------

  /** A campaign call reached a final status: its attempt finishes in the same transaction. */
  callFinished(tx: Executor, jobs: JobEnqueuer, tenant: Tenant, call: CallRow): Promise<void> {
    return callFinished(tx, jobs, tenant, call);
  }

  /** Campaign messages were accepted, refused or cancelled: each one's attempt finishes with it. */
  messagesSettled(tx: Executor, jobs: JobEnqueuer, tenant: Tenant, messages: MessageRow[]): Promise<void> {
    return messagesSettled(tx, jobs, tenant, messages);
  }

  /**
   * A campaign call's analysis completed: its execution keeps the sentiment and summary as
   * `execution_data.voice_analytics`, in the transaction that stores the analysis.
   */
  callAnalyzed(
    tx: Executor,
    tenant: Tenant,
    analysis: { sentimentScore: number | null; sentiment: string | null; summary: string | null },
    call: CallRow,
  ): Promise<void> {
    return keepVoiceAnalytics(tx, tenant, call, {
      sentiment_score: analysis.sentimentScore,
      sentiment: analysis.sentiment,
      summary: analysis.summary,
    });
  }

  /** Records an attempt's outcome and moves its contact on (`finishAttempt` in settlement.ts). */
  finishAttempt(
    tx: Executor,
    jobs: JobEnqueuer,
    tenant: Tenant,
    execution: Pick<store.ExecutionRecord, 'id' | 'campaignId' | 'contactId' | 'callId' | 'smsId'>,
    outcome: AttemptOutcome,
  ): Promise<void> {
    return finishAttempt(tx, jobs, tenant, execution, outcome);
  }
}
