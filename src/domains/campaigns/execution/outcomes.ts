/**
 * What an attempt came to, in the words of campaign executions: the outcome a call's final status or
 * a settled message gives, and where that outcome takes the attempt's contact. Pure; the executor
 * records them (executor.ts).
 */
import type { ExecutionStatus } from '../../../db/schema/index.js';
import type { CallRow } from '../../calls/reads.js';
import type { MessageRow } from '../../sms/reads.js';
import type { CampaignRecord } from './store.js';

export interface AttemptOutcome {
  status: ExecutionStatus;
  cost?: number | null;
  durationSeconds?: number | null;
  error?: string;
  /** Extra facts for execution_data (call_sid, call_status…). */
  data?: Record<string, unknown>;
}

/** A final call status in the words of campaign executions. */
export function callOutcome(call: CallRow): AttemptOutcome {
  const data = { call_sid: call.callSid, call_status: call.status };
  const base = { cost: call.cost, durationSeconds: call.duration, data };
  switch (call.status) {
    case 'completed':
      return { ...base, status: call.callMeta.answered_by === 'machine' ? 'voicemail' : 'completed' };
    case 'busy':
      return { ...base, status: 'busy' };
    case 'no-answer':
      return { ...base, status: 'no_answer' };
    case 'canceled':
      return { ...base, status: 'failed', error: 'The call was canceled' };
    default:
      return { ...base, status: 'failed', error: String(call.callMeta.error ?? 'The call failed') };
  }
}

/** A settled message in the words of campaign executions: accepted by the carrier is completed. */
export function messageOutcome(message: MessageRow): AttemptOutcome {
  const data = { sms_status: message.status };
  if (['sent', 'delivered'].includes(message.status))
    return { status: 'completed', cost: message.cost, data };
  return {
    status: 'failed',
    cost: message.cost,
    data,
    error:
      message.error ?? (message.status === 'cancelled' ? 'The message was cancelled' : 'The message failed'),
  };
}

/**
 * Where an attempt's outcome takes its contact: completed; waiting for a retry (after
 * `retry_delay_minutes`, while attempts remain and the campaign is live); waiting for the SMS of a
 * mixed campaign whose calls did not connect; or failed.
 */
export function nextStep(
  campaign: Pick<
    CampaignRecord,
    'status' | 'campaignType' | 'maxAttempts' | 'retryDelayMinutes' | 'smsMessageTemplate'
  >,
  contact: { attempts: number },
  execution: { channel: string },
  outcome: AttemptOutcome,
  now = Date.now(),
): { next: 'completed' | 'failed' | 'skipped' | 'pending'; retryAt: Date | null } {
  const live = campaign.status === 'running' || campaign.status === 'paused';
  const retriesLeft =
    (execution.channel === 'call' || campaign.campaignType === 'sms') &&
    contact.attempts < campaign.maxAttempts;
  if (outcome.status === 'completed') return { next: 'completed', retryAt: null };
  if (outcome.status === 'skipped') return { next: 'skipped', retryAt: null };
  if (live && retriesLeft)
    return { next: 'pending', retryAt: new Date(now + campaign.retryDelayMinutes * 60_000) };
  // The calls did not connect: the SMS of a mixed campaign goes next, at once.
  if (
    live &&
    campaign.campaignType === 'mixed' &&
    execution.channel === 'call' &&
    campaign.smsMessageTemplate
  )
    return { next: 'pending', retryAt: null };
  return { next: 'failed', retryAt: null };
}
