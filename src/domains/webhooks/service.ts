/**
 * Outgoing webhooks (decisions §5, docs/webhooks.md). `emit` records an event as a delivery row and
 * queues a `webhook.deliver` job inside the caller's transaction, so an event exists exactly when
 * the change that caused it commits. The worker signs and posts it; a failed attempt that may
 * succeed later is thrown so that pg-boss retries it with back-off, and the last attempt (or a
 * permanent failure) ends the delivery `failed`. Every organization signs with its own secret, made
 * on first use and sealed at rest.
 */
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import https from 'node:https';
import type { Db, Executor } from '../../db/client.js';
import { Tenant } from '../../db/tenant.js';
import { type OutboundTargets, pinnedLookup, type ResolvedAddress } from '../../lib/outbound-target.js';
import type { Page } from '../../lib/page.js';
import type { SecretBox } from '../../lib/secrets.js';
import { isRetryableStatus } from '../../providers/errors.js';
import { jobPolicies } from '../../queue/jobs.js';
import type { JobEnqueuer, JobQueue } from '../../queue/queue.js';
import { VERSION } from '../../version.js';
import { conflict, notFound } from '../errors.js';
import { findSealedWebhookSecret } from '../organizations/reads.js';
import type { OrganizationService } from '../organizations/service.js';
import { generateWebhookSecret, signatureHeader } from './signature.js';
import * as store from './store.js';

export type { DeliveryRow, DeliveryStatus } from './store.js';

export const TEST_EVENT_TYPE = 'webhook.test';
const DEFAULT_TIMEOUT_MS = 10_000;
/** How much of a receiver's answer is read before the connection is dropped. */
const MAX_RESPONSE_BYTES = 64 * 1024;

export interface WebhookEvent {
  /** The receiver: an assistant's `webhook_url` or `sms_webhook_url`. */
  url: string;
  /** Dotted event type, e.g. `call.completed`, `sms.received`, `webhook.test`. */
  type: string;
  data: Record<string, unknown>;
}

/** The transaction an event is emitted in: what `JobQueue.transaction` hands its body. */
export interface EmitScope {
  tx: Executor;
  jobs: JobEnqueuer;
}

export interface WebhookLogger {
  info(details: object, message: string): void;
  warn(details: object, message: string): void;
}

export interface WebhookServiceDeps {
  db: Db;
  queue: JobQueue;
  secrets: SecretBox;
  log: WebhookLogger;
  /** The outbound-target policy: which receivers may be reached, and the address to connect to. */
  targets: OutboundTargets;
  /** Keeps the organization's sealed signing secret on its row (the organizations domain's). */
  organizations: Pick<OrganizationService, 'keepWebhookSecretIfNone' | 'replaceWebhookSecret'>;
  /** Time limit of one attempt, connection to last byte (default 10 s). */
  timeoutMs?: number;
  /** Retries after the first attempt (default: the `webhook.deliver` job policy). */
  retryLimit?: number;
}

type Outcome =
  | { ok: true; statusCode: number }
  | {
      ok: false;
      statusCode: number | null;
      error: string;
      /** It will not succeed by trying again (refused target, 4xx other than 408 and 429). */
      permanent: boolean;
      /** A request was made (false when the target was refused before connecting). */
      counted: boolean;
    };

/** An attempt that failed; thrown to the job queue so that it retries. */
export class DeliveryAttemptFailed extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'DeliveryAttemptFailed';
  }
}

export class WebhookService {
  readonly #timeoutMs: number;
  readonly #retryLimit: number;

  constructor(private readonly deps: WebhookServiceDeps) {
    this.#timeoutMs = deps.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.#retryLimit = deps.retryLimit ?? jobPolicies['webhook.deliver'].retryLimit;
  }

  /**
   * Records `event` for delivery and queues it in the caller's transaction:
   * `queue.transaction((tx, jobs) => webhooks.emit({ tx, jobs }, tenant, event))`.
   */
  async emit(scope: EmitScope, tenant: Tenant, event: WebhookEvent): Promise<store.DeliveryRow> {
    if (!/^[a-z0-9_]+(\.[a-z0-9_]+)+$/.test(event.type))
      throw new Error(`Bad webhook event type ${event.type}`);
    const eventId = randomUUID();
    const payload = {
      id: eventId,
      type: event.type,
      created_at: new Date().toISOString(),
      organization_id: tenant.organizationId,
      data: event.data,
    };
    const row = await store.insertDelivery(scope.tx, tenant, {
      eventId,
      eventType: event.type,
      url: event.url,
      payload,
    });
    await scope.jobs.enqueue('webhook.deliver', { delivery_id: row.id });
    return row;
  }

