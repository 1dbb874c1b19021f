/**
 * Incoming carrier webhooks. A webhook is trusted only after its signature is verified with the
 * credentials of the organization it concerns: first find that organization (from our id in the
 * URL, the carrier's id, or our number in the event — platform-wide lookups that change nothing),
 * then verify, then check that the call or message it reports is the record it was sent for, then
 * apply what it reports. A webhook that matches nothing of ours, or whose signature does not verify,
 * gets the same 403 (an unsigned request must not learn which calls, messages or numbers exist); a
 * signed one reporting another record than its URL names gets 403 too. None of them changes anything.
 *
 * Kinds: `voice` (a connected call asks what to do; inbound calls start here), `status` (call
 * status changes, and the answering-machine detection's verdicts), `sms` (inbound messages),
 * `sms-status` (delivery receipts).
 */
import type { Database, Db } from '../../db/client.js';
import { Tenant } from '../../db/tenant.js';
import type { Carriers } from '../../providers/carriers/index.js';
import type {
  CarrierAdapter,
  CarrierEvent,
  CarrierId,
  IncomingWebhook,
  WebhookOwner,
} from '../../providers/carriers/types.js';
import { type AudioFormat, MULAW_8K } from '../../voice/audio.js';
import {
  type MachineDetection,
  type MachineDetectionListener,
  recordMachineDetection,
  recordMachineDetectionOn,
  verdictOf,
} from '../calls/answered-by.js';
import * as callReads from '../calls/reads.js';
import type { CallService } from '../calls/service.js';
import { forbidden, notFound } from '../errors.js';
import { findNumberOnPlatform } from '../phone-numbers/reads.js';
import { TelephonyCredentialCache } from '../runtime/credential-cache.js';
import type { ConfigResolver } from '../runtime/resolve-config.js';
import * as messageReads from '../sms/reads.js';
import type { SmsService } from '../sms/service.js';

export const WEBHOOK_KINDS = ['voice', 'status', 'sms', 'sms-status'] as const;
export type WebhookKind = (typeof WEBHOOK_KINDS)[number];

export interface WebhookAnswer {
  status: number;
  contentType?: string;
  body: string;
}

const NO_CONTENT: WebhookAnswer = { status: 204, body: '' };

/** The one answer to a webhook we cannot trust, whether or not anything of ours matches it. */
const UNVERIFIED = 'Invalid webhook signature';

/** Who a webhook concerns, as found before verification. */
interface Subject {
  organizationId: number;
  assistantId: number | null;
  /** The organization's configuration version, when read with the record (see credential-cache.ts). */
  configVersion?: number;
  call?: callReads.CallRow;
  /** The call's assistant's `webhook_url`, read with the call (null: none). */
  webhookUrl?: string | null;
  message?: Pick<messageReads.MessageRow, 'id' | 'providerMessageId'>;
  number?: { id: number; assistantId: number | null; provider: string; phoneNumber: string };
}

/**
 * Told when a call is given its media stream (the answer markup is on its way to the carrier), with
 * the audio format the markup asked for (undefined: the carrier's default, μ-law 8 kHz) and the
 * organization's configuration version read with the call, when it was (runtime/versioned-cache.ts).
 */
export type CallAnsweredListener = (
  tenant: Tenant,
  callId: number,
  format: AudioFormat | undefined,
  configVersion?: number,
) => void;

export class CarrierWebhookService {
  readonly #answerListeners: CallAnsweredListener[] = [];

  /** Adds a listener for calls about to open their media stream (the voice runtime prepares the call). */
  onCallAnswered(listener: CallAnsweredListener): void {
    this.#answerListeners.push(listener);
  }

  readonly #machineListeners: MachineDetectionListener[] = [];

  /** Adds a listener for the carriers' answering-machine verdicts (the voice runtime's live sessions). */
  onMachineDetection(listener: MachineDetectionListener): void {
    this.#machineListeners.push(listener);
  }

  /** The credentials callbacks are verified with, from memory while the configuration is unchanged. */
  readonly #credentials: TelephonyCredentialCache;

  constructor(
    private readonly deps: {
      db: Db;
      carriers: Carriers;
      resolver: ConfigResolver;
      calls: CallService;
      sms: SmsService;
    },
  ) {
    this.#credentials = new TelephonyCredentialCache(deps);
  }

  /** Hears configuration changes made by any process, to drop stale credentials at once. */
  start(database: Database): Promise<void> {
    return this.#credentials.start(database);
  }

