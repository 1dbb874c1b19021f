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
};
