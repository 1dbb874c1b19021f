/**
 * The campaign sweep: what a crash, a lost callback or a missed alarm leaves behind is found here,
 * every CAMPAIGN_SWEEP_INTERVAL_SECONDS in each worker process (every step is idempotent, so two
 * processes sweeping at once do no harm):
 *
 * - schedules whose time has passed get their wakeup; running campaigns get a dispatch;
 * - executions claimed by a dispatch whose attempt job has not run get their job again;
 * - attempts in flight with no news for CAMPAIGN_RECOVER_AFTER_SECONDS are settled from the
 *   carrier's own records: a call whose final status callback never came gets that status; a dial
 *   whose answer was lost (the process stopped mid-request) is found at the carrier by number and
 *   time, or — when the carrier has no such call — made again under the same attempt number, since
 *   it never happened; an SMS interrupted mid-send is failed, never resent (the carrier may have it).
 */
import type { Db } from '../../../db/client.js';
import { FINAL_CALL_STATUSES } from '../../../db/schema/telephony.js';
import { Tenant } from '../../../db/tenant.js';
import { Periodic } from '../../../lib/periodic.js';
import type { Carriers } from '../../../providers/carriers/index.js';
import { isTelephonyProvider } from '../../../providers/carriers/index.js';
import type { CallSnapshot, CarrierAdapter } from '../../../providers/carriers/types.js';
import { DEFAULT_TIMEOUT_MS } from '../../../providers/http.js';
import type { JobLogger, JobQueue } from '../../../queue/queue.js';
import * as callReads from '../../calls/reads.js';
import type { CallService } from '../../calls/service.js';
import type { ConfigResolver } from '../../runtime/resolve-config.js';
import * as messageReads from '../../sms/reads.js';
import { type SmsService, sendInterrupted } from '../../sms/service.js';
import type { CampaignExecutor } from './executor.js';
import { messageOutcome } from './outcomes.js';
import { sweepQueries } from './recovery-store.js';
import * as store from './store.js';

/**
 * A dial settles (the carrier's id kept, or the call failed) within the carrier request's time-out;
 * three times that leaves room for the database work around it on a loaded machine.
 */
const DIAL_SETTLED_WITHIN_MS = 3 * DEFAULT_TIMEOUT_MS;

export class CampaignRecovery {
  readonly #periodic: Periodic;

