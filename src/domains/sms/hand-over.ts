/**
 * Handing claimed messages (status `sending`) to their carrier, and recording what it answered —
 * for an immediate send one message, for the drain a whole batch in one transaction: the accepted
 * messages in one statement with their charges in another, the failed ones in one, the retryable
 * ones back in the queue in one, and the listeners told once.
 */
import type { Executor } from '../../db/client.js';
import type { Tenant } from '../../db/tenant.js';
import type { Carriers } from '../../providers/carriers/index.js';
import type { CarrierId } from '../../providers/carriers/types.js';
import { ProviderError } from '../../providers/errors.js';
import type { JobEnqueuer, JobQueue } from '../../queue/queue.js';
import { type BillingService, roundMoney } from '../billing/service.js';
import { endSendingMany, markAcceptedMany } from './drain-store.js';
import type { Settlement } from './settlement.js';
import type { MessageRow } from './store.js';

/** What a carrier is handed. */
export type OutgoingMessage = Pick<
  MessageRow,
  'id' | 'provider' | 'fromPhoneNumber' | 'toPhoneNumber' | 'body' | 'mediaUrls'
>;

export type CarrierAnswer =
  | { id: string; status: 'accepted'; to: string; providerMessageId: string; segments: number; cost: number }
  /** A retryable failure (time-out, 429, 5xx) of a message that may be tried again. */
  | { id: string; status: 'retry'; error: string }
  | { id: string; status: 'failed'; error: string };

export interface Recorded {
  accepted: MessageRow[];
  requeued: MessageRow[];
  failed: MessageRow[];
}

export class HandOver {
  constructor(
    private readonly deps: {
      queue: JobQueue;
      carriers: Carriers;
      billing: BillingService;
      settlement: Settlement;
      publicUrl: string;
      pricePerSegment: number;
    },
  ) {}

  receiptUrl(provider: string, messageId: string): string {
    return `${this.deps.publicUrl}/webhooks/${provider}/sms-status?message_id=${messageId}`;
  }

  /**
   * Asks the carrier to send `message`; records nothing. A retryable failure is `retry` when
   * `mayRetry`, else `failed` with the carrier's words; anything but a carrier's failure throws.
   */
  async send(
    message: OutgoingMessage,
    credentials: Record<string, string>,
    mayRetry: boolean,
  ): Promise<CarrierAnswer> {
    const adapter = this.deps.carriers[message.provider as CarrierId];
    try {
      const sent = await adapter.sendMessage(credentials, {
        from: message.fromPhoneNumber,
        to: message.toPhoneNumber,
        body: message.body,
        mediaUrls: message.mediaUrls,
        statusCallbackUrl: this.receiptUrl(message.provider, message.id),
      });
      const segments = Math.max(sent.segments, 1);
      return {
        id: message.id,
        status: 'accepted',
        to: message.toPhoneNumber,
        providerMessageId: sent.messageId,
        segments,
        cost: roundMoney(segments * this.deps.pricePerSegment),
      };
    } catch (error) {
      if (!(error instanceof ProviderError)) throw error;
      return {
        id: message.id,
        status: mayRetry && error.retryable ? 'retry' : 'failed',
        error: error.message,
      };
    }
  }

  /**
   * Records the carrier's answers in one transaction: accepted messages `sent` (unless a receipt
   * got there first) and charged, failed ones `failed`, retryable ones `queued` again; the listeners
   * are told of the accepted and failed ones. `alsoIn` runs last in the same transaction (the drain
   * schedules the retries' wake-up there).
   */
  record(
    tenant: Tenant,
    answers: CarrierAnswer[],
    alsoIn?: (tx: Executor, jobs: JobEnqueuer, recorded: Recorded) => Promise<void>,
  ): Promise<Recorded> {
    const accepted = answers.filter((answer) => answer.status === 'accepted');
    const retries = answers.filter((answer) => answer.status === 'retry');
    const failures = answers.filter((answer) => answer.status === 'failed');
    // The message rows first, then the listeners (a campaign's rows), then the wallet: the order in
    // which every path that settles a message takes its locks.
    return this.deps.queue.retryingTransaction(async (tx, jobs) => {
      const recorded: Recorded = {
        accepted: await markAcceptedMany(tx, tenant, accepted),
        requeued: await endSendingMany(tx, tenant, 'queued', retries),
        failed: await endSendingMany(tx, tenant, 'failed', failures),
      };
      await this.deps.settlement.tell(tx, jobs, tenant, [...recorded.accepted, ...recorded.failed]);
      const charges = accepted.filter((answer) => answer.cost > 0);
      if (charges.length > 0) {
        await this.deps.billing.applyMany(
          tenant.organizationId,
          charges.map((answer) => ({
            amount: -answer.cost,
            kind: 'sms' as const,
            description: `SMS to ${answer.to}: ${answer.segments} segment${answer.segments === 1 ? '' : 's'}`,
            reference: `sms:${answer.id}`,
          })),
          tx,
        );
      }
      await alsoIn?.(tx, jobs, recorded);
      return recorded;
    });
  }
}
