/**
 * SMS and MMS, as one service for routes, carrier webhooks, campaigns and the job workers: sending
 * (sending.ts), the queue's drain at each number's rate (drain.ts), handing messages to carriers and
 * recording their answers (hand-over.ts), settling outbound messages and telling the listeners
 * (settlement.ts), delivery receipts and inbound messages (incoming.ts), and here what is left —
 * reading a message, cancelling a queued one, the queue's figures.
 */
import type { Database, Db, Executor } from '../../db/client.js';
import type { Tenant } from '../../db/tenant.js';
import type { OutboundTargets } from '../../lib/outbound-target.js';
import type { Carriers } from '../../providers/carriers/index.js';
import type { CarrierEvent } from '../../providers/carriers/types.js';
import type { JobEnqueuer, JobLogger, JobQueue } from '../../queue/queue.js';
import type { BillingService } from '../billing/service.js';
import { conflict, notFound } from '../errors.js';
import type { Principal } from '../identity/principal.js';
import type { ConfigResolver } from '../runtime/resolve-config.js';
import type { WebhookService } from '../webhooks/service.js';
import { SmsDrain } from './drain.js';
import { HandOver } from './hand-over.js';
import { SmsIncoming } from './incoming.js';
import { SenderCache } from './senders.js';
import { type OutboundMessage, type SendSms, SmsSending, type StoredAnswer } from './sending.js';
import { type MessageSettledListener, Settlement } from './settlement.js';
import * as store from './store.js';

export type { OutboundMessage, SendAnswer, SendSms } from './sending.js';
export type { MessageSettledListener } from './settlement.js';
export { sendInterrupted } from './settlement.js';

export class SmsService {
  readonly #settlement: Settlement;
  readonly #sending: SmsSending;
  readonly #drain: SmsDrain;
  readonly #incoming: SmsIncoming;
  readonly #senders: SenderCache;

  constructor(
    private readonly deps: {
      db: Db;
      queue: JobQueue;
      carriers: Carriers;
      resolver: ConfigResolver;
      billing: BillingService;
      webhooks: WebhookService;
      /** The outbound-target policy: the carrier fetches `media_urls` for the tenant. */
      targets: OutboundTargets;
      publicUrl: string;
      pricePerSegment: number;
      log: JobLogger;
    },
  ) {
    const settlement = new Settlement(deps.queue);
    const handOver = new HandOver({ ...deps, settlement });
    this.#settlement = settlement;
    this.#senders = new SenderCache(deps);
    this.#sending = new SmsSending({ ...deps, handOver, senders: this.#senders });
    this.#drain = new SmsDrain({ ...deps, handOver, settlement });
    this.#incoming = new SmsIncoming(deps);
  }

  /** Hears changes to senders made by any process (see senders.ts). */
  start(database: Database): Promise<void> {
    return this.#senders.start(database);
  }

  /** Adds a listener for outbound messages being settled (see MessageSettledListener). */
  onMessageSettled(listener: MessageSettledListener): void {
    this.#settlement.listen(listener);
  }

  /**
   * Queues an outbound message in the caller's transaction: the row and its number's drain wake-up
   * commit together, as `/sms/send` with `queue: true` writes them. The number's rate and FIFO apply.
   */
  queueOutbound(
    tx: Executor,
    jobs: JobEnqueuer,
    tenant: Tenant,
    message: OutboundMessage,
  ): Promise<store.MessageRow> {
    return this.#sending.queueOutbound(tx, jobs, tenant, message);
  }

  /**
   * Fails a message whose send was interrupted (`sendInterrupted`), in the caller's transaction, and
   * tells the listeners; undefined when it is no longer `sending`. The campaign sweep settles so.
   */
  failInterruptedSend(
    tx: Executor,
    jobs: JobEnqueuer,
    tenant: Tenant,
    id: string,
  ): Promise<store.MessageRow | undefined> {
    return this.#settlement.failInterruptedSend(tx, jobs, tenant, id);
  }

  /** Sends or queues a message; with an idempotency key a repeat answers the first answer again. */
  send(principal: Principal, body: SendSms, headerKey?: string): Promise<StoredAnswer> {
    return this.#sending.send(principal, body, headerKey);
  }

  /** The `sms.drain` job (see drain.ts). */
  runDrain(payload: { organization_id: number; phone_number_id: number }): Promise<void> {
    return this.#drain.run(payload);
  }

  /** Wakes the drain of every number with queued messages: a process starting its workers does. */
  wakeEveryQueue(): Promise<void> {
    return this.#drain.wakeEveryQueue();
  }

  /** Forgets this process's wake-up timers; the queue's jobs stay for whoever runs next. */
  stop(): void {
    this.#drain.stop();
  }

  async get(principal: Principal, id: string): Promise<store.MessageRow> {
    const row = await store.findMessage(this.deps.db, principal.tenant, id);
    if (!row) throw notFound('Message not found');
    return row;
  }

  /** Cancels a message still waiting in the queue. */
  async cancel(principal: Principal, id: string): Promise<store.MessageRow> {
    const cancelled = await this.#settlement.settle(principal.tenant, id, { status: 'cancelled' }, 'queued');
    if (cancelled) return cancelled;
    const row = await this.get(principal, id);
    throw conflict(`Only a queued message can be cancelled; this one is ${row.status}`);
  }

  async queueStats(principal: Principal) {
    const { byStatus, byNumber } = await store.queueStats(this.deps.db, principal.tenant);
    return { byStatus, byNumber };
  }

  /** Applies a verified delivery receipt. */
  applyReceipt(
    organizationId: number,
    messageId: string,
    event: Extract<CarrierEvent, { kind: 'message_status' }>,
  ): Promise<void> {
    return this.#incoming.applyReceipt(organizationId, messageId, event);
  }

  /** Stores a verified inbound message (once per carrier id) and forwards it to the assistant. */
  receive(
    organizationId: number,
    number: { id: number; assistantId: number | null; provider: string },
    event: Extract<CarrierEvent, { kind: 'inbound_message' }>,
  ): Promise<void> {
    return this.#incoming.receive(organizationId, number, event);
  }
}
