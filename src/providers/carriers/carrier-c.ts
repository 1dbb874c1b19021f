/**
 * carrier_c: the voice and messaging APIs of the carrier whose credentials are an application id and
 * an RSA private key (Vonage Voice API v1 and Messages API v1).
 *
 * - Every request carries `Authorization: Bearer <JWT>`: RS256, signed with the application's private
 *   key, claims `application_id`, `iat`, `exp`, `jti` (developer.vonage.com/en/jwt, "Authentication").
 * - Calls: `POST /v1/calls` with an answer URL the carrier fetches (POST) when the callee answers;
 *   we answer with an NCCO that connects the call to our media WebSocket (carrier-c-media.ts speaks
 *   it). `PUT /v1/calls/{uuid}` hangs up or transfers, `PUT /v1/calls/{uuid}/dtmf` plays key tones
 *   into the call (developer.vonage.com/en/api/voice, "Voice API overview").
 * - Messages: `POST /v1/messages` (channel `sms` or `mms`) answers 202 `{message_uuid}`; it does not
 *   report parts, so segments are counted here.
 * - Webhooks are JSON and signed: `Authorization: Bearer <JWT>` made with HS256 and the account's
 *   signature secret, whose `payload_hash` claim is the SHA-256 hex of the body
 *   (developer.vonage.com/en/getting-started/concepts/webhooks#decoding-signed-webhooks).
 *
 * Numbers go on the wire in E.164 without the leading `+`; events coming back are given the `+` again.
 */

import type { MessageStatus } from '../../db/schema/messaging.js';
import type { CallStatus } from '../../db/schema/telephony.js';
import { smsSegments } from '../../lib/sms-segments.js';
import { type AudioFormat, LINEAR16_16K } from '../../voice/audio.js';
import { ProviderError } from '../errors.js';
import { providerRequest } from '../http.js';
import { CALL_UUID_HEADER, CARRIER_C_CONTENT_TYPE, TOKEN_HEADER } from './carrier-c-media.js';
import { requestToken, unverifiedApplicationId, webhookSignatureValid } from './carrier-c-tokens.js';
import type { MediaStreamTarget } from './media.js';
import type {
  CarrierAdapter,
  CarrierCredentials,
  CarrierEvent,
  CredentialCheck,
  IncomingWebhook,
  PlaceCallRequest,
  PlacedCall,
  SendMessageRequest,
  SentMessage,
  WebhookOwner,
} from './types.js';

const PROVIDER = 'carrier_c';
/** The Voice API accepts a ringing timer of 1–120 seconds (default 60). */
const RINGING_TIMER_RANGE = [1, 120] as const;
/** The audio our media stream takes: 16-bit linear PCM at 16 kHz. */
export const STREAM_CONTENT_TYPE = CARRIER_C_CONTENT_TYPE;

/** Voice event `status` → our call status (human and machine are the machine detection's verdicts). */
const CALL_STATUSES: Record<string, CallStatus> = {
  started: 'queued',
  ringing: 'ringing',
  answered: 'in-progress',
  completed: 'completed',
  busy: 'busy',
  timeout: 'no-answer',
  unanswered: 'no-answer',
  failed: 'failed',
  rejected: 'failed',
  cancelled: 'canceled',
};

/** Messages status callback `status` → our message status. */
const MESSAGE_STATUSES: Record<string, MessageStatus> = {
  submitted: 'sent',
  delivered: 'delivered',
  read: 'delivered',
  rejected: 'failed',
  undeliverable: 'undelivered',
  failed: 'failed',
};

/** Keys only the voice events other than status changes and answer requests carry. */
const NON_ANSWER_KEYS = ['status', 'dtmf', 'speech', 'recording_url', 'recording_uuid', 'type', 'reason'];

interface CreateCallResponse {
  uuid: string;
  status?: string;
  direction?: string;
  conversation_uuid?: string;
}

interface SendMessageResponse {
  message_uuid: string;
}

export interface CarrierCOptions {
  /** The API's origin, e.g. https://api.nexmo.com (a simulator's in tests). */
  baseUrl: string;
}

