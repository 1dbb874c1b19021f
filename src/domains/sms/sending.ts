/**
 * Sending SMS and MMS: `POST /sms/send` (queued under each number's rate, or sent at once),
 * idempotency keys, the `sms.send` job and the hand-off to the carrier.
 *
 * The queue is durable: a queued message is a row plus a job committed together; the job takes the
 * number's next sending slot when it runs (so the rate holds after a restart too) and claims the row
 * (queued → sending) before it calls the carrier, so no message is sent twice. A message found in
 * `sending` after a crash is not resent: the carrier may have accepted it, and a duplicate is worse.
 */
import { createHash, randomUUID } from 'node:crypto';
import type { Db, Executor } from '../../db/client.js';
import { Tenant } from '../../db/tenant.js';
import { canonicalUrl, type OutboundTargets } from '../../lib/outbound-target.js';
import { NOT_E164_MESSAGE, toE164 } from '../../lib/phone.js';
import { smsSegments } from '../../lib/sms-segments.js';
import type { Carriers } from '../../providers/carriers/index.js';
import type { CarrierId } from '../../providers/carriers/types.js';
import { ProviderError } from '../../providers/errors.js';
import type { JobEnqueuer, JobQueue } from '../../queue/queue.js';
import { type BillingService, roundMoney } from '../billing/service.js';
import { conflict, ValidationFailed } from '../errors.js';
import type { Principal } from '../identity/principal.js';
import { findPhoneNumber } from '../phone-numbers/reads.js';
import { defaultSmsRate, takeSmsSendTurn } from '../phone-numbers/service.js';
import type { ConfigResolver } from '../runtime/resolve-config.js';
import { SendGroups } from './send-groups.js';
import { type SendRow, writeSend } from './send-store.js';
import type { SenderCache } from './senders.js';
import { INTERRUPTED_AFTER_SECONDS, INTERRUPTED_ERROR, type Settlement } from './settlement.js';
import * as store from './store.js';

export interface SendSms {
  from_phone_number: string;
  to_phone_number: string;
  message: string;
  media_urls?: string[];
  queue?: boolean;
  idempotency_key?: string;
}

export interface SendAnswer {
  success: boolean;
  message_id: string;
  message: string;
  provider: string;
  status: 'queued' | 'sent' | 'failed';
}

interface Normalised {
  from: string;
  to: string;
  message: string;
  mediaUrls: string[];
  queue: boolean;
}

/** What an idempotency key keeps: the status and body of the first answer. */
export interface StoredAnswer {
  status: number;
  body: Record<string, unknown>;
}

/** A job waits for its number's turn no longer than this; a later turn re-queues the job instead. */
const MAX_WAIT_IN_JOB_MS = 250;
/** Sends resolved again after their sender changed under them, before giving up. */
const MAX_STALE_ATTEMPTS = 5;
/** How long a repeat waits for the first request with its key to finish. */
const DUPLICATE_WAIT_MS = 30_000;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** An outbound message to queue in the caller's transaction. */
export interface OutboundMessage {
  phoneNumberId: number;
  assistantId: number | null;
  provider: CarrierId;
  from: string;
  to: string;
  body: string;
  mediaUrls?: string[];
}

export class SmsSending {
  readonly #groups: SendGroups;

  constructor(
    private readonly deps: {
      db: Db;
      queue: JobQueue;
      carriers: Carriers;
      resolver: ConfigResolver;
      billing: BillingService;
      /** The outbound-target policy: the carrier fetches `media_urls` for the tenant. */
      targets: OutboundTargets;
      publicUrl: string;
      pricePerSegment: number;
      settlement: Settlement;
      senders: SenderCache;
    },
  ) {
    this.#groups = new SendGroups(deps.db);
  }

