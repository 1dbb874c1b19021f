/**
 * The `campaign.attempt` job: one contact attempt. It claims its execution row (`pending` →
 * `in_progress`, once), then places the call (the call record is written in the claiming
 * transaction) or queues the SMS (row and send job in the claiming transaction). The attempt ends
 * later, when its call or message settles (settlement.ts); one that cannot start ends here.
 */
import type { Db, Executor } from '../../../db/client.js';
import { Tenant } from '../../../db/tenant.js';
import { TemplateError } from '../../../lib/templates.js';
import { isCarrierId } from '../../../providers/carriers/index.js';
import type { JobQueue } from '../../../queue/queue.js';
import type { CallService } from '../../calls/service.js';
import type { ConfigResolver } from '../../runtime/resolve-config.js';
import type { SmsService } from '../../sms/service.js';
import { canSendOutbound } from '../../sms-compliance/service.js';
import { failCampaign } from './occurrence.js';
import type { AttemptOutcome } from './outcomes.js';
import { contactVariables, personalize } from './personalize.js';
import { type CampaignSenders, noSmsOnTrunk } from './sender.js';
import { settleAttempt } from './settlement.js';
import * as store from './store.js';

export interface AttemptDeps {
  db: Db;
  queue: JobQueue;
  calls: CallService;
  sms: SmsService;
  resolver: ConfigResolver;
  senders: CampaignSenders;
}

/** `campaign.attempt`: one contact attempt (see the file comment and executor.ts). */
export async function runAttempt(
  deps: AttemptDeps,
  payload: { execution_id: number; organization_id: number },
): Promise<void> {
  const { db, queue } = deps;
  const tenant = new Tenant(payload.organization_id);
  const rows = await store.attemptRows(db, tenant, payload.execution_id);
  if (rows?.execution.status !== 'pending') return; // made already, or skipped
  const { execution, campaign, contact } = rows;
  if (!campaign || !contact) return;
  if (campaign.status === 'paused') return; // resuming hands it out again
  const skip = async (reason: string, failCampaignToo = false) =>
    queue.retryingTransaction(async (tx, jobs) => {
      const locked = await store.lockAttempt(tx, tenant, execution);
      if (locked.execution?.status !== 'pending') return;
      await settleAttempt(tx, jobs, tenant, locked, { status: 'skipped', error: reason });
      // After this attempt is settled with its own reason, the campaign's others are skipped.
      if (failCampaignToo && locked.campaign && ['running', 'paused'].includes(locked.campaign.status))
        await failCampaign(tx, tenant, locked.campaign, reason);
    });
  if (campaign.status !== 'running') return skip('The campaign is no longer running');
  const sender = await deps.senders.of(tenant, campaign);
  if ('reason' in sender) return skip(sender.reason, true);

  const variables = contactVariables(contact, campaign, sender.assistantName);
  let texts: ReturnType<typeof personalize>;
  try {
    texts = personalize(campaign, variables, execution.channel);
  } catch (error) {
    if (!(error instanceof TemplateError)) throw error;
    return failBeforeStart(queue, tenant, execution, `Template error: ${error.message}`);
  }
  const common = {
    ...execution.executionData,
    from_number: sender.phoneNumber,
    to_number: contact.phoneNumber,
    template_variables_used: texts.variablesUsed,
  };

  if (execution.channel === 'sms') {
    if (!texts.sms) return failBeforeStart(queue, tenant, execution, 'The campaign has no SMS template');
    // SMS go from carrier numbers only (the sender refuses SMS and mixed campaigns on a SIP trunk).
    const provider = sender.provider;
    if (!isCarrierId(provider))
      return failBeforeStart(queue, tenant, execution, noSmsOnTrunk(sender.phoneNumber));
    const settings = await deps.resolver.organizationSettings(tenant);
    if (settings.enforce_sms_compliance === true) {
      const verdict = await canSendOutbound(db, tenant, sender.numberId);
      if (!verdict.can_send)
        return failBeforeStart(queue, tenant, execution, `SMS compliance: ${verdict.reason}`);
    }
    await queue.retryingTransaction(async (tx, jobs) => {
      if (!(await claim(tx, tenant, execution))) return;
      const message = await deps.sms.queueOutbound(tx, jobs, tenant, {
        phoneNumberId: sender.numberId,
        assistantId: sender.assistantId,
        provider,
        from: sender.phoneNumber,
        to: contact.phoneNumber,
        body: texts.sms!,
      });
      const executionData = { ...common, personalized_sms: texts.sms };
      await store.updateExecution(
        tx,
        tenant,
        execution.id,
        { smsId: message.id, executionData },
        campaign.id,
      );
    });
    return;
  }

  const call = await queue.retryingTransaction(async (tx) => {
    if (!(await claim(tx, tenant, execution))) return undefined;
    const row = await deps.calls.recordOutbound(tx, tenant, {
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
    const executionData = {
      ...common,
      ...(texts.welcomeMessage ? { personalized_welcome_message: texts.welcomeMessage } : {}),
      ...(texts.agenda ? { personalized_agenda: texts.agenda } : {}),
      ...(texts.endCallMessage ? { personalized_end_call_message: texts.endCallMessage } : {}),
    };
    await store.updateExecution(tx, tenant, execution.id, { callId: row.id, executionData }, campaign.id);
    return row;
  });
  // A refusal fails the call, and the call's listener (callFinished) finishes the attempt. The carrier
  // detects answering machines (the `voicemail` outcome) as the assistant's voicemail settings say.
  if (call)
    await deps.calls.dial(tenant, call, sender.credentials, { detectMachine: sender.detectsVoicemail });
}

/**
 * pending → in_progress for the attempt about to be made, while its campaign still runs: the
 * campaign is share-locked first (the lock order), so a pause or stop either waits for this claim
 * or is seen by it — in one statement. A paused campaign's attempt stays pending for the resume to
 * hand out again; a stop or failure has skipped it already.
 */
async function claim(tx: Executor, tenant: Tenant, execution: store.ExecutionRecord): Promise<boolean> {
  return (await store.claimExecution(tx, tenant, execution, { whileRunning: true })) !== undefined;
}

/** An attempt that cannot start (template, compliance): claimed and failed at once. */
async function failBeforeStart(
  queue: JobQueue,
  tenant: Tenant,
  execution: store.ExecutionRecord,
  reason: string,
): Promise<void> {
  await queue.retryingTransaction(async (tx, jobs) => {
    const locked = await store.lockAttempt(tx, tenant, execution);
    if (locked.execution?.status !== 'pending') return;
    const claimed = await store.claimExecution(tx, tenant, execution, { whileRunning: false });
    const outcome: AttemptOutcome = { status: 'failed', error: reason };
    if (claimed) await settleAttempt(tx, jobs, tenant, { ...locked, execution: claimed }, outcome);
  });
}