  /** `emit` in a transaction of its own. */
  async send(tenant: Tenant, event: WebhookEvent): Promise<store.DeliveryRow> {
    return this.deps.queue.transaction((tx, jobs) => this.emit({ tx, jobs }, tenant, event));
  }

  /** Emits a `webhook.test` event to `url`; a URL the outbound-target policy refuses answers 422. */
  async sendTest(tenant: Tenant, url: string): Promise<store.DeliveryRow> {
    await this.deps.targets.assertAllowed([{ loc: ['body', 'url'], url }]);
    return this.send(tenant, {
      url,
      type: TEST_EVENT_TYPE,
      data: { message: 'A test event from Switchboard. If its signature verifies, your endpoint is ready.' },
    });
  }

  /** The organization's webhook secret, made (and stored sealed) on first use. */
  async secret(tenant: Tenant): Promise<string> {
    return this.#secretOf(this.deps.db, tenant);
  }

  /** Replaces the secret; every attempt that starts from now on is signed with the new one. */
  async rotateSecret(tenant: Tenant): Promise<string> {
    const fresh = generateWebhookSecret();
    if (
      !(await this.deps.organizations.replaceWebhookSecret(
        this.deps.db,
        tenant,
        this.deps.secrets.seal(fresh),
      ))
    ) {
      throw notFound('Organization not found');
    }
    return fresh;
  }

  async list(
    tenant: Tenant,
    page: Page,
    filter: { status?: store.DeliveryStatus; eventType?: string },
  ): Promise<{ rows: store.DeliveryRow[]; total: number }> {
    return store.listDeliveries(this.deps.db, tenant, page, filter);
  }

  /**
   * Sends a finished delivery (delivered or failed) again: same event id and payload, a new round of
   * attempts. 404 for another organization's delivery, 409 while it is still pending.
   */
  async redeliver(tenant: Tenant, id: number): Promise<store.DeliveryRow> {
    return this.deps.queue.transaction(async (tx, jobs) => {
      const row = await store.reopenDelivery(tx, tenant, id);
      if (!row) {
        if (await store.findDelivery(tx, tenant, id)) {
          throw conflict('This delivery is still pending: it is being sent or waits for its next retry');
        }
        throw notFound('Webhook delivery not found');
      }
      await jobs.enqueue('webhook.deliver', { delivery_id: row.id });
      return row;
    });
  }

  /**
   * The `webhook.deliver` worker: one attempt. `job.retryCount` is pg-boss's count of earlier
   * retries of this job; the attempt with `retryCount` equal to the retry limit is the last.
   */
  async deliver(payload: { delivery_id: number }, job: { retryCount: number }): Promise<void> {
    const row = await store.findDeliveryForWorker(this.deps.db, payload.delivery_id);
    // Gone with its organization, or already settled by an earlier run of this job.
    if (row?.status !== 'pending') return;
    const tenant = new Tenant(row.organizationId);
    const secret = await this.#secretOf(this.deps.db, tenant);
    const outcome = await this.#attempt(row, secret);
    const details = {
      delivery_id: row.id,
      event_id: row.eventId,
      event_type: row.eventType,
      organization_id: row.organizationId,
      retry_count: job.retryCount,
    };
    if (outcome.ok) {
      await store.recordDelivered(this.deps.db, row.id, outcome.statusCode);
      this.deps.log.info({ ...details, status_code: outcome.statusCode }, 'webhook delivered');
      return;
    }
    const final = outcome.permanent || job.retryCount >= this.#retryLimit;
    await store.recordFailure(this.deps.db, row.id, {
      statusCode: outcome.statusCode,
      error: outcome.error,
      final,
      counted: outcome.counted,
    });
    this.deps.log.warn(
      { ...details, status_code: outcome.statusCode, error: outcome.error, final },
      final ? 'webhook delivery failed' : 'webhook delivery attempt failed; will retry',
    );
    if (!final) throw new DeliveryAttemptFailed(outcome.error);
  }