  /**
   * Queues an outbound message in the caller's transaction: the row and its `sms.send` job commit
   * together, exactly as `/sms/send` with `queue: true` does. The number's rate and FIFO apply.
   */
  async queueOutbound(
    tx: Executor,
    jobs: JobEnqueuer,
    tenant: Tenant,
    message: OutboundMessage,
  ): Promise<store.MessageRow> {
    const row = await store.insertMessage(tx, tenant, {
      phoneNumberId: message.phoneNumberId,
      assistantId: message.assistantId,
      provider: message.provider,
      direction: 'outbound',
      fromPhoneNumber: message.from,
      toPhoneNumber: message.to,
      body: message.body,
      mediaUrls: message.mediaUrls ?? [],
      status: 'queued',
      segments: smsSegments(message.body),
      attempts: 0,
    });
    await jobs.enqueue('sms.send', { message_id: row.id, organization_id: tenant.organizationId });
    return row;
  }

  receiptUrl(provider: string, messageId: string): string {
    return `${this.deps.publicUrl}/webhooks/${provider}/sms-status?message_id=${messageId}`;
  }

  /** Sends or queues a message; with an idempotency key a repeat answers the first answer again. */
  async send(principal: Principal, body: SendSms, headerKey?: string): Promise<StoredAnswer> {
    const tenant = principal.tenant;
    const request = this.#normalise(body);
    // The carrier fetches the media; this is the last moment we see the URLs, so names are resolved
    // now. 422 (not the route's 400): the URL is well-formed, its target is what is refused.
    await this.deps.targets.assertAllowed(
      request.mediaUrls.map((url, index) => ({ loc: ['body', 'media_urls', index], url })),
      { status: 422 },
    );
    const key = headerKey ?? body.idempotency_key;
    if (key === undefined) return this.#sendOnce(tenant, request);
    if (key.length === 0 || key.length > 256) {
      throw new ValidationFailed([
        {
          loc: [headerKey ? 'header' : 'body', 'idempotency_key'],
          msg: 'An idempotency key has 1 to 256 characters',
          type: 'value_error',
        },
      ]);
    }
    const hash = createHash('sha256').update(JSON.stringify(request)).digest('hex');
    return this.#sendOnce(tenant, request, { key, hash });
  }