  constructor(
    private readonly deps: {
      db: Db;
      queue: JobQueue;
      calls: CallService;
      sms: SmsService;
      carriers: Carriers;
      resolver: ConfigResolver;
      executor: CampaignExecutor;
      log: JobLogger;
      sweepIntervalSeconds: number;
      recoverAfterSeconds: number;
    },
  ) {
    this.#periodic = new Periodic(() => this.sweep(), {
      intervalSeconds: deps.sweepIntervalSeconds,
      onError: (error) => deps.log.error({ err: error }, 'campaign sweep failed'),
    });
  }

  /** Sweeps now and then every interval, until stop(). */
  start(): void {
    this.#periodic.start();
  }

  async stop(): Promise<void> {
    await this.#periodic.stop();
  }

  async sweep(): Promise<void> {
    const { db, queue, recoverAfterSeconds } = this.deps;
    if (!queue.running) return;
    for (const due of await sweepQueries.dueSchedules(db))
      await queue.enqueue('campaign.wakeup', {
        campaign_id: due.campaignId,
        organization_id: due.organizationId,
      });
    for (const running of await sweepQueries.runningCampaigns(db)) {
      await queue.enqueue(
        'campaign.dispatch',
        { campaign_id: running.campaignId, organization_id: running.organizationId },
        { singletonKey: String(running.campaignId) },
      );
    }
    for (const waiting of await sweepQueries.waitingExecutions(db, recoverAfterSeconds)) {
      // Touched (updated_at), so the next sweep waits its turn before handing it out again.
      await store.updateExecution(db, new Tenant(waiting.organizationId), waiting.id, {});
      await queue.enqueue('campaign.attempt', {
        execution_id: waiting.id,
        organization_id: waiting.organizationId,
      });
    }
    for (const stale of await sweepQueries.staleAttempts(db, recoverAfterSeconds)) {
      if (!queue.running) return;
      try {
        await this.recoverAttempt(stale);
      } catch (error) {
        this.deps.log.warn({ err: error, execution_id: stale.id }, 'campaign attempt not recovered yet');
      }
    }
  }

  /** Settles one attempt in flight that has had no news for a while (see the file comment). */
  async recoverAttempt(execution: store.ExecutionRecord): Promise<void> {
    const tenant = new Tenant(execution.organizationId);
    const touch = () => store.updateExecution(this.deps.db, tenant, execution.id, { checkedAt: new Date() });
    if (execution.channel === 'sms') return this.#recoverMessage(tenant, execution, touch);

    const call = execution.callId
      ? await callReads.findCall(this.deps.db, tenant, execution.callId)
      : undefined;
    if (!call) return touch();
    if (FINAL_CALL_STATUSES.includes(call.status)) {
      // Final already (finished outside the listener's reach): finish the attempt from the record.
      await this.deps.queue.retryingTransaction((tx, jobs) =>
        this.deps.executor.callFinished(tx, jobs, tenant, call),
      );
      return;
    }
    if (!isTelephonyProvider(call.provider)) return touch();
    const adapter: CarrierAdapter = this.deps.carriers[call.provider];
    const { credentials } = await this.deps.resolver.telephonyCredentials(tenant, {
      provider: call.provider,
      assistantId: call.assistantId,
    });
    if (!credentials) return touch();

    let snapshot: CallSnapshot | undefined;
    if (call.callSid) {
      if (!adapter.lookupCall) return touch(); // this carrier's callbacks are the only news
      snapshot = await adapter.lookupCall(credentials, call.callSid);
    } else {
      // No answer to the dial yet. While the process that dials may still be waiting for the
      // carrier, the dial is not lost: the carrier may not have registered the call yet, and a
      // second dial would ring the contact twice. Only a dial older than any request can take is.
      const dialledAt = (execution.executedAt ?? call.createdAt).getTime();
      if (Date.now() - dialledAt < DIAL_SETTLED_WITHIN_MS) return touch();
      // The dial's answer never arrived. Did the carrier create the call?
      if (!adapter.findOutboundCalls) {
        await this.deps.calls.failUnplaced(
          tenant,
          call.id,
          'Interrupted while dialling; the carrier cannot tell whether the call was placed, so it is not repeated',
        );
        return;
      }
      const since = new Date((execution.executedAt ?? call.createdAt).getTime() - 5_000);
      const candidates = await adapter.findOutboundCalls(credentials, {
        from: call.fromPhoneNumber,
        to: call.toPhoneNumber,
        since,
      });
      for (const candidate of candidates) {
        if (!(await callReads.unscoped.callBySid(this.deps.db, call.provider, candidate.callSid))) {
          snapshot = candidate;
          break;
        }
      }
      if (!snapshot) return this.#dialAgain(tenant, execution, call.id);
      await this.deps.calls.keepCallSid(tenant, call.id, snapshot.callSid);
    }
    if (!snapshot || !FINAL_CALL_STATUSES.includes(snapshot.status)) return touch();
    await this.deps.calls.applyStatus(execution.organizationId, call.id, {
      kind: 'call_status',
      callSid: snapshot.callSid,
      status: snapshot.status,
      ...(snapshot.durationSeconds !== undefined ? { durationSeconds: snapshot.durationSeconds } : {}),
      ...(snapshot.answeredBy ? { answeredBy: snapshot.answeredBy } : {}),
      ...(snapshot.endedAt ? { at: snapshot.endedAt } : {}),
    });
  }

  /**
   * The carrier never got the dial: the attempt did not happen, so it runs again under its own
   * attempt number (the orphan call record is failed, detached from the execution first).
   */
  async #dialAgain(tenant: Tenant, execution: store.ExecutionRecord, callId: number): Promise<void> {
    const reset = await this.deps.queue.retryingTransaction(async (tx, jobs) => {
      // The lock order (executor.ts): the campaign first, so a stop that is skipping the campaign's
      // waiting attempts does not see this one become waiting half-way through.
      await store.shareCampaign(tx, tenant, execution.campaignId);
      const locked = await store.findExecution(tx, tenant, execution.id, { lock: true });
      if (locked?.status !== 'in_progress' || locked.callId !== callId) return false;
      await store.updateExecution(tx, tenant, execution.id, {
        status: 'pending',
        callId: null,
        executedAt: null,
      });
      await jobs.enqueue('campaign.attempt', {
        execution_id: execution.id,
        organization_id: tenant.organizationId,
      });
      return true;
    });
    if (reset) {
      await this.deps.calls.failUnplaced(
        tenant,
        callId,
        'Never placed: the process stopped before the carrier received the call; the attempt was made again',
      );
    }
  }

  async #recoverMessage(
    tenant: Tenant,
    execution: store.ExecutionRecord,
    touch: () => Promise<void>,
  ): Promise<void> {
    if (!execution.smsId) return touch();
    const message = await messageReads.findMessage(this.deps.db, tenant, execution.smsId);
    if (!message) return touch();
    const interrupted = sendInterrupted(message);
    if (message.status === 'queued' || (message.status === 'sending' && !interrupted)) return touch();
    await this.deps.queue.retryingTransaction(async (tx, jobs) => {
      // Failed through the SMS service: its settled listener (the executor's messagesSettled) finishes
      // the attempt in this transaction, as for any other failed message.
      if (interrupted) {
        await this.deps.sms.failInterruptedSend(tx, jobs, tenant, message.id);
        return;
      }
      // Settled already (the listener was missed): finish the attempt from the record.
      const execution = await store.executionOf(tx, tenant, { messageId: message.id });
      if (execution)
        await this.deps.executor.finishAttempt(tx, jobs, tenant, execution, messageOutcome(message));
    });
  }
}
