/**
 * Calls: placing an outbound call (POST /calls/initiate) and keeping the call record true to what
 * the carrier reports (status webhooks): status moves only forward, the final status sets the
 * duration and end time, and a completed call is charged once, per started second.
 */
import type { Db, Executor } from '../../db/client.js';
import { FINAL_CALL_STATUSES } from '../../db/schema/telephony.js';
import { Tenant } from '../../db/tenant.js';
import { type MediaTokens, mediaStreamUrl } from '../../lib/media-token.js';
import { NOT_E164_MESSAGE, toE164 } from '../../lib/phone.js';
import { renderTemplate, TemplateError, type TemplateVariables } from '../../lib/templates.js';
import type { Carriers } from '../../providers/carriers/index.js';
import { isTelephonyProvider } from '../../providers/carriers/index.js';
import type { MediaStreamTarget } from '../../providers/carriers/media.js';
import type { CarrierEvent } from '../../providers/carriers/types.js';
import { ProviderError } from '../../providers/errors.js';
import type { JobEnqueuer, JobQueue } from '../../queue/queue.js';
import { assistantEventUrls, unscoped as unscopedAssistants } from '../assistants/reads.js';
import type { BillingService } from '../billing/service.js';
import {
  badRequest,
  forbidden,
  notFound,
  paymentRequired,
  upstreamFailed,
  ValidationFailed,
} from '../errors.js';
import type { Principal } from '../identity/principal.js';
import { findNumberOnPlatform } from '../phone-numbers/reads.js';
import { findRecording } from '../recordings/reads.js';
import type { ConfigResolver } from '../runtime/resolve-config.js';
import type { WebhookService } from '../webhooks/service.js';
import { detectsVoicemail } from './answered-by.js';
import { callEventData, transcriptEventSegment } from './event-data.js';
import { rollUpFinishedCall } from './rollups.js';
import { type StatusEvent, statusChange } from './status-change.js';
import * as store from './store.js';
import { transcriptOf } from './transcripts.js';
import { unscoped } from './unscoped-store.js';

export interface InitiateCall {
  from_phone_number: string;
  to_phone_number: string;
  assistant_id?: number;
  welcome_message?: string;
  agenda?: string;
  variables?: object;
}

/**
 * Told, inside the transaction that records it, when a call reaches a final status — from a status
 * webhook, a status recovered from the carrier, or a dial the carrier refused. Campaigns finish
 * their attempts so, atomically with the call record.
 */
export type CallFinishedListener = (
  tx: Executor,
  jobs: JobEnqueuer,
  tenant: Tenant,
  call: store.CallRow,
) => Promise<void>;

/** An outbound call to record before dialling. */
export interface OutboundCall {
  assistantId: number;
  phoneNumberId: number;
  provider: string;
  from: string;
  to: string;
  callMeta: Record<string, unknown>;
  campaignId?: number;
}

export interface CallUrls {
  /** Public base URL of the HTTP API (PUBLIC_URL). */
  publicUrl: string;
}

export class CallService {
  constructor(
    private readonly deps: {
      db: Db;
      carriers: Carriers;
      resolver: ConfigResolver;
      billing: BillingService;
      mediaTokens: MediaTokens;
      queue: JobQueue;
      webhooks: WebhookService;
      publicUrl: string;
      pricePerMinute: number;
      /** The signed, expiring URL of a call's recording (domains/recordings); without it none is given. */
      recordingUrl?: (callId: number) => string;
    },
  ) {}

  readonly #finishedListeners: CallFinishedListener[] = [];

  /** Adds a listener for calls reaching a final status (see CallFinishedListener). */
  onCallFinished(listener: CallFinishedListener): void {
    this.#finishedListeners.push(listener);
  }

  async #finished(tx: Executor, jobs: JobEnqueuer, tenant: Tenant, call: store.CallRow): Promise<void> {
    await rollUpFinishedCall(tx, call);
    for (const listener of this.#finishedListeners) await listener(tx, jobs, tenant, call);
  }

  /** Records an outbound call (status `queued`) in the caller's transaction, before it is dialled. */
  async recordOutbound(ex: Executor, tenant: Tenant, call: OutboundCall): Promise<store.CallRow> {
    const row = await store.insertCall(
      ex,
      tenant,
      {
        assistantId: call.assistantId,
        phoneNumberId: call.phoneNumberId,
        provider: call.provider,
        direction: 'outbound',
        fromPhoneNumber: call.from,
        toPhoneNumber: call.to,
        customerPhoneNumber: call.to,
        status: 'queued',
        callMeta: call.callMeta,
        ...(call.campaignId !== undefined ? { campaignId: call.campaignId } : {}),
      },
      { type: 'call.queued', data: { to: call.to, from: call.from } },
    );
    return row;
  }

