/**
 * What carriers tell us about messages: delivery receipts (a status only moves forward) and inbound
 * messages (stored once per carrier id). Each is forwarded to the assistant's `sms_webhook_url`.
 */
import type { Db, Executor } from '../../db/client.js';
import { Tenant } from '../../db/tenant.js';
import { smsSegments } from '../../lib/sms-segments.js';
import type { CarrierEvent } from '../../providers/carriers/types.js';
import type { JobEnqueuer, JobQueue } from '../../queue/queue.js';
import { assistantEventUrls, forwardsSmsEvents } from '../assistants/reads.js';
import type { WebhookService } from '../webhooks/service.js';
import * as store from './store.js';
import { messageView } from './views.js';

export class SmsIncoming {
  constructor(private readonly deps: { db: Db; queue: JobQueue; webhooks: WebhookService }) {}

  /** Applies a verified delivery receipt; returns the message when its status changed. */
  async applyReceipt(
    organizationId: number,
    messageId: string,
    event: Extract<CarrierEvent, { kind: 'message_status' }>,
  ): Promise<void> {
    const tenant = new Tenant(organizationId);
    // Most receipts concern messages whose assistant wants no SMS events: one statement applies them.
    const quietly = await store.applyReceiptUnlessForwarded(
      this.deps.db,
      tenant,
      messageId,
      { status: event.status, ...(event.error ? { error: event.error } : {}) },
      (assistantId) => forwardsSmsEvents(tenant, assistantId),
    );
    if (quietly !== 'forwarded') return;
    // `sent` again after `delivered` (receipts arrive out of order) changes nothing.
    const order = store.RECEIPT_ORDER;
    await this.deps.queue.transaction(async (tx, jobs) => {
      // Locked: two receipts arriving together apply in turn, and the later status wins.
      const message = await store.findMessage(tx, tenant, messageId, { forUpdate: true });
      if (!message || (order[event.status] ?? 0) <= (order[message.status] ?? 0)) return;
      const updated = await store.updateMessage(tx, tenant, messageId, {
        status: event.status,
        ...(event.status === 'delivered' ? { deliveredAt: new Date() } : {}),
        ...(event.error ? { error: event.error } : {}),
      });
      if (updated) await this.#emit(tx, jobs, tenant, updated, `sms.${event.status}`);
    });
  }

  /** Stores a verified inbound message (once per carrier id) and forwards it to the assistant. */
  async receive(
    organizationId: number,
    number: { id: number; assistantId: number | null; provider: string },
    event: Extract<CarrierEvent, { kind: 'inbound_message' }>,
  ): Promise<void> {
    const tenant = new Tenant(organizationId);
    await this.deps.queue.transaction(async (tx, jobs) => {
      // Carriers repeat webhooks, sometimes at once: the unique carrier id keeps one row.
      const message = await store.insertInboundOnce(tx, tenant, {
        phoneNumberId: number.id,
        assistantId: number.assistantId,
        provider: number.provider,
        direction: 'inbound',
        fromPhoneNumber: event.from,
        toPhoneNumber: event.to,
        body: event.body,
        mediaUrls: event.mediaUrls,
        status: 'received',
        providerMessageId: event.messageId,
        segments: smsSegments(event.body),
      });
      if (message) await this.#emit(tx, jobs, tenant, message, 'sms.received');
    });
  }

  async #emit(tx: Executor, jobs: JobEnqueuer, tenant: Tenant, message: store.MessageRow, type: string) {
    if (!message.assistantId) return;
    const urls = await assistantEventUrls(tx, tenant, message.assistantId);
    if (!urls?.smsWebhookUrl) return;
    await this.deps.webhooks.emit({ tx, jobs }, tenant, {
      url: urls.smsWebhookUrl,
      type,
      data: messageView(message),
    });
  }
}