  #normalise(body: SendSms): Normalised {
    const from = toE164(body.from_phone_number);
    const to = toE164(body.to_phone_number);
    const issues = [
      ...(from
        ? []
        : [
            {
              loc: ['body', 'from_phone_number'],
              msg: NOT_E164_MESSAGE,
              type: 'value_error',
            },
          ]),
      ...(to
        ? []
        : [
            {
              loc: ['body', 'to_phone_number'],
              msg: NOT_E164_MESSAGE,
              type: 'value_error',
            },
          ]),
      ...(body.message.trim() === ''
        ? [{ loc: ['body', 'message'], msg: 'The message is empty', type: 'value_error' }]
        : []),
    ];
    if (issues.length > 0) throw new ValidationFailed(issues);
    return {
      from: from!,
      to: to!,
      message: body.message,
      mediaUrls: (body.media_urls ?? []).map(canonicalUrl),
      queue: body.queue ?? true,
    };
  }

  /**
   * One send: the sender from memory (senders.ts), then one statement that writes the message, its
   * job and the idempotent answer — or, when the sender changed meanwhile, nothing, and the sender
   * is resolved again. An immediate send then waits for its carrier before it answers.
   */
  async #sendOnce(
    tenant: Tenant,
    request: Normalised,
    idempotency?: { key: string; hash: string },
  ): Promise<StoredAnswer> {
    for (let attempt = 1; ; attempt++) {
      const sender = await this.deps.senders.sender(tenant, request.from);
      const row: SendRow = {
        id: randomUUID(),
        phoneNumberId: sender.phoneNumberId,
        assistantId: sender.assistantId,
        provider: sender.provider,
        from: request.from,
        to: request.to,
        body: request.message,
        mediaUrls: request.mediaUrls,
        segments: smsSegments(request.message),
        status: request.queue ? 'queued' : 'sending',
      };
      const answer = request.queue
        ? this.#answer(200, row.id, 'Message queued for sending', row.provider, 'queued')
        : undefined;
      // Queued sends are written together with those arriving meanwhile (send-groups.ts); an
      // immediate one alone, as it then waits for its carrier anyway.
      const written = answer
        ? await this.#groups.write(tenant, {
            version: sender.version,
            row: { ...row, status: 'queued' },
            idempotency: idempotency && { ...idempotency, answer },
          })
        : await writeSend(
            this.deps.db,
            tenant,
            sender.version,
            row,
            idempotency && { ...idempotency, answer: null },
          );
      if (written === 'stale') {
        this.deps.senders.forget(tenant.organizationId);
        // Each attempt resolves at the current version: only changes racing each one land here.
        if (attempt < MAX_STALE_ATTEMPTS) continue;
        throw new Error('The sending number kept changing while the message was being sent');
      }
      if (written === 'key-taken') return this.#repeat(tenant, idempotency!);
      if (answer) {
        this.deps.queue.wake('sms.send');
        return answer;
      }
      return this.#sendNow(tenant, row, sender.credentials, idempotency);
    }
  }

  /** Sent now: the carrier answers before we do; the answer is kept under the key as it was given. */
  async #sendNow(
    tenant: Tenant,
    row: SendRow,
    credentials: Record<string, string>,
    idempotency?: { key: string; hash: string },
  ): Promise<StoredAnswer> {
    const message = {
      id: row.id,
      provider: row.provider,
      fromPhoneNumber: row.from,
      toPhoneNumber: row.to,
      body: row.body,
      mediaUrls: row.mediaUrls,
    };
    const sent = await this.#deliver(tenant, message, credentials);
    const answer =
      sent.status === 'sent'
        ? this.#answer(200, row.id, 'Message sent', row.provider, 'sent')
        : { status: 500, body: { detail: `The carrier did not send the message: ${sent.error}` } };
    if (idempotency)
      await store.recordIdempotentAnswer(this.deps.db, tenant, idempotency.key, {
        messageId: row.id,
        response: answer as never,
      });
    return answer;
  }

  /** A repeat of a key: the same body gets the first answer (waiting for it if needed); another body, 422. */
  async #repeat(tenant: Tenant, idempotency: { key: string; hash: string }): Promise<StoredAnswer> {
    const deadline = Date.now() + DUPLICATE_WAIT_MS;
    for (;;) {
      const row = await store.findIdempotencyKey(this.deps.db, tenant, idempotency.key);
      if (row && row.requestHash !== idempotency.hash) {
        throw new ValidationFailed(
          [
            {
              loc: ['body', 'idempotency_key'],
              msg: 'This idempotency key was used with a different request body',
              type: 'value_error',
            },
          ],
          422,
        );
      }
      if (row?.response) return row.response as unknown as StoredAnswer;
      if (Date.now() > deadline)
        throw conflict('A request with this idempotency key is still being processed');
      await sleep(100);
    }
  }

  #answer(
    status: number,
    messageId: string,
    message: string,
    provider: string,
    state: SendAnswer['status'],
  ): StoredAnswer {
    return {
      status,
      body: { success: state !== 'failed', message_id: messageId, message, provider, status: state },
    };
  }

  /**
   * Hands a claimed message (status `sending`) to its carrier and records the outcome: `sent` with
   * the carrier's id and the charge, `queued` again for a retryable failure (when `retry`), else
   * `failed` with the carrier's words.
   */
  async #deliver(
    tenant: Tenant,
    message: Pick<
      store.MessageRow,
      'id' | 'provider' | 'fromPhoneNumber' | 'toPhoneNumber' | 'body' | 'mediaUrls'
    >,
    credentials: Record<string, string>,
    options: { retry?: boolean } = {},
  ): Promise<{ status: 'sent' | 'failed' | 'retry'; error?: string }> {
    const { db } = this.deps;
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
      const cost = roundMoney(segments * this.deps.pricePerSegment);
      await this.deps.queue.transaction(async (tx, jobs) => {
        const accepted = await store.markAccepted(tx, tenant, message.id, {
          providerMessageId: sent.messageId,
          segments,
          cost,
        });
        if (accepted) await this.deps.settlement.tell(tx, jobs, tenant, accepted);
        if (cost > 0) {
          await this.deps.billing.apply(
            {
              organizationId: tenant.organizationId,
              amount: -cost,
              kind: 'sms',
              description: `SMS to ${message.toPhoneNumber}: ${segments} segment${segments === 1 ? '' : 's'}`,
              reference: `sms:${message.id}`,
            },
            tx,
          );
        }
      });
      return { status: 'sent' };
    } catch (error) {
      if (!(error instanceof ProviderError)) throw error;
      if (options.retry && error.retryable) {
        await store.updateMessage(db, tenant, message.id, {
          status: 'queued',
          error: error.message,
        });
        return { status: 'retry', error: error.message };
      }
      await this.deps.settlement.settle(tenant, message.id, { status: 'failed', error: error.message });
      return { status: 'failed', error: error.message };
    }
  }

  /**
   * The `sms.send` job: one send from the message's number. It waits for the number's turn (its
   * rate), then claims the number's oldest queued message — so a number's messages keep their
   * order, a cancelled message is simply skipped, and there is one send per queued message. A turn
   * further away than a moment frees the worker and comes back when the message's place in the line
   * is due. Throws after a
   * retryable carrier failure so the queue tries again later.
   */
  async runSendJob(payload: { message_id: string; organization_id: number }): Promise<void> {
    const { db } = this.deps;
    const tenant = new Tenant(payload.organization_id);
    const message = await store.findMessage(db, tenant, payload.message_id);
    if (!message?.phoneNumberId) return;
    const number = await findPhoneNumber(db, tenant, message.phoneNumberId);
    if (!number) {
      await this.deps.settlement.settle(
        tenant,
        message.id,
        { status: 'failed', error: 'The sending number was removed' },
        'queued',
      );
      return;
    }
    await store.failInterrupted(db, tenant, number.id, INTERRUPTED_AFTER_SECONDS, INTERRUPTED_ERROR);
    const { credentials } = await this.deps.resolver.telephonyCredentials(tenant, {
      provider: number.provider,
      assistantId: number.assistantId,
    });
    const rate = number.smsRatePerSecond ?? defaultSmsRate(number.phoneNumber);
    // A little over 1 / rate, so that jitter on the way to the carrier never brings two messages
    // closer than the rate allows.
    const gap = (1 / rate) * 1.02 + 0.005;
    for (let attempt = 0; ; attempt++) {
      const turn = await takeSmsSendTurn(db, tenant, number.id, gap);
      if (turn.taken) break;
      const wait = (turn.opensAt?.getTime() ?? Date.now()) - Date.now();
      // A turn far away, or one lost to another job of the same number: free the worker (other
      // numbers' messages must not wait behind one number's backlog) and come back when this
      // message's place in the line is due — not at the next turn with every other waiting job.
      if (wait > MAX_WAIT_IN_JOB_MS || attempt > 0) {
        const ahead = await store.queuedAhead(db, tenant, number.id, message);
        const due = Math.max(wait, 20) + ahead * gap * 1000;
        await this.deps.queue.enqueue('sms.send', payload, { startAfterSeconds: due / 1000 });
        return;
      }
      await sleep(Math.max(wait, 1));
    }
    const claimed = await store.claimOldestQueued(db, tenant, number.id);
    if (!claimed) return; // nothing left: cancelled, or sent by another job
    if (!credentials) {
      await this.deps.settlement.settle(tenant, claimed.id, {
        status: 'failed',
        error: `No ${claimed.provider} credentials`,
      });
      return;
    }
    const outcome = await this.#deliver(tenant, claimed, credentials, { retry: true });
    if (outcome.status === 'retry') throw new Error(`Retrying after a carrier failure: ${outcome.error}`);
  }
}