export class CarrierCAdapter implements CarrierAdapter {
  readonly id = 'carrier_c' as const;
  readonly #baseUrl: string;

  constructor(options: CarrierCOptions) {
    this.#baseUrl = options.baseUrl.replace(/\/+$/, '');
  }

  async placeCall(credentials: CarrierCredentials, request: PlaceCallRequest): Promise<PlacedCall> {
    const body: Record<string, unknown> = {
      to: [{ type: 'phone', number: wireNumber(request.to) }],
      from: { type: 'phone', number: wireNumber(request.from) },
      answer_url: [request.answerUrl],
      answer_method: 'POST',
      event_url: [request.statusCallbackUrl],
      event_method: 'POST',
    };
    // Advanced machine detection, beside the stream: an event `status: human|machine`, then on a
    // machine `status: machine, sub_state: beep_start` when its beep sounds (`beep_timeout` if none).
    if (request.detectMachine)
      body.advanced_machine_detection = { behavior: 'continue', mode: 'detect_beep' };
    if (request.timeoutSeconds !== undefined) {
      const [min, max] = RINGING_TIMER_RANGE;
      body.ringing_timer = Math.min(max, Math.max(min, Math.round(request.timeoutSeconds)));
    }
    const response = await this.#request<CreateCallResponse>(credentials, 'POST', '/v1/calls', body);
    if (typeof response.body?.uuid !== 'string') {
      throw new ProviderError(`${PROVIDER} answered a call request without a uuid`, {
        provider: PROVIDER,
        retryable: false,
        status: response.status,
      });
    }
    return {
      callSid: response.body.uuid,
      status: CALL_STATUSES[response.body.status ?? ''] ?? 'queued',
    };
  }

