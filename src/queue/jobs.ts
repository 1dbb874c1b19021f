/**
 * Every background job: its name, its payload type and its retry policy. Services enqueue by name
 * through `JobQueue`; `src/queue/workers.ts` says which service handles each one.
 */
export interface JobPayloads {
  /** A mail to deliver; the message is sealed because it may carry a one-time token. */
  'mail.send': { sealed_message: string };
  /** One attempt at a webhook delivery (a row of webhook_deliveries). */
  'webhook.deliver': { delivery_id: number };
  /**
   * Drains one number's SMS queue for a moment: claims the messages due within a short horizon at
   * the number's rate and hands them to the carrier, each at its slot (domains/sms/drain.ts). At
   * most one waits per number (the queue's `short` policy, keyed by the number's id).
   */
  'sms.drain': { organization_id: number; phone_number_id: number };
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
  /**
   * The after-call analysis of one call (a row of call_analyses, `pending`): summary, sentiment and
   * structured data from the transcript. Enqueued with a start delay (domains/analysis/service.ts).
   */
  'call.analyze': { call_id: number; organization_id: number };
  /**
   * Processes one knowledge-base document (a row of knowledge_documents) for one generation: parse,
   * split, embed in batches, store. Resumes where a killed attempt stopped; void once the document
   * was re-processed (a newer generation) or deleted.
   */
  'knowledge.process': { document_id: number; organization_id: number; generation: number };
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
  // Keyed per number, not per organization: each number has its own turn and pace, so one number's
  // backlog never holds another's drain back, and the wake-ups of one number's sends (one per send
  // statement, one per claim that leaves messages behind) coalesce into the one waiting job. A run
  // is one statement (the claim) and is idempotent — it takes what is due, nothing when nothing is —
  // so a wake-up dropped because one already waits loses nothing, and a failed run (the database
  // away) is simply run again soon. The carrier is called after the run ended (drain.ts), so the
  // job's time-out does not include the carrier's: an active run after 30 s belongs to a process
  // that died. While a process drains a number it runs the next claims itself; the job is the
  // fallback, due a second after each. Retryable carrier failures are not retried by the job: the
  // message goes back to the queue with a back-off of its own (drain.ts).
  'sms.drain': { retryLimit: 10, retryDelay: 1, retryBackoff: true, expireInSeconds: 30, policy: 'short' },
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
  // A language model that failed (every candidate: 5xx, time-out, unreadable answer) may be back in
  // a moment: 4 attempts over about a minute and a half (15 s, 30 s, 60 s). The last one that fails
  // leaves the row `failed` with the reason instead of throwing. An attempt asks at most two
  // questions of at most 60 s each, and a retried structured answer: 300 s is ample.
  'call.analyze': { retryLimit: 3, retryDelay: 15, retryBackoff: true, expireInSeconds: 300 },
  // An attempt stores its chunks batch by batch and the next attempt starts after the last stored
  // one, so a retry never repeats work. An embeddings vendor that is down or limiting (429) may be
  // back soon: 6 attempts over about 8 minutes. A document of the largest size takes a few minutes
  // to embed; an attempt past 15 minutes belongs to a process that died.
  'knowledge.process': { retryLimit: 5, retryDelay: 15, retryBackoff: true, expireInSeconds: 900 },
};