  async #attempt(row: store.DeliveryRow, secret: string): Promise<Outcome> {
    // Checked at every attempt (DNS may have changed since the URL was saved), then pinned.
    const verdict = await this.deps.targets.check(row.url);
    if (!verdict.ok) {
      return {
        ok: false,
        statusCode: null,
        error: verdict.refused ? `Refused: ${verdict.reason}` : verdict.reason,
        permanent: verdict.refused,
        counted: false,
      };
    }
    const url = new URL(row.url);
    const target = verdict.target;

    const body = JSON.stringify(row.payload);
    const timestamp = Math.floor(Date.now() / 1000);
    const headers = {
      'content-type': 'application/json',
      'user-agent': `Switchboard-Webhooks/${VERSION}`,
      'x-switchboard-event-id': row.eventId,
      'x-switchboard-event-type': row.eventType,
      'x-switchboard-timestamp': String(timestamp),
      'x-switchboard-signature': signatureHeader(secret, timestamp, body),
    };
    try {
      const { statusCode, statusMessage } = await post(url, target, headers, body, this.#timeoutMs);
      if (statusCode >= 200 && statusCode < 300) return { ok: true, statusCode };
      return {
        ok: false,
        statusCode,
        error: `The receiver answered ${statusCode}${statusMessage ? ` ${statusMessage}` : ''}`.slice(0, 200),
        // Redirects are not followed; 4xx other than 408 and 429 will not change by retrying.
        permanent: !isRetryableStatus(statusCode),
        counted: true,
      };
    } catch (error) {
      const timedOut = error instanceof AttemptTimeout;
      const code = (error as NodeJS.ErrnoException).code;
      return {
        ok: false,
        statusCode: null,
        error: timedOut
          ? `No answer within ${Math.round(this.#timeoutMs / 1000)} s`
          : `Could not reach the receiver: ${code ?? (error as Error).message}`.slice(0, 200),
        permanent: false,
        counted: true,
      };
    }
  }

  async #secretOf(ex: Executor, tenant: Tenant): Promise<string> {
    const sealed = await findSealedWebhookSecret(ex, tenant);
    if (sealed) return this.deps.secrets.open(sealed);
    const fresh = generateWebhookSecret();
    if (await this.deps.organizations.keepWebhookSecretIfNone(ex, tenant, this.deps.secrets.seal(fresh)))
      return fresh;
    // Someone else made it first (or the organization is gone).
    const stored = await findSealedWebhookSecret(ex, tenant);
    if (!stored) throw notFound('Organization not found');
    return this.deps.secrets.open(stored);
  }
}

class AttemptTimeout extends Error {}

/** POSTs `body` to `url` over a connection to `target`; resolves once the answer has been read. */
function post(
  url: URL,
  target: ResolvedAddress,
  headers: Record<string, string>,
  body: string,
  timeoutMs: number,
): Promise<{ statusCode: number; statusMessage: string }> {
  const client = url.protocol === 'https:' ? https : http;
  return new Promise((resolve, reject) => {
    const request = client.request(url, {
      method: 'POST',
      headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) },
      lookup: pinnedLookup(target),
      agent: false,
    });
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      request.destroy(new AttemptTimeout());
    }, timeoutMs);
    const finish = (error: Error | null, result?: { statusCode: number; statusMessage: string }) => {
      clearTimeout(timer);
      if (timedOut) reject(new AttemptTimeout());
      else if (error) reject(error);
      else if (result) resolve(result);
    };
    request.on('error', (error) => finish(error));
    request.on('response', (response) => {
      const result = { statusCode: response.statusCode ?? 0, statusMessage: response.statusMessage ?? '' };
      let read = 0;
      response.on('data', (chunk: Buffer) => {
        read += chunk.length;
        // Enough: the status is all that counts.
        if (read > MAX_RESPONSE_BYTES) {
          response.destroy();
          finish(null, result);
        }
      });
      response.on('end', () => finish(null, result));
      // Closed before the end of the answer: its status was still given.
      response.on('close', () => finish(null, result));
      response.on('error', () => finish(null, result));
    });
    request.end(body);
  });
}
