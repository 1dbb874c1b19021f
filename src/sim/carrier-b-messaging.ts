/**
 * What carrier_b's simulator (carrier-b.ts) is apart from its calls: the accounts it accepts (Bearer
 * API keys, one call-control application each), the Ed25519 key it signs every webhook with, the
 * messaging API (send, then message.sent → message.finalized; message.received for inbound texts)
 * and the call-control application lookup. Kept apart so that carrier-b.ts reads as the calls' life.
 */
import { generateKeyPairSync, type KeyObject, randomUUID, sign } from 'node:crypto';
import {
  asRecord,
  E164,
  errorResponse,
  iso,
  MESSAGE_FAILURES,
  missing,
  notFound,
  segmentsOf,
  text,
  unauthorizedResponse,
} from './carrier-b-wire.js';
import { CarrierSimulatorBase, type RecordedRequest, type Route, type SimResponse } from './carrier-sim.js';

export interface CarrierBAccount {
  api_key: string;
  /** The call-control application (connection) the account's calls run under. */
  connection_id: string;
  application_name?: string;
  /** Where call events go when a dial names no webhook_url (the application's setting). */
  webhook_event_url?: string;
  /** The account's id as media streams name it (`start.user_id`); derived from the connection by default. */
  user_id?: string;
}

export abstract class CarrierBSimulatorBase extends CarrierSimulatorBase {
  /** The account's Ed25519 public key, base64 of the 32 raw bytes: use it as `credentials.public_key`. */
  readonly publicKey: string;
  readonly #privateKey: KeyObject;
  protected readonly accounts = new Map<string, CarrierBAccount>();

  constructor() {
    super();
    const { publicKey, privateKey } = generateKeyPairSync('ed25519');
    const jwk = publicKey.export({ format: 'jwk' });
    this.publicKey = Buffer.from(jwk.x ?? '', 'base64url').toString('base64');
    this.#privateKey = privateKey;
  }

  /** Accepts requests made with this API key (others answer 401). */
  addAccount(account: CarrierBAccount): void {
    this.accounts.set(account.api_key, account);
  }

