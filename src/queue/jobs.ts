/**
 * Every background job: its name, its payload type and its retry policy. Services enqueue by name
 * through `JobQueue`; `src/queue/workers.ts` says which service handles each one.
 */
export interface JobPayloads {
  /** A mail to deliver; the message is sealed because it may carry a one-time token. */
  'mail.send': { sealed_message: string };
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
};
