/**
 * Sending SMS and MMS: `POST /sms/send` (queued under each number's rate, or sent at once),
 * idempotency keys, and queueing a campaign's message.
 *
 * The queue is durable: a queued message is a row written in the same statement as its number's
 * drain wake-up (`sms.drain`); the drain (drain.ts) claims it (queued → sending) at the number's
 * rate before it calls the carrier, so no message is sent twice. A message found in `sending` after
 * a crash is not resent: the carrier may have accepted it, and a duplicate is worse.
 */
import { createHash, randomUUID } from 'node:crypto';
import type { Db, Executor } from '../../db/client.js';
import type { Tenant } from '../../db/tenant.js';
import { canonicalUrl, type OutboundTargets } from '../../lib/outbound-target.js';
import { NOT_E164_MESSAGE, toE164 } from '../../lib/phone.js';
import { smsSegments } from '../../lib/sms-segments.js';
import type { CarrierId } from '../../providers/carriers/types.js';
import type { JobEnqueuer, JobQueue } from '../../queue/queue.js';
import { conflict, ValidationFailed } from '../errors.js';
import type { Principal } from '../identity/principal.js';
import type { HandOver } from './hand-over.js';
import { SendGroups } from './send-groups.js';
import { type SendRow, writeSends } from './send-store.js';
import type { SenderCache } from './senders.js';
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
      /** The outbound-target policy: the carrier fetches `media_urls` for the tenant. */
      targets: OutboundTargets;
      handOver: HandOver;
      senders: SenderCache;
    },
  ) {
    this.#groups = new SendGroups(deps.db, () => deps.queue.wake('sms.drain'));
  }

  /**
   * Queues an outbound message in the caller's transaction: the row and its number's drain wake-up
   * commit together, as `/sms/send` with `queue: true` writes them. The number's rate and FIFO apply.
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
    await jobs.enqueue(
      'sms.drain',
      { organization_id: tenant.organizationId, phone_number_id: message.phoneNumberId },
      { singletonKey: String(message.phoneNumberId) },
    );
    return row;
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
   * number's drain wake-up and the idempotent answer — or, when the sender changed meanwhile,
   * nothing, and the sender is resolved again. An immediate send then waits for its carrier before
   * it answers.
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
        : (
            await writeSends(this.deps.db, tenant, [
              { version: sender.version, row, idempotency: idempotency && { ...idempotency, answer: null } },
            ])
          ).outcomes[0]!;
      if (written === 'stale') {
        this.deps.senders.forget(tenant.organizationId);
        // Each attempt resolves at the current version: only changes racing each one land here.
        if (attempt < MAX_STALE_ATTEMPTS) continue;
        throw new Error('The sending number kept changing while the message was being sent');
      }
      if (written === 'key-taken') return this.#repeat(tenant, idempotency!);
      if (answer) return answer;
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
    const { handOver } = this.deps;
    const sent = await handOver.send(message, credentials, false);
    await handOver.record(tenant, [sent]);
    const answer =
      sent.status === 'accepted'
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
}
