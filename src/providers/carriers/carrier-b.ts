/**
 * carrier_b: the call-control (v2) API of the carrier whose credentials are an API key and a
 * connection id (the id of the call-control application the calls run under).
 *
 * Out: JSON REST calls under `{baseUrl}/v2` with `Authorization: Bearer <api_key>`. The dial (and
 * the answer command of an inbound call) asks the carrier to stream the call's audio to our media
 * WebSocket from the moment it connects, both ways, as RTP in PCMU (no answer markup): the stream URL
 * without a query, the single-call token as `stream_auth_token` (carrier-b-media.ts reads it back).
 * In: JSON event webhooks `{data: {event_type, id, occurred_at, payload}}`, signed with the account's
 * Ed25519 key: header `telnyx-signature-ed25519` is the base64 signature of
 * `${telnyx-timestamp}|${raw body}`, verified with the account's base64 public key
 * (`credentials.public_key`).
 */
import { createPublicKey, type KeyObject, verify } from 'node:crypto';
import { ProviderError } from '../errors.js';
import { providerRequest } from '../http.js';
import {
  asObject,
  callStatus,
  connectedSeconds,
  dataOf,
  decodeClientState,
  describeErrors,
  encodeClientState,
  firstRecipient,
  HANGUP_CAUSES,
  isString,
  type Json,
  MESSAGE_STATUSES,
  machineDetection,
  objectAt,
  readEnvelope,
  stringAt,
} from './carrier-b-events.js';
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

export { decodeClientState, encodeClientState } from './carrier-b-events.js';

const PROVIDER = 'carrier_b';

export const CARRIER_B_SIGNATURE_HEADER = 'telnyx-signature-ed25519';
export const CARRIER_B_TIMESTAMP_HEADER = 'telnyx-timestamp';
/** How far (seconds) a webhook's signing time may be from ours, either way, before it is refused as a replay. */
export const CARRIER_B_SIGNATURE_TOLERANCE_SECONDS = 5 * 60;

export class CarrierBAdapter implements CarrierAdapter {
  readonly id = 'carrier_b' as const;
  readonly #baseUrl: string;

  constructor(options: { baseUrl: string }) {
    this.#baseUrl = options.baseUrl.replace(/\/+$/, '');
  }

  async placeCall(credentials: CarrierCredentials, request: PlaceCallRequest): Promise<PlacedCall> {
    const { apiKey, connectionId } = requireCredentials(credentials);
    const body: Json = {
      connection_id: connectionId,
      to: request.to,
      from: request.from,
      webhook_url: request.statusCallbackUrl,
      webhook_url_method: 'POST',
      ...streamParameters(request.stream),
      client_state: encodeClientState(request.callId),
    };
    if (request.timeoutSeconds !== undefined) body.timeout_secs = request.timeoutSeconds;
    // Runs beside the stream: call.machine.detection.ended, then on a machine
    // call.machine.greeting.ended once its final beep is heard.
    if (request.detectMachine) body.answering_machine_detection = 'detect_beep';
    const response = await this.#request(apiKey, 'POST', '/v2/calls', body);
    const callControlId = stringAt(dataOf(response), 'call_control_id');
    if (!callControlId) throw unexpected('the dial answer carries no call_control_id');
    return { callSid: callControlId, status: 'queued' };
  }

  async hangUp(credentials: CarrierCredentials, callSid: string): Promise<void> {
    const { apiKey } = requireCredentials(credentials);
    await this.#request(apiKey, 'POST', `/v2/calls/${encodeURIComponent(callSid)}/actions/hangup`, {});
  }

  async transfer(credentials: CarrierCredentials, callSid: string, to: string): Promise<void> {
    const { apiKey } = requireCredentials(credentials);
    await this.#request(apiKey, 'POST', `/v2/calls/${encodeURIComponent(callSid)}/actions/transfer`, { to });
  }