  async handle(
    carrier: CarrierId,
    kind: WebhookKind,
    webhook: IncomingWebhook,
    query: { call_id?: number; message_id?: string },
  ): Promise<WebhookAnswer> {
    const adapter = this.deps.carriers[carrier];
    const owner = adapter.identifyWebhook(webhook);
    const subject = await this.#subject(adapter, kind, owner, query);
    // Nothing of ours, or a signature that does not verify: one answer, so that it tells nothing.
    if (!subject || !(await this.#verified(adapter, subject, webhook))) throw forbidden(UNVERIFIED);
    const tenant = new Tenant(subject.organizationId);

    const events = adapter.parseWebhook(webhook);
    // A signature may not cover the URL (carrier_b, carrier_c sign the body only): a callback signed
    // for one call, replayed to another call's URL, must not complete or charge that one.
    if (!(await this.#reportsOnly(adapter, subject, idsNamed(owner, events))))
      throw forbidden('The webhook reports another call or message than the one it was sent for');
    let call = subject.call;
    for (const event of events) {
      if (event.kind === 'call_status' && call) {
        // The call as this webhook found it, while no event before this one may have changed it.
        if (call === subject.call && subject.webhookUrl !== undefined && events.length === 1)
          await this.deps.calls.applyReportedStatus({ call, webhookUrl: subject.webhookUrl }, event);
        else await this.deps.calls.applyStatus(subject.organizationId, call.id, event);
      } else if (event.kind === 'machine_detection' && call) {
        await this.#machineDetected(tenant, call.id, event, events.length === 1 ? subject.call : undefined);
      } else if (event.kind === 'inbound_call' && !call && subject.number && kind === 'voice') {
        call = await this.deps.calls.startInbound(tenant, subject.number, event);
      } else if (event.kind === 'message_status' && subject.message) {
        await this.deps.sms.applyReceipt(subject.organizationId, subject.message.id, event);
      } else if (event.kind === 'inbound_message' && subject.number) {
        await this.deps.sms.receive(subject.organizationId, subject.number, event);
      }
    }
    if (kind !== 'voice') return NO_CONTENT;
    if (!call) throw notFound('No call to connect: the number is routed to no assistant');
    if (!adapter.answerMarkup) return this.#answerByCommand(adapter, tenant, subject, call, events);
    const stream = await this.deps.calls.mediaStream(tenant, call.id);
    // The carrier's id of the call, from our record or from this (verified) answer request.
    const callSid = call.callSid ?? owner.callSid;
    const markup = adapter.answerMarkup(callSid ? { ...stream, callSid } : stream);
    // The stream follows this answer within moments: whoever serves it may get ready now.
    for (const listener of this.#answerListeners)
      listener(tenant, call.id, markup.format, subject.configVersion);
    return { status: 200, contentType: markup.contentType, body: markup.body };
  }

  /**
   * A verdict of the carrier's answering-machine detection: recorded on the call (`seen`: as this
   * webhook found it, when nothing before the verdict changed it), then told.
   */
  async #machineDetected(
    tenant: Tenant,
    callId: number,
    event: MachineDetection,
    seen: callReads.CallRow | undefined,
  ): Promise<void> {
    if (seen) await recordMachineDetectionOn(this.deps.db, seen, event);
    else await this.deps.db.transaction((tx) => recordMachineDetection(tx, tenant, callId, event));
    for (const listener of this.#machineListeners) listener(tenant, callId, verdictOf(event));
  }

  /**
   * Carriers that answer by command (carrier_b): all of a call's events come to the voice webhook;
   * the one announcing a new inbound call is answered with its media stream, the others only report.
   */
  async #answerByCommand(
    adapter: CarrierAdapter,
    tenant: Tenant,
    subject: Subject,
    call: callReads.CallRow,
    events: CarrierEvent[],
  ): Promise<WebhookAnswer> {
    if (!adapter.answerCall) throw notFound(`${adapter.id} does not ask for call instructions`);
    const ringing = call.status === 'ringing' && call.direction === 'inbound' && call.callSid !== null;
    if (!ringing || !events.some((event) => event.kind === 'inbound_call')) return NO_CONTENT;
    const { credentials } = await this.#credentials.credentials(
      tenant,
      { provider: adapter.id, assistantId: subject.assistantId },
      subject.configVersion,
    );
    if (!credentials) throw forbidden(UNVERIFIED);
    // The stream follows the answer within moments: whoever serves it may get ready now.
    // The answer command asks for μ-law both ways (carrier_b's PCMU stream).
    for (const listener of this.#answerListeners) listener(tenant, call.id, MULAW_8K);
    const stream = await this.deps.calls.mediaStream(tenant, call.id);
    await adapter.answerCall(credentials, { callSid: call.callSid!, callId: call.id, stream });
    return NO_CONTENT;
  }

  async #subject(
    adapter: CarrierAdapter,
    kind: WebhookKind,
    owner: WebhookOwner,
    query: { call_id?: number; message_id?: string },
  ): Promise<Subject | undefined> {
    const { db } = this.deps;
    if (kind === 'voice' || kind === 'status') {
      const found =
        query.call_id !== undefined
          ? await callReads.unscoped.callWithConfigVersion(db, { id: query.call_id })
          : owner.callSid
            ? await callReads.unscoped.callWithConfigVersion(db, {
                provider: adapter.id,
                callSid: owner.callSid,
              })
            : undefined;
      if (found) {
        const { call, configVersion, webhookUrl } = found;
        return call.provider === adapter.id
          ? {
              organizationId: call.organizationId,
              assistantId: call.assistantId,
              configVersion,
              call,
              webhookUrl,
            }
          : undefined;
      }
      // An inbound call: our number is the one dialled.
      if (kind === 'voice' && query.call_id === undefined) return this.#byNumber(adapter, owner.ourNumber);
      return undefined;
    }
    if (kind === 'sms-status') {
      const found =
        query.message_id !== undefined
          ? await messageReads.unscoped.messageWithConfigVersion(db, { id: query.message_id })
          : owner.messageId
            ? await messageReads.unscoped.messageWithConfigVersion(db, {
                provider: adapter.id,
                providerMessageId: owner.messageId,
              })
            : undefined;
      if (!found || found.message.provider !== adapter.id) return undefined;
      const { message, configVersion } = found;
      return {
        organizationId: message.organizationId,
        assistantId: message.assistantId,
        configVersion,
        message: { id: message.id, providerMessageId: message.providerMessageId },
      };
    }
    return this.#byNumber(adapter, owner.ourNumber);
  }

  /** Whether the webhook is signed for the organization (or assistant) that owns its subject. */
  async #verified(adapter: CarrierAdapter, subject: Subject, webhook: IncomingWebhook): Promise<boolean> {
    const { credentials } = await this.#credentials.credentials(
      new Tenant(subject.organizationId),
      { provider: adapter.id, assistantId: subject.assistantId },
      subject.configVersion,
    );
    return credentials !== null && adapter.verifyWebhook(credentials, webhook);
  }

  /**
   * Whether a verified webhook reports only the record it concerns: a webhook for a call names that
   * call's carrier id and no other call or message (carrier_b's echoed call id too must be the
   * call's); one for a message likewise. A webhook found by our number names a new inbound call or
   * message, which no record holds yet.
   */
  async #reportsOnly(adapter: CarrierAdapter, subject: Subject, named: NamedIds): Promise<boolean> {
    const { db } = this.deps;
    const { call, message } = subject;
    if (call) {
      if (named.messageIds.size > 0 || named.callSids.size === 0) return false;
      if ([...named.callIds].some((id) => id !== call.id)) return false;
      for (const sid of named.callSids) {
        const held = () => callReads.unscoped.callBySid(db, adapter.id, sid);
        if (!(await isCarrierIdOf({ id: call.id, carrierId: call.callSid }, sid, held))) return false;
      }
      return true;
    }
    if (message) {
      if (named.callSids.size > 0 || named.messageIds.size === 0) return false;
      for (const messageId of named.messageIds) {
        const held = () => messageReads.unscoped.messageByProviderId(db, adapter.id, messageId);
        const record = { id: message.id, carrierId: message.providerMessageId };
        if (!(await isCarrierIdOf(record, messageId, held))) return false;
      }
      return true;
    }
    return true;
  }