  async hangUp(credentials: CarrierCredentials, callSid: string): Promise<void> {
    await this.#request(credentials, 'PUT', `/v1/calls/${encodeURIComponent(callSid)}`, {
      action: 'hangup',
    });
  }

  async transfer(credentials: CarrierCredentials, callSid: string, to: string): Promise<void> {
    await this.#request(credentials, 'PUT', `/v1/calls/${encodeURIComponent(callSid)}`, {
      action: 'transfer',
      destination: {
        type: 'ncco',
        ncco: [{ action: 'connect', endpoint: [{ type: 'phone', number: wireNumber(to) }] }],
      },
    });
  }

  /** Plays DTMF tones into the call (`digits`: 0-9, *, #, and `p` for a 500 ms pause). */
  /** Keys 0-9, * and #; our `w` (a 0.5 s pause) is carrier_c's `p`. It has no A-D. */
  async sendDtmf(credentials: CarrierCredentials, callSid: string, digits: string): Promise<void> {
    if (!/^[0-9*#w]{1,100}$/.test(digits)) {
      throw new ProviderError('carrier_c plays only the keys 0-9, * and #', {
        provider: PROVIDER,
        retryable: false,
        code: 'invalid_digits',
      });
    }
    await this.#request(credentials, 'PUT', `/v1/calls/${encodeURIComponent(callSid)}/dtmf`, {
      digits: digits.replaceAll('w', 'p'),
    });
  }

  async sendMessage(credentials: CarrierCredentials, request: SendMessageRequest): Promise<SentMessage> {
    const image = request.mediaUrls[0];
    // MMS carries one image per message: the first media URL is sent, with the text as its caption.
    const body: Record<string, unknown> =
      image === undefined
        ? { message_type: 'text', channel: 'sms', text: request.body }
        : {
            message_type: 'image',
            channel: 'mms',
            image: request.body === '' ? { url: image } : { url: image, caption: request.body },
          };
    body.to = wireNumber(request.to);
    body.from = wireNumber(request.from);
    // Per-message override of the application's status webhook.
    body.webhook_url = request.statusCallbackUrl;
    const response = await this.#request<SendMessageResponse>(credentials, 'POST', '/v1/messages', body);
    if (typeof response.body?.message_uuid !== 'string') {
      throw new ProviderError(`${PROVIDER} answered a message request without a message_uuid`, {
        provider: PROVIDER,
        retryable: false,
        status: response.status,
      });
    }
    return {
      messageId: response.body.message_uuid,
      status: 'queued',
      segments: image === undefined ? smsSegments(request.body) : 1,
    };
  }

  /**
   * Lists one call (`GET /v1/calls?page_size=1`): the cheapest request that accepts an application
   * JWT and proves both the application id and its private key. The Application API
   * (`GET /v2/applications/{id}`) would name the application but authenticates with the account's
   * API key and secret (Basic), which carrier_c credentials do not hold.
   */
  async validateCredentials(credentials: CarrierCredentials): Promise<CredentialCheck> {
    let token: string;
    try {
      token = await requestToken(credentials);
    } catch (error) {
      if (error instanceof ProviderError && !error.retryable) return { valid: false, detail: error.message };
      throw error;
    }
    try {
      await providerRequest({
        provider: PROVIDER,
        method: 'GET',
        url: `${this.#baseUrl}/v1/calls?page_size=1`,
        headers: { authorization: `Bearer ${token}` },
      });
    } catch (error) {
      if (error instanceof ProviderError && (error.status === 401 || error.status === 403)) {
        return {
          valid: false,
          detail: `${PROVIDER} refused the application id or private key (${error.status})`,
        };
      }
      throw error;
    }
    return {
      valid: true,
      detail: `${PROVIDER} accepted the application credentials`,
      account: credentials.application_id,
    };
  }

  identifyWebhook(webhook: IncomingWebhook): WebhookOwner {
    const fields = webhookFields(webhook);
    const owner: WebhookOwner = {};
    const accountId = unverifiedApplicationId(webhook);
    if (accountId) owner.accountId = accountId;
    const messageId = text(fields.message_uuid);
    const callSid = text(fields.uuid);
    if (messageId) {
      owner.messageId = messageId;
      // A status callback reports our outbound message (we are `from`); an inbound one is sent `to` us.
      const ours = text(fields.status) ? fields.from : fields.to;
      if (text(ours)) owner.ourNumber = e164(text(ours)!);
    } else if (callSid) {
      owner.callSid = callSid;
      const ours = fields.direction === 'outbound' ? fields.from : fields.to;
      if (text(ours)) owner.ourNumber = e164(text(ours)!);
    }
    return owner;
  }

  /** The HS256 JWT in `Authorization` (see `webhookSignatureValid` in carrier-c-tokens.ts). */
  verifyWebhook(credentials: CarrierCredentials, webhook: IncomingWebhook): boolean {
    return webhookSignatureValid(credentials, webhook);
  }

  parseWebhook(webhook: IncomingWebhook): CarrierEvent[] {
    const fields = webhookFields(webhook);
    const messageId = text(fields.message_uuid);
    if (messageId) {
      const status = text(fields.status);
      if (status) {
        const mapped = MESSAGE_STATUSES[status];
        if (!mapped) return [];
        const error = describeError(fields.error);
        return [{ kind: 'message_status', messageId, status: mapped, ...(error ? { error } : {}) }];
      }
      return [
        {
          kind: 'inbound_message',
          messageId,
          from: e164(text(fields.from) ?? ''),
          to: e164(text(fields.to) ?? ''),
          body: text(fields.text) ?? mediaCaption(fields) ?? '',
          mediaUrls: mediaUrls(fields),
        },
      ];
    }
    const callSid = text(fields.uuid);
    if (!callSid) return [];
    const status = text(fields.status);
    if (status === 'human' || status === 'machine') {
      const subState = text(fields.sub_state);
      const greetingEnded =
        subState === 'beep_start' ? 'beep' : subState === 'beep_timeout' ? 'other' : undefined;
      return [
        {
          kind: 'machine_detection',
          callSid,
          answeredBy: status,
          ...(greetingEnded ? { greetingEnded } : {}),
        },
      ];
    }
    if (status) {
      const mapped = CALL_STATUSES[status];
      if (!mapped) return [];
      const event: CarrierEvent = { kind: 'call_status', callSid, status: mapped };
      if (mapped === 'completed') {
        const duration = Number.parseInt(String(fields.duration ?? ''), 10);
        if (Number.isFinite(duration)) event.durationSeconds = duration;
      }
      const at = parseDate(fields.timestamp) ?? parseDate(fields.end_time);
      if (at) event.at = at;
      return [event];
    }
    // An answer request (what to do with a call that connected) carries from, to and uuid only. For
    // outbound calls the platform knows the request by the answer URL it gave; here it reads as a call.
    const from = text(fields.from);
    const to = text(fields.to);
    if (from && to && !NON_ANSWER_KEYS.some((key) => key in fields)) {
      return [{ kind: 'inbound_call', callSid, from: e164(from), to: e164(to) }];
    }
    return [];
  }

  /**
   * An NCCO that connects the call's audio to our media WebSocket, 16-bit PCM at 16 kHz. The endpoint's
   * `headers` come back in the stream's first message (`websocket:connected`), so the single-call token
   * and the carrier's call uuid travel there, not in the URL (carrier-c-media.ts reads them). Nothing
   * follows the `connect`: when the stream closes, the call ends.
   */
  answerMarkup(stream: MediaStreamTarget): { contentType: string; body: string; format: AudioFormat } {
    const headers: Record<string, string> = { [TOKEN_HEADER]: stream.token };
    if (stream.callSid) headers[CALL_UUID_HEADER] = stream.callSid;
    const ncco = [
      {
        action: 'connect',
        endpoint: [{ type: 'websocket', uri: stream.url, 'content-type': STREAM_CONTENT_TYPE, headers }],
      },
    ];
    return { contentType: 'application/json', body: JSON.stringify(ncco), format: LINEAR16_16K };
  }

  async #request<T>(
    credentials: CarrierCredentials,
    method: 'GET' | 'POST' | 'PUT',
    path: string,
    body?: Record<string, unknown>,
  ): Promise<{ status: number; body: T }> {
    const token = await requestToken(credentials);
    return providerRequest<T>({
      provider: PROVIDER,
      method,
      url: `${this.#baseUrl}${path}`,
      headers: { authorization: `Bearer ${token}` },
      body,
    });
  }
}