  async sendDtmf(credentials: CarrierCredentials, callSid: string, digits: string): Promise<void> {
    const { apiKey } = requireCredentials(credentials);
    // carrier_b's `w` is our pause too (0.5 s).
    if (!/^[0-9*#A-Dw]{1,64}$/.test(digits)) {
      throw new ProviderError('DTMF digits are 0-9, *, #, A-D and w', {
        provider: PROVIDER,
        retryable: false,
        code: 'invalid_digits',
      });
    }
    await this.#request(apiKey, 'POST', `/v2/calls/${encodeURIComponent(callSid)}/actions/send_dtmf`, {
      digits,
    });
  }

  /** Answers a ringing inbound call with its media stream; later events echo our call id. */
  async answerCall(
    credentials: CarrierCredentials,
    request: { callSid: string; callId: number; stream: MediaStreamTarget },
  ): Promise<void> {
    const { apiKey } = requireCredentials(credentials);
    await this.#request(apiKey, 'POST', `/v2/calls/${encodeURIComponent(request.callSid)}/actions/answer`, {
      ...streamParameters(request.stream),
      client_state: encodeClientState(request.callId),
    });
  }

  async sendMessage(credentials: CarrierCredentials, request: SendMessageRequest): Promise<SentMessage> {
    const { apiKey } = requireCredentials(credentials);
    const body: Json = {
      from: request.from,
      to: request.to,
      text: request.body,
      webhook_url: request.statusCallbackUrl,
    };
    if (request.mediaUrls.length > 0) body.media_urls = request.mediaUrls;
    const data = dataOf(await this.#request(apiKey, 'POST', '/v2/messages', body));
    const messageId = stringAt(data, 'id');
    if (!messageId) throw unexpected('the message answer carries no id');
    const recipient = firstRecipient(data);
    const status = MESSAGE_STATUSES[stringAt(recipient, 'status') ?? ''] ?? 'queued';
    const parts = data.parts;
    const segments = typeof parts === 'number' && Number.isInteger(parts) && parts > 0 ? parts : 1;
    return { messageId, status, segments };
  }

  async validateCredentials(credentials: CarrierCredentials): Promise<CredentialCheck> {
    const apiKey = credentials.api_key;
    const connectionId = credentials.connection_id;
    if (!apiKey || !connectionId) return { valid: false, detail: 'api_key and connection_id are required' };
    try {
      const data = dataOf(
        await this.#request(
          apiKey,
          'GET',
          `/v2/call_control_applications/${encodeURIComponent(connectionId)}`,
        ),
      );
      const name = stringAt(data, 'application_name');
      return {
        valid: true,
        detail: `connection ${connectionId} is a call-control application of this account`,
        account: name ?? stringAt(data, 'id') ?? connectionId,
      };
    } catch (error) {
      if (!(error instanceof ProviderError) || error.status === undefined) throw error;
      if (error.status === 401) return { valid: false, detail: 'the API key was refused' };
      if (error.status === 403) return { valid: false, detail: 'the API key may not read this connection' };
      if (error.status === 404 || error.status === 422) {
        return { valid: false, detail: `no call-control application ${connectionId} in this account` };
      }
      throw error;
    }
  }

  identifyWebhook(webhook: IncomingWebhook): WebhookOwner {
    const event = readEnvelope(webhook.rawBody);
    if (!event) return {};
    const { eventType, payload } = event;
    if (eventType.startsWith('call.')) {
      const owner: WebhookOwner = {};
      const connectionId = stringAt(payload, 'connection_id');
      const callSid = stringAt(payload, 'call_control_id');
      if (connectionId) owner.accountId = connectionId;
      if (callSid) owner.callSid = callSid;
      const direction = stringAt(payload, 'direction');
      const outgoing =
        direction === 'outgoing' ||
        (direction === undefined && decodeClientState(payload.client_state) !== undefined);
      const ourNumber =
        direction === 'incoming' ? stringAt(payload, 'to') : outgoing ? stringAt(payload, 'from') : undefined;
      if (ourNumber) owner.ourNumber = ourNumber;
      return owner;
    }
    if (eventType.startsWith('message.')) {
      const owner: WebhookOwner = {};
      const messageId = stringAt(payload, 'id');
      if (messageId) owner.messageId = messageId;
      const ourNumber =
        eventType === 'message.received'
          ? stringAt(firstRecipient(payload), 'phone_number')
          : stringAt(objectAt(payload, 'from'), 'phone_number');
      if (ourNumber) owner.ourNumber = ourNumber;
      return owner;
    }
    return {};
  }

  verifyWebhook(credentials: CarrierCredentials, webhook: IncomingWebhook): boolean {
    const key = publicKeyFrom(credentials.public_key);
    const signature = headerValue(webhook.headers, CARRIER_B_SIGNATURE_HEADER);
    const timestamp = headerValue(webhook.headers, CARRIER_B_TIMESTAMP_HEADER);
    if (!key || !signature || !timestamp || !/^\d{1,12}$/.test(timestamp)) return false;
    const skew = Math.abs(Date.now() / 1000 - Number(timestamp));
    if (skew > CARRIER_B_SIGNATURE_TOLERANCE_SECONDS) return false;
    const bytes = Buffer.from(signature, 'base64');
    if (bytes.length !== 64) return false;
    try {
      return verify(null, Buffer.from(`${timestamp}|${webhook.rawBody}`, 'utf8'), key, bytes);
    } catch {
      return false;
    }
  }

  parseWebhook(webhook: IncomingWebhook): CarrierEvent[] {
    const event = readEnvelope(webhook.rawBody);
    if (!event) return [];
    const { eventType, payload, occurredAt } = event;
    switch (eventType) {
      case 'call.initiated': {
        const callSid = stringAt(payload, 'call_control_id');
        if (!callSid) return [];
        if (stringAt(payload, 'direction') === 'incoming') {
          return [
            {
              kind: 'inbound_call',
              callSid,
              from: stringAt(payload, 'from') ?? '',
              to: stringAt(payload, 'to') ?? '',
            },
          ];
        }
        // An outbound leg has been created and the destination is being dialled; call control sends
        // no separate ringing event for it.
        return [callStatus(callSid, 'ringing', payload, occurredAt)];
      }
      case 'call.answered': {
        const callSid = stringAt(payload, 'call_control_id');
        return callSid ? [callStatus(callSid, 'in-progress', payload, occurredAt)] : [];
      }
      case 'call.hangup': {
        const callSid = stringAt(payload, 'call_control_id');
        if (!callSid) return [];
        const status = HANGUP_CAUSES[stringAt(payload, 'hangup_cause') ?? ''] ?? 'failed';
        const event = callStatus(callSid, status, payload, occurredAt);
        const duration = status === 'completed' ? connectedSeconds(payload) : 0;
        if (duration !== undefined) event.durationSeconds = duration;
        return [event];
      }
      case 'call.machine.detection.ended':
      case 'call.machine.greeting.ended': {
        const callSid = stringAt(payload, 'call_control_id');
        return callSid ? machineDetection(eventType, callSid, payload) : [];
      }
      case 'message.received': {
        const messageId = stringAt(payload, 'id');
        if (!messageId) return [];
        const media = Array.isArray(payload.media) ? payload.media : [];
        return [
          {
            kind: 'inbound_message',
            messageId,
            from: stringAt(objectAt(payload, 'from'), 'phone_number') ?? '',
            to: stringAt(firstRecipient(payload), 'phone_number') ?? '',
            body: stringAt(payload, 'text') ?? '',
            mediaUrls: media.map((item) => stringAt(asObject(item), 'url')).filter(isString),
          },
        ];
      }
      case 'message.sent':
      case 'message.finalized': {
        const messageId = stringAt(payload, 'id');
        const status = MESSAGE_STATUSES[stringAt(firstRecipient(payload), 'status') ?? ''];
        if (!messageId || !status) return [];
        const error = describeErrors(payload.errors);
        return [
          error && (status === 'failed' || status === 'undelivered')
            ? { kind: 'message_status', messageId, status, error }
            : { kind: 'message_status', messageId, status },
        ];
      }
      default:
        return [];
    }
  }

  async #request(apiKey: string, method: 'GET' | 'POST', path: string, body?: Json): Promise<unknown> {
    const response = await providerRequest({
      provider: PROVIDER,
      method,
      url: `${this.#baseUrl}${path}`,
      headers: { authorization: `Bearer ${apiKey}` },
      body,
    });
    return response.body;
  }
}