  async #byNumber(adapter: CarrierAdapter, ourNumber: string | undefined): Promise<Subject | undefined> {
    if (!ourNumber) return undefined;
    const number = await findNumberOnPlatform(this.deps.db, ourNumber);
    if (!number || number.provider !== adapter.id) return undefined;
    // A graph-routed number is answered by the graph's entry assistant.
    const assistantId = await this.deps.resolver.assistantForNumber(
      new Tenant(number.organizationId),
      number,
    );
    return { organizationId: number.organizationId, assistantId, number: { ...number, assistantId } };
  }
}

/** The carrier's ids a webhook names: its calls and messages, and our call ids it echoes (carrier_b). */
interface NamedIds {
  callSids: Set<string>;
  messageIds: Set<string>;
  callIds: Set<number>;
}

/** Every id a webhook names, as the adapter reads it (before verification) and in each event it reports. */
function idsNamed(owner: WebhookOwner, events: CarrierEvent[]): NamedIds {
  const named: NamedIds = { callSids: new Set(), messageIds: new Set(), callIds: new Set() };
  if (owner.callSid) named.callSids.add(owner.callSid);
  if (owner.messageId) named.messageIds.add(owner.messageId);
  for (const event of events) {
    if ('callSid' in event) named.callSids.add(event.callSid);
    else named.messageIds.add(event.messageId);
    if ('callId' in event && event.callId !== undefined) named.callIds.add(event.callId);
  }
  return named;
}

/**
 * Whether `carrierId` is the record's id at the carrier: the one stored or — while none is stored
 * yet, because the callback overtook the carrier's answer to our request — one no other record holds.
 */
async function isCarrierIdOf<Id>(
  record: { id: Id; carrierId: string | null },
  carrierId: string,
  holder: () => Promise<{ id: Id } | undefined>,
): Promise<boolean> {
  if (record.carrierId !== null) return record.carrierId === carrierId;
  const held = await holder();
  return held === undefined || held.id === record.id;
}