  /**
   * Asks the carrier to place a recorded call. On success the carrier's call id is kept; on a
   * refusal the call is failed (listeners told, in the same transaction) and the error returned.
   */
  async dial(
    tenant: Tenant,
    call: store.CallRow,
    credentials: Record<string, string>,
    options: { detectMachine?: boolean } = {},
  ): Promise<{ callSid: string } | { error: ProviderError }> {
    const provider = call.provider as keyof Carriers;
    try {
      const placed = await this.deps.carriers[provider].placeCall(credentials, {
        from: call.fromPhoneNumber,
        to: call.toPhoneNumber,
        callId: call.id,
        organizationId: tenant.organizationId,
        answerUrl: this.webhookUrl(call.provider, 'voice', call.id),
        statusCallbackUrl: this.webhookUrl(call.provider, 'status', call.id),
        stream: await this.mediaStream(tenant, call.id),
        detectMachine: options.detectMachine ?? (await detectsVoicemail(this.deps.db, tenant, call)),
      });
      await store.recordPlaced(this.deps.db, tenant, call.id, placed.callSid);
      return { callSid: placed.callSid };
    } catch (error) {
      if (!(error instanceof ProviderError)) throw error;
      await this.failUnplaced(tenant, call.id, error.message, { retryable: error.retryable });
      return { error };
    }
  }

  /**
   * Keeps the carrier's id of a call whose dial went through though its answer was lost (the campaign
   * sweep finds the call at the carrier), unless a webhook that arrived first already did.
   */
  async keepCallSid(tenant: Tenant, callId: number, callSid: string): Promise<void> {
    await store.setCallSid(this.deps.db, tenant, callId, callSid);
  }

  /**
   * Fails a call that never reached the carrier (refused, or its dial was interrupted), unless a
   * webhook already moved it on. Listeners are told in the same transaction.
   */
  async failUnplaced(
    tenant: Tenant,
    callId: number,
    reason: string,
    details: Record<string, unknown> = {},
  ): Promise<void> {
    await this.deps.queue.transaction(async (tx, jobs) => {
      const current = await store.findCall(tx, tenant, callId, { forUpdate: true });
      if (current?.status !== 'queued') return;
      const failed = await store.updateCall(tx, tenant, callId, {
        status: 'failed',
        endedAt: new Date(),
        callMeta: { ...current.callMeta, error: reason },
      });
      await store.insertCallEvent(tx, tenant, callId, 'call.failed', { error: reason, ...details });
      if (failed) await this.#finished(tx, jobs, tenant, failed);
    });
  }

  /**
   * Records an inbound call that a carrier announced for one of our numbers (verified), when the
   * number is routed to an assistant; the platform then answers with the call's media stream.
   */
  async startInbound(
    tenant: Tenant,
    number: { id: number; assistantId: number | null; provider: string; phoneNumber: string },
    event: Extract<CarrierEvent, { kind: 'inbound_call' }>,
  ): Promise<store.CallRow | undefined> {
    if (number.assistantId === null) return undefined;
    const created = await this.deps.queue.transaction(async (tx, jobs) => {
      // Carriers repeat webhooks, sometimes at once: the unique carrier call id keeps one row.
      const call = await store.insertCallOnce(tx, tenant, {
        assistantId: number.assistantId,
        phoneNumberId: number.id,
        provider: number.provider,
        callSid: event.callSid,
        direction: 'inbound',
        fromPhoneNumber: number.phoneNumber,
        toPhoneNumber: number.phoneNumber,
        customerPhoneNumber: event.from,
        status: 'ringing',
        ...(event.sipAgent ? { callMeta: { sip_agent: event.sipAgent } } : {}),
      });
      if (!call) return undefined;
      await store.insertCallEvent(tx, tenant, call.id, 'call.ringing', {
        call_sid: event.callSid,
        from: event.from,
      });
      await this.#emit(tx, jobs, tenant, call, 'call.ringing');
      return call;
    });
    return created ?? (await unscoped.callBySid(this.deps.db, number.provider, event.callSid));
  }