/**
 * What the dial and the answer command ask of the media stream: the caller's track only (what we
 * hear), μ-law both ways (`stream_codec` transcodes a PCMA call; the carrier plays what we send back
 * as RTP only in `rtp` mode, MP3 otherwise), and the single-call token as `stream_auth_token`, which
 * the carrier sends back as a header of the WebSocket upgrade (the URL carries no query).
 */
function streamParameters(stream: MediaStreamTarget): Json {
  return {
    stream_url: stream.url,
    stream_track: 'inbound_track',
    stream_codec: 'PCMU',
    stream_bidirectional_mode: 'rtp',
    stream_bidirectional_codec: 'PCMU',
    stream_auth_token: stream.token,
  };
}

function requireCredentials(credentials: CarrierCredentials): { apiKey: string; connectionId: string } {
  const apiKey = credentials.api_key;
  const connectionId = credentials.connection_id;
  if (!apiKey || !connectionId) {
    throw new ProviderError('carrier_b credentials need api_key and connection_id', {
      provider: PROVIDER,
      retryable: false,
      code: 'missing_credentials',
    });
  }
  return { apiKey, connectionId };
}

function unexpected(message: string): ProviderError {
  // Not retryable: the request may have taken effect (a call dialled, a message sent).
  return new ProviderError(`carrier_b answered unexpectedly: ${message}`, {
    provider: PROVIDER,
    retryable: false,
    code: 'unexpected_response',
  });
}

/** The account's public key: base64 of the 32 raw Ed25519 bytes (as the carrier's portal shows it), or PEM. */
function publicKeyFrom(value: string | undefined): KeyObject | undefined {
  if (!value) return undefined;
  try {
    if (value.includes('-----BEGIN')) {
      const key = createPublicKey(value);
      return key.asymmetricKeyType === 'ed25519' ? key : undefined;
    }
    const raw = Buffer.from(value.trim(), 'base64');
    if (raw.length !== 32) return undefined;
    return createPublicKey({
      key: { kty: 'OKP', crv: 'Ed25519', x: raw.toString('base64url') },
      format: 'jwk',
    });
  } catch {
    return undefined;
  }
}

function headerValue(headers: IncomingWebhook['headers'], name: string): string | undefined {
  for (const [key, value] of Object.entries(headers)) {
    if (key.toLowerCase() !== name) continue;
    const first = Array.isArray(value) ? value[0] : value;
    return first?.trim() || undefined;
  }
  return undefined;
}
