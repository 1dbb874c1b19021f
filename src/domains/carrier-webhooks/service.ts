/**
 * Incoming carrier webhooks. A webhook is trusted only after its signature is verified with the
 * credentials of the organization it concerns: first find that organization (from our id in the
 * URL, the carrier's id, or our number in the event — platform-wide lookups that change nothing),
 * then verify, then apply what it reports. A bad signature gets 403 and changes nothing.
 *
 * Kinds: `voice` (a connected call asks what to do; inbound calls start here), `status` (call
 * status changes), `sms` (inbound messages), `sms-status` (delivery receipts).
 */
import type { Db } from '../../db/client.js';
import { Tenant } from '../../db/tenant.js';
import { AppError, forbidden, notFound } from '../../http/errors.js';
import type { Carriers } from '../../providers/carriers/index.js';
import type { CarrierAdapter, CarrierId, IncomingWebhook } from '../../providers/carriers/types.js';
import type { CallService } from '../calls/service.js';
import * as callStore from '../calls/store.js';
import { entryAssistantOf } from '../graphs/store.js';
import { findNumberOnPlatform } from '../phone-numbers/store.js';
import type { ConfigResolver } from '../runtime/resolve-config.js';
import type { SmsService } from '../sms/service.js';
import * as smsStore from '../sms/store.js';

export const WEBHOOK_KINDS = ['voice', 'status', 'sms', 'sms-status'] as const;
export type WebhookKind = (typeof WEBHOOK_KINDS)[number];

export interface WebhookAnswer {
  status: number;
  contentType?: string;
  body: string;
}

const NO_CONTENT: WebhookAnswer = { status: 204, body: '' };

/** Who a webhook concerns, as found before verification. */
interface Subject {
  organizationId: number;
  assistantId: number | null;
  call?: callStore.CallRow;
  messageId?: string;
  number?: { id: number; assistantId: number | null; provider: string; phoneNumber: string };
}

export class CarrierWebhookService {
  constructor(
    private readonly deps: {
      db: Db;
      carriers: Carriers;
      resolver: ConfigResolver;
      calls: CallService;
      sms: SmsService;
    },
  ) {}

  async handle(
    carrier: CarrierId,
    kind: WebhookKind,
    webhook: IncomingWebhook,
    query: { call_id?: number; message_id?: string },
  ): Promise<WebhookAnswer> {
    const adapter = this.deps.carriers[carrier];
    const subject = await this.#subject(adapter, kind, webhook, query);
    if (!subject) throw notFound('Nothing of ours matches this webhook');
    const tenant = new Tenant(subject.organizationId);
    const { credentials } = await this.deps.resolver.telephonyCredentials(tenant, {
      provider: carrier,
      assistantId: subject.assistantId,
    });
    if (!credentials || !adapter.verifyWebhook(credentials, webhook))
      throw forbidden('Invalid webhook signature');

    const events = adapter.parseWebhook(webhook);
    let call = subject.call;
    for (const event of events) {
      if (event.kind === 'call_status' && call) {
        await this.deps.calls.applyStatus(subject.organizationId, call.id, event);
      } else if (event.kind === 'inbound_call' && !call && subject.number && kind === 'voice') {
        call = await this.deps.calls.startInbound(tenant, subject.number, event);
      } else if (event.kind === 'message_status' && subject.messageId) {
        await this.deps.sms.applyReceipt(subject.organizationId, subject.messageId, event);
      } else if (event.kind === 'inbound_message' && subject.number) {
        await this.deps.sms.receive(subject.organizationId, subject.number, event);
      }
    }
    if (kind !== 'voice') return NO_CONTENT;
    if (!call) throw notFound('No call to connect: the number is routed to no assistant');
    if (!adapter.answerMarkup) throw new AppError(404, `${carrier} does not ask for call instructions`);
    const markup = adapter.answerMarkup(await this.deps.calls.streamUrl(tenant, call.id));
    return { status: 200, contentType: markup.contentType, body: markup.body };
  }

  async #subject(
    adapter: CarrierAdapter,
    kind: WebhookKind,
    webhook: IncomingWebhook,
    query: { call_id?: number; message_id?: string },
  ): Promise<Subject | undefined> {
    const { db } = this.deps;
    const owner = adapter.identifyWebhook(webhook);
    if (kind === 'voice' || kind === 'status') {
      const call =
        query.call_id !== undefined
          ? await callStore.unscoped.callById(db, query.call_id)
          : owner.callSid
            ? await callStore.unscoped.callBySid(db, adapter.id, owner.callSid)
            : undefined;
      if (call) {
        return call.provider === adapter.id
          ? { organizationId: call.organizationId, assistantId: call.assistantId, call }
          : undefined;
      }
      // An inbound call: our number is the one dialled.
      if (kind === 'voice' && query.call_id === undefined) return this.#byNumber(adapter, owner.ourNumber);
      return undefined;
    }
    if (kind === 'sms-status') {
      const message =
        query.message_id !== undefined
          ? await smsStore.unscoped.messageById(db, query.message_id)
          : owner.messageId
            ? await smsStore.unscoped.messageByProviderId(db, adapter.id, owner.messageId)
            : undefined;
      if (!message || message.provider !== adapter.id) return undefined;
      return {
        organizationId: message.organizationId,
        assistantId: message.assistantId,
        messageId: message.id,
      };
    }
    return this.#byNumber(adapter, owner.ourNumber);
  }

  async #byNumber(adapter: CarrierAdapter, ourNumber: string | undefined): Promise<Subject | undefined> {
    if (!ourNumber) return undefined;
    const number = await findNumberOnPlatform(this.deps.db, ourNumber);
    if (!number || number.provider !== adapter.id) return undefined;
    // A graph-routed number is answered by the graph's entry assistant.
    const assistantId =
      number.assistantId ??
      (number.graphId !== null
        ? ((await entryAssistantOf(this.deps.db, new Tenant(number.organizationId), number.graphId)) ?? null)
        : null);
    return { organizationId: number.organizationId, assistantId, number: { ...number, assistantId } };
  }
}