/** A webhook's fields: its JSON body (we ask for POST everywhere, so nothing comes in the query). */
function webhookFields(webhook: IncomingWebhook): Record<string, unknown> {
  try {
    const parsed: unknown = JSON.parse(webhook.rawBody);
    return isRecord(parsed) ? parsed : {};
  } catch {
    return {};
  }
}

function mediaUrls(fields: Record<string, unknown>): string[] {
  const urls: string[] = [];
  for (const kind of ['image', 'video', 'audio', 'file', 'vcard']) {
    const media = fields[kind];
    if (isRecord(media) && typeof media.url === 'string') urls.push(media.url);
  }
  return urls;
}

function mediaCaption(fields: Record<string, unknown>): string | undefined {
  for (const kind of ['image', 'video', 'file']) {
    const media = fields[kind];
    if (isRecord(media) && typeof media.caption === 'string') return media.caption;
  }
  return undefined;
}

/** A status callback's error object ({type, title, detail}) in a few words. */
function describeError(error: unknown): string | undefined {
  if (!isRecord(error)) return undefined;
  const title = text(error.title);
  const detail = text(error.detail);
  if (title && detail) return `${title}: ${detail}`;
  return detail ?? title;
}

function parseDate(value: unknown): Date | undefined {
  if (typeof value !== 'string' || value === '') return undefined;
  const date = new Date(value);
  return Number.isNaN(date.getTime()) ? undefined : date;
}

function text(value: unknown): string | undefined {
  if (typeof value === 'string') return value === '' ? undefined : value;
  if (typeof value === 'number') return String(value);
  return undefined;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** E.164 as the carrier writes it: digits without `+`. */
export function wireNumber(number: string): string {
  return number.startsWith('+') ? number.slice(1) : number;
}

/** A number from the carrier in our E.164 form; alphanumeric sender ids stay as they are. */
export function e164(number: string): string {
  return /^\d{6,15}$/.test(number) ? `+${number}` : number;
}