  /** The two signature headers the carrier puts on a webhook body signed at `at` (ms). */
  signatureHeaders(rawBody: string, at = Date.now()): Record<string, string> {
    const timestamp = String(Math.floor(at / 1000));
    const signature = sign(null, Buffer.from(`${timestamp}|${rawBody}`, 'utf8'), this.#privateKey);
    return {
      'telnyx-signature-ed25519': signature.toString('base64'),
      'telnyx-timestamp': timestamp,
    };
  }

  /** Posts a signed message.received, as when someone texts `to`. */
  async sendInboundMessage(message: {
    webhookUrl: string;
    from: string;
    to: string;
    text: string;
    mediaUrls?: string[];
  }): Promise<{ messageId: string; status: number | undefined }> {
    const messageId = randomUUID();
    const mediaUrls = message.mediaUrls ?? [];
    const { encoding, parts } = segmentsOf(message.text);
    const now = new Date().toISOString();
    const answer = await this.deliver(message.webhookUrl, 'message.received', new Date(), {
      record_type: 'message',
      direction: 'inbound',
      id: messageId,
      type: mediaUrls.length > 0 ? 'MMS' : 'SMS',
      from: { phone_number: message.from, carrier: 'Simulated Mobile', line_type: 'Wireless' },
      to: [{ phone_number: message.to, status: 'delivered', carrier: 'Simulated', line_type: 'VoIP' }],
      cc: [],
      text: message.text,
      media: mediaUrls.map((url) => ({ url, content_type: null, sha256: null, size: null })),
      encoding,
      parts: mediaUrls.length > 0 ? 1 : parts,
      received_at: now,
      errors: [],
    });
    return { messageId, status: answer?.status };
  }

  protected unauthorized(): SimResponse {
    return unauthorizedResponse();
  }

  /** The routes of messages and applications; the subclass adds its calls'. */
  protected routes(): Route[] {
    return [
      { method: 'POST', pattern: /^\/v2\/messages$/, handle: (request) => this.#message(request) },
      {
        method: 'GET',
        pattern: /^\/v2\/call_control_applications\/(?<id>[^/]+)$/,
        handle: (request, params) => this.#application(request, decodeURIComponent(params.id ?? '')),
      },
    ];
  }

  /** The account whose API key the request carries. */
  protected account(request: RecordedRequest): CarrierBAccount | undefined {
    const header = request.headers.authorization;
    const match = typeof header === 'string' ? /^Bearer (.+)$/.exec(header) : null;
    return match?.[1] ? this.accounts.get(match[1]) : undefined;
  }

  #message(request: RecordedRequest): SimResponse {
    const account = this.account(request);
    if (!account) return this.unauthorized();
    const body = asRecord(request.body);
    const from = text(body.from);
    const to = text(body.to);
    const messageText = typeof body.text === 'string' ? body.text : '';
    const mediaUrls = Array.isArray(body.media_urls)
      ? body.media_urls.filter((url) => typeof url === 'string')
      : [];
    if (!from) return missing('from');
    if (!to) return missing('to');
    if (messageText === '' && mediaUrls.length === 0) return missing('text');
    if (!E164.test(to)) {
      return errorResponse(422, '10016', 'Phone number must be in +E.164 format', `to: ${to}`, '/to');
    }
    const id = randomUUID();
    const outcome = this.messageOutcome(to);
    const at = Date.now();
    this.messages.push({ id, from, to, body: messageText, mediaUrls, outcome, at });
    const { encoding, parts } = segmentsOf(messageText);
    const record = {
      record_type: 'message',
      direction: 'outbound',
      id,
      type: mediaUrls.length > 0 ? 'MMS' : 'SMS',
      from: { phone_number: from, carrier: 'Simulated', line_type: 'VoIP' },
      cc: [],
      text: messageText,
      media: mediaUrls.map((url) => ({ url, content_type: null, sha256: null, size: null })),
      webhook_url: text(body.webhook_url) ?? null,
      encoding,
      parts: mediaUrls.length > 0 ? 1 : parts,
      received_at: iso(at),
    };
    const recipient = (status: string) => [
      { phone_number: to, status, carrier: 'Simulated Mobile', line_type: 'Wireless' },
    ];
    const webhookUrl = text(body.webhook_url);
    if (webhookUrl) {
      this.background(async () => {
        await new Promise((resolve) => setTimeout(resolve, 0));
        const failure = outcome === 'delivered' ? undefined : MESSAGE_FAILURES[outcome];
        const sentAt = Date.now();
        await this.deliver(webhookUrl, 'message.sent', new Date(sentAt), {
          ...record,
          to: recipient(outcome === 'failed' ? 'sending' : 'sent'),
          sent_at: iso(sentAt),
          completed_at: null,
          errors: [],
        });
        const doneAt = Date.now();
        await this.deliver(webhookUrl, 'message.finalized', new Date(doneAt), {
          ...record,
          to: recipient(failure?.status ?? 'delivered'),
          sent_at: iso(sentAt),
          completed_at: iso(doneAt),
          errors: failure ? [failure.error] : [],
        });
      });
    }
    return {
      status: 200,
      body: {
        data: { ...record, to: recipient('queued'), sent_at: null, completed_at: null, errors: [] },
      },
    };
  }

  #application(request: RecordedRequest, id: string): SimResponse {
    const account = this.account(request);
    if (!account) return this.unauthorized();
    if (id !== account.connection_id) {
      return notFound();
    }
    return {
      status: 200,
      body: {
        data: {
          record_type: 'call_control_application',
          id,
          application_name: account.application_name ?? `app-${id}`,
          active: true,
          webhook_event_url: account.webhook_event_url ?? null,
          webhook_api_version: '2',
        },
      },
    };
  }

  /** Posts one signed event (`data.event_type`) to `url`. */
  protected async deliver(
    url: string,
    eventType: string,
    occurredAt: Date,
    payload: Record<string, unknown>,
  ) {
    const body = JSON.stringify({
      data: {
        record_type: 'event',
        event_type: eventType,
        id: randomUUID(),
        occurred_at: occurredAt.toISOString(),
        payload,
      },
      meta: { attempt: 1, delivered_to: url },
    });
    return this.post(url, body, {
      'content-type': 'application/json',
      'user-agent': 'carrier-b-simulator',
      ...this.signatureHeaders(body),
    });
  }
}
