/**
 * Every background job: its name, its payload type and its retry policy. Services enqueue by name
 * through `JobQueue`; `src/queue/workers.ts` says which service handles each one.
 */
export interface JobPayloads {
  /** A mail to deliver; the message is sealed because it may carry a one-time token. */
  'mail.send': { sealed_message: string };
  /** One attempt at a webhook delivery (a row of webhook_deliveries). */
  'webhook.deliver': { delivery_id: number };
  /** Sends one queued SMS when its number's rate allows (a row of messages). */
  'sms.send': { message_id: string; organization_id: number };
  /**
   * Hands a running campaign's due contacts to attempts, within its and its organization's limits
   * (at most one waiting per campaign: the queue's `short` policy, keyed by campaign).
   */
  'campaign.dispatch': { campaign_id: number; organization_id: number };
  /** Makes one contact attempt (a row of campaign_executions): places the call or queues the SMS. */
  'campaign.attempt': { execution_id: number; organization_id: number };
  /**
   * A campaign's alarm clock: starts a scheduled campaign whose time has come (next_run_at), or
   * dispatches a running one whose retries are due. Enqueued with a start time; harmless when early.
   */
  'campaign.wakeup': { campaign_id: number; organization_id: number };
}

export type JobName = keyof JobPayloads;

export interface JobPolicy {
  /** Attempts after the first. */
  retryLimit: number;
  /** Seconds before the first retry; doubled each time when `retryBackoff`. */
  retryDelay: number;
  retryBackoff: boolean;
  /** Seconds a single attempt may run before it counts as failed. */
  expireInSeconds: number;
  /**
   * pg-boss queue policy: `standard` (default) keeps every job; `short` keeps at most one queued job
   * per singleton key, dropping further sends while one waits — for idempotent "look again" jobs.
   */
  policy?: 'standard' | 'short';
}

export const jobPolicies: Record<JobName, JobPolicy> = {
  'mail.send': { retryLimit: 8, retryDelay: 15, retryBackoff: true, expireInSeconds: 120 },
  // 9 attempts over roughly 2 to 4 hours (30 s doubled each time, with jitter); one attempt takes at
  // most 10 s (docs/webhooks.md).
  'webhook.deliver': { retryLimit: 8, retryDelay: 30, retryBackoff: true, expireInSeconds: 60 },
  // Retries only follow retryable carrier failures (the message goes back to queued in between).
  // A send waits at most a moment plus the carrier's 10 s: a job still active after 30 s belongs to
  // a process that died, and is handed to another worker.
  'sms.send': { retryLimit: 5, retryDelay: 10, retryBackoff: true, expireInSeconds: 30 },
  // Dispatching is idempotent (it locks the campaign and looks at what is due), so one waiting
  // dispatch per campaign is enough however many attempts finish meanwhile. Not `stately`: a
  // dispatch left active by a killed process would block the campaign's next one until it expired.
  'campaign.dispatch': {
    retryLimit: 5,
    retryDelay: 2,
    retryBackoff: true,
    expireInSeconds: 60,
    policy: 'short',
  },
  // An attempt claims its execution row before it calls the carrier; a retry of the job after that
  // finds the row claimed and does nothing (the sweep settles attempts whose process died).
  'campaign.attempt': { retryLimit: 3, retryDelay: 5, retryBackoff: true, expireInSeconds: 60 },
  'campaign.wakeup': { retryLimit: 5, retryDelay: 5, retryBackoff: true, expireInSeconds: 60 },
};