  /**
   * Tells the assistant's `webhook_url`, if it has one, what happened to a call. The event of a final
   * status carries the whole transcript, read in the transaction that ends the call. `webhookUrl`:
   * the assistant's, when the caller read it already (null: it has none).
   */
  async #emit(
    tx: Executor,
    jobs: JobEnqueuer,
    tenant: Tenant,
    call: store.CallRow,
    type: string,
    webhookUrl?: string | null,
  ): Promise<void> {
    if (!call.assistantId) return;
    const url =
      webhookUrl !== undefined
        ? webhookUrl
        : (await assistantEventUrls(tx, tenant, call.assistantId))?.webhookUrl;
    if (!url) return;
    const final = FINAL_CALL_STATUSES.includes(call.status);
    const transcript = final
      ? { transcript: (await transcriptOf(tx, tenant, call.id)).map(transcriptEventSegment) }
      : {};
    await this.deps.webhooks.emit({ tx, jobs }, tenant, {
      url,
      type: type.replace(/-/g, '_'),
      data: {
        ...callEventData(call),
        ...transcript,
        ...(final ? await this.#recordingUrl(tx, tenant, call) : {}),
      },
    });
  }

  /** A recorded call's signed recording URL (also while the file is still being stored: it works moments later). */
  async #recordingUrl(tx: Executor, tenant: Tenant, call: store.CallRow) {
    if (!this.deps.recordingUrl) return {};
    const recording = await findRecording(tx, tenant, call.id);
    if (!recording || recording.status === 'failed') return {};
    return { recording_url: this.deps.recordingUrl(call.id) };
  }

  /** The webhook URLs a call's carrier is given; `call_id` lets a webhook find its call before the SID is known. */
  webhookUrl(provider: string, kind: 'voice' | 'status', callId: number): string {
    return `${this.deps.publicUrl}/webhooks/${provider}/${kind}?call_id=${callId}`;
  }

  /**
   * Where the carrier connects the call's audio, and the single-call token that proves the stream is
   * this call's. The URL has no query (carrier_a drops it): each adapter carries the token its way.
   */
  async mediaStream(tenant: Tenant, callId: number): Promise<MediaStreamTarget> {
    const token = await this.deps.mediaTokens.issue({ callId, organizationId: tenant.organizationId });
    return { url: mediaStreamUrl(this.deps.publicUrl, callId), token };
  }

  async initiate(principal: Principal, body: InitiateCall) {
    const { db } = this.deps;
    const tenant = principal.tenant;
    const from = toE164(body.from_phone_number);
    const to = toE164(body.to_phone_number);
    const invalid = [
      ...(from ? [] : [['from_phone_number', body.from_phone_number]]),
      ...(to ? [] : [['to_phone_number', body.to_phone_number]]),
    ].map(([field]) => ({
      loc: ['body', field as string],
      msg: NOT_E164_MESSAGE,
      type: 'value_error',
    }));
    if (invalid.length > 0) throw new ValidationFailed(invalid);

    const number = await findNumberOnPlatform(db, from!);
    if (!number) throw notFound(`Phone number ${from} is not registered`);
    if (number.organizationId !== tenant.organizationId)
      throw forbidden('The phone number does not belong to your organization');

    // The assistant: the one named, else the number's, else the entry assistant of the number's graph.
    let assistantId: number | null = null;
    if (body.assistant_id !== undefined) {
      const owner = await unscopedAssistants.assistantOrganization(db, body.assistant_id);
      if (owner === undefined) throw notFound('Assistant not found');
      if (owner !== tenant.organizationId)
        throw forbidden('The assistant does not belong to your organization');
      assistantId = body.assistant_id;
    } else {
      assistantId = await this.deps.resolver.assistantForNumber(tenant, number);
    }
    if (assistantId === null) throw notFound(`No assistant for the phone number ${from}`);

    const wallet = await this.deps.billing.wallet(tenant);
    if (!(wallet.balance > 0)) throw paymentRequired('Insufficient balance: add credits to place calls');

    const variables = (body.variables ?? {}) as TemplateVariables;
    const welcome =
      body.welcome_message === undefined
        ? undefined
        : render('welcome_message', body.welcome_message, variables);
    const agenda = body.agenda === undefined ? undefined : render('agenda', body.agenda, variables);

    const resolved = await this.deps.resolver.resolveCurrent(tenant, { assistantId, phoneNumber: from! });
    const telephony = resolved?.telephony;
    if (!resolved || !telephony) throw notFound(`No assistant for the phone number ${from}`);
    if (!isTelephonyProvider(telephony.provider))
      throw badRequest(`${telephony.provider} numbers cannot place calls`);
    if (!telephony.credentials) {
      throw badRequest(`No ${telephony.provider} credentials: add them to the organization or the assistant`);
    }

    const call = await this.recordOutbound(db, tenant, {
      assistantId,
      phoneNumberId: number.id,
      provider: telephony.provider,
      from: from!,
      to: to!,
      callMeta: {
        ...(welcome ? { welcome_message: welcome.text } : {}),
        ...(agenda ? { agenda: agenda.text } : {}),
        variables,
        template_variables_used: { ...welcome?.used, ...agenda?.used },
        initiated_by_user_id: principal.user.id,
      },
    });
    const dialled = await this.dial(tenant, call, telephony.credentials);
    if ('error' in dialled)
      throw upstreamFailed(`The carrier did not place the call: ${dialled.error.message}`);
    return { message: 'Call initiated', call_sid: dialled.callSid, call_id: call.id };
  }

  /**
   * Applies a verified carrier status to the call. Returns the call when it changed. The row is
   * locked, so concurrent and repeated webhooks apply in turn and a final status is charged once.
   */
  async applyStatus(
    organizationId: number,
    callId: number,
    event: StatusEvent,
  ): Promise<store.CallRow | undefined> {
    const tenant = new Tenant(organizationId);
    const work = async (tx: Executor, jobs: JobEnqueuer) => {
      const locked = await store.lockCallForStatus(tx, tenant, callId);
      if (!locked) return undefined;
      const { call, webhookUrl } = locked;
      const change = statusChange(call, event, this.deps.pricePerMinute);
      if (change.kind === 'none') return undefined;
      if (change.kind === 'agent') return store.updateCall(tx, tenant, callId, change.changes);
      const updated = await store.updateCallWithEvent(tx, tenant, callId, change.changes, change.event);
      if (updated) await this.#emit(tx, jobs, tenant, updated, change.event.type, webhookUrl);
      if (updated && change.final) await this.#finished(tx, jobs, tenant, updated);
      // The charge last: the wallet is the organization's one row, which every call and message
      // that ends updates, so it is held only from here to the commit — not while the call's
      // analytics roll up and its campaign attempt settles (with two processes, settlements queued
      // on it: docs/performance.md) — and after the campaign's rows, the order in which the SMS
      // path takes them too (sms/hand-over.ts).
      if (change.cost && change.cost > 0) {
        await this.deps.billing.apply(
          {
            organizationId,
            amount: -change.cost,
            kind: 'call',
            description: `Call ${callId}: ${change.duration} s`,
            reference: `call:${callId}`,
          },
          tx,
        );
      }
      return updated;
    };
    return this.deps.queue.transaction(work);
  }

  /**
   * A carrier callback's status, given the call as the callback read it (with its assistant's
   * `webhook_url`). Most callbacks of a call change nothing (a repeated or overtaken status) or only
   * move it on (ringing, answered): those cost no transaction. Nothing changes when nothing would
   * under the lock, since a status never moves back; a move with nothing else to do (not final, no
   * webhook to send) is written by one statement that applies only if the call is still as read —
   * otherwise, and for everything else, applyStatus decides again under the row lock.
   */
  async applyReportedStatus(seen: store.CallWithWebhook, event: StatusEvent): Promise<void> {
    const change = statusChange(seen.call, event, this.deps.pricePerMinute);
    if (change.kind === 'none' && !event.sipAgent) return;
    if (change.kind === 'move' && !change.final && seen.webhookUrl === null) {
      const { db } = this.deps;
      const tenant = new Tenant(seen.call.organizationId);
      const { changes, event: recorded } = change;
      const moved = await store.moveCallIfUnchanged(db, tenant, seen.call, changes, recorded, {
        noWebhookUrl: true,
      });
      if (moved) return;
    }
    await this.applyStatus(seen.call.organizationId, seen.call.id, event);
  }
}

function render(field: string, template: string, variables: TemplateVariables) {
  try {
    return renderTemplate(template, variables);
  } catch (error) {
    if (error instanceof TemplateError) {
      throw badRequest(`${field}: ${error.message} (at character ${error.position})`);
    }
    throw error;
  }
}
