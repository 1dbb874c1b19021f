/**
 * Web calls: a person talks to an assistant from a browser. `POST /api/v1/calls/web` records the
 * call and gives the browser a socket URL and a single-call token; the browser's stream
 * (voice/web-call.ts) then moves the call through the same status path a carrier's callbacks use
 * (`CallService.applyStatus`): `in-progress` when the stream starts, `completed` with its duration
 * when it ends, `no-answer` when no browser came in time. So a web call is rolled up, charged,
 * analysed and announced (webhooks) like any other call.
 *
 * The record: `provider: "web"`, `direction: "inbound"` (the person calls the assistant), no phone
 * number (`phone_number_id` null, the three phone fields empty strings), `call_sid` an id of ours
 * (`web-<uuid>`, unique like a carrier's), `call_meta.web = { user_id }` and the variables given.
 */
import { randomUUID } from 'node:crypto';
import type { Db } from '../../db/client.js';
import type { Tenant } from '../../db/tenant.js';
import { type MediaTokens, publicSocketBase } from '../../lib/media-token.js';
import type { TemplateVariables } from '../../lib/templates.js';
import type { JobQueue } from '../../queue/queue.js';
import { findAssistant } from '../assistants/reads.js';
import type { BillingService } from '../billing/service.js';
import { notFound, paymentRequired } from '../errors.js';
import type { Principal } from '../identity/principal.js';
import { WEB_PROVIDER } from './live.js';
import type { CallService } from './service.js';
import * as store from './store.js';

/** What the browser streams and plays: 16-bit signed little-endian PCM, 16 kHz, mono. */
export const WEB_CALL_AUDIO = { encoding: 'pcm_s16le', sample_rate: 16000, channels: 1 } as const;

/** The path of a web call's stream; `{id}` is the call's id. */
export const webCallPath = (callId: number) => `/web-call/${callId}`;

/** How long a created web call waits for its browser's stream before it ends as `no-answer`. */
export const DEFAULT_UNANSWERED_MS = 60_000;

export interface WebCallBody {
  assistant_id: number;
  variables?: object;
}

export class WebCallService {
  constructor(
    private readonly deps: {
      db: Db;
      queue: JobQueue;
      billing: BillingService;
      calls: Pick<CallService, 'applyStatus'>;
      mediaTokens: MediaTokens;
      publicUrl: string;
      unansweredMs?: number;
      log: { warn(data: object, message: string): void };
      /** Told of each web call created: the voice runtime starts its greeting before the browser connects. */
      created?(tenant: Tenant, callId: number): void;
    },
  ) {}

  /** Records a web call for `body.assistant_id` and says where and how its browser connects. */
  async create(principal: Principal, body: WebCallBody) {
    const { db } = this.deps;
    const { tenant } = principal;
    // Another organization's assistant is as unknown here as one that does not exist.
    const assistant = await findAssistant(db, tenant, body.assistant_id);
    if (!assistant) throw notFound('Assistant not found');
    const wallet = await this.deps.billing.wallet(tenant);
    if (!(wallet.balance > 0)) throw paymentRequired('Insufficient balance: add credits to place calls');
    const call = await this.deps.queue.transaction(async (tx) => {
      const row = await store.insertCall(tx, tenant, {
        assistantId: assistant.id,
        phoneNumberId: null,
        provider: WEB_PROVIDER,
        callSid: `web-${randomUUID()}`,
        direction: 'inbound',
        fromPhoneNumber: '',
        toPhoneNumber: '',
        customerPhoneNumber: '',
        status: 'queued',
        callMeta: {
          web: { user_id: principal.user.id },
          variables: (body.variables ?? {}) as TemplateVariables,
        },
      });
      await store.insertCallEvent(tx, tenant, row.id, 'call.queued', { via: WEB_PROVIDER });
      return row;
    });
    const unanswered = setTimeout(
      () => void this.#unanswered(tenant, call.id),
      this.deps.unansweredMs ?? DEFAULT_UNANSWERED_MS,
    );
    unanswered.unref();
    this.deps.created?.(tenant, call.id);
    const token = await this.deps.mediaTokens.issue({
      callId: call.id,
      organizationId: tenant.organizationId,
    });
    return {
      call,
      socketUrl: `${publicSocketBase(this.deps.publicUrl)}${webCallPath(call.id)}`,
      token,
      audio: WEB_CALL_AUDIO,
    };
  }

  /**
   * The browser's stream started: the call is answered. False when it had been answered or had
   * ended already (the status moves once): that stream is not the call's.
   */
  async started(organizationId: number, callId: number, callSid: string): Promise<boolean> {
    const moved = await this.deps.calls.applyStatus(organizationId, callId, {
      kind: 'call_status',
      callSid,
      status: 'in-progress',
    });
    return moved?.status === 'in-progress';
  }

  /** The stream ended (the browser hung up or went away, or the assistant ended the call). */
  async ended(organizationId: number, callId: number, callSid: string, seconds: number): Promise<void> {
    await this.deps.calls.applyStatus(organizationId, callId, {
      kind: 'call_status',
      callSid,
      status: 'completed',
      // Charged per started second, as a carrier's call is.
      durationSeconds: Math.max(1, Math.round(seconds)),
    });
  }

  /** No browser came: the call ends `no-answer`, unless its stream started meanwhile. */
  async #unanswered(tenant: Tenant, callId: number): Promise<void> {
    try {
      const call = await store.findCall(this.deps.db, tenant, callId);
      if (call?.status !== 'queued' || !call.callSid) return;
      await this.deps.calls.applyStatus(tenant.organizationId, callId, {
        kind: 'call_status',
        callSid: call.callSid,
        status: 'no-answer',
        durationSeconds: 0,
      });
    } catch (error) {
      // The platform may be stopping; a call left `queued` is still ended by nothing worse.
      this.deps.log.warn({ err: error, callId }, 'ending an unanswered web call failed');
    }
  }
}
