/**
 * carrier_a: the REST API of the carrier whose credentials are an account SID and an auth token
 * (Twilio's 2010-04-01 API). Requests are form-encoded with HTTP Basic auth; webhooks are forms
 * signed with `X-Twilio-Signature` = base64(HMAC-SHA1(auth token, URL + every parameter's name and
 * value, sorted by name)). Calls are answered with markup (TwiML) that connects the call's audio to
 * our media stream; the carrier drops a stream URL's query string, so the single-call token is a
 * `<Parameter>`, and it signs the stream's WebSocket upgrade the same way (the URL alone, no body).
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { MessageStatus } from '../../db/schema/messaging.js';
import type { CallStatus } from '../../db/schema/telephony.js';
import { ProviderError } from '../errors.js';
import { providerRequest } from '../http.js';
import type { MediaHandshake, MediaStreamTarget } from './media.js';
import type {
  CallSnapshot,
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

const PROVIDER = 'carrier_a';

const CALL_STATUSES: Record<string, CallStatus> = {
  queued: 'queued',
  initiated: 'queued',
  ringing: 'ringing',
  'in-progress': 'in-progress',
  answered: 'in-progress',
  completed: 'completed',
  busy: 'busy',
  'no-answer': 'no-answer',
  failed: 'failed',
  canceled: 'canceled',
};

const MESSAGE_STATUSES: Record<string, MessageStatus> = {
  accepted: 'queued',
  scheduled: 'queued',
  queued: 'queued',
  sending: 'sending',
  sent: 'sent',
  delivered: 'delivered',
  undelivered: 'undelivered',
  failed: 'failed',
  canceled: 'cancelled',
  receiving: 'received',
  received: 'received',
};

/** Form parameters; a name given several times (MediaUrl0…, repeated keys) keeps every value. */
export type FormParams = Record<string, string | string[]>;

/** The signature carrier_a puts in `X-Twilio-Signature` for a request to `url` with `params`. */
export function carrierASignature(authToken: string, url: string, params: FormParams): string {
  let data = url;
  for (const name of Object.keys(params).sort()) {
    const values = params[name];
    // A repeated parameter counts each distinct value once, in order (as the carrier's own libraries do).
    for (const value of Array.isArray(values) ? [...new Set(values)].sort() : [values]) data += name + value;
  }
  return createHmac('sha1', authToken).update(data, 'utf8').digest('base64');
}

export function parseForm(raw: string): FormParams {
  const params: FormParams = {};
  for (const [name, value] of new URLSearchParams(raw)) {
    const current = params[name];
    if (current === undefined) params[name] = value;
    else params[name] = Array.isArray(current) ? [...current, value] : [current, value];
  }
  return params;
}

function header(webhook: Pick<IncomingWebhook, 'headers'>, name: string): string | undefined {
  const value = webhook.headers[name.toLowerCase()];
  return Array.isArray(value) ? value[0] : value;
}

function first(params: FormParams, name: string): string | undefined {
  const value = params[name];
  return Array.isArray(value) ? value[0] : value;
}

/** The URL as signed, and its variants with the default port added or removed (carriers differ). */
function urlVariants(url: string): string[] {
  const parsed = new URL(url);
  const defaultPort = parsed.protocol === 'https:' || parsed.protocol === 'wss:' ? '443' : '80';
  const variants = [url];
  if (parsed.port === '') {
    // URL drops a default port it is given, so the variant is built as a string.
    variants.push(url.replace(parsed.host, `${parsed.hostname}:${defaultPort}`));
  } else if (parsed.port === defaultPort) {
    variants.push(url.replace(`:${defaultPort}`, ''));
  }
  return variants;
}

function safeEqual(a: string, b: string): boolean {
  const left = Buffer.from(a);
  const right = Buffer.from(b);
  return left.length === right.length && timingSafeEqual(left, right);
}

interface CarrierAResource {
  sid: string;
  status: string;
  num_segments?: string;
  friendly_name?: string;
}

interface CarrierACall {
  sid: string;
  status: string;
  duration?: string | null;
  answered_by?: string | null;
  date_created?: string | null;
  end_time?: string | null;
}

/** `human`, or `machine_start`, `machine_end_beep`… and `fax` (a machine); nothing when detection did not run. */
function answeredByOf(value: string | undefined | null): 'human' | 'machine' | undefined {
  if (!value || value === 'unknown') return undefined;
  return value === 'human' ? 'human' : 'machine';
}

/**
 * The asynchronous detection's verdict (`AsyncAmdStatusCallback`): with `DetectMessageEnd`, a machine
 * is reported once its greeting has ended — `machine_end_beep`, `machine_end_silence` or
 * `machine_end_other`; `human`, `fax`, or `unknown` (no verdict) otherwise.
 */
function machineDetection(callSid: string, answeredBy: string): CarrierEvent[] {
  const who = answeredByOf(answeredBy);
  if (!who) return [];
  const ended = answeredBy.startsWith('machine_end_')
    ? { greetingEnded: answeredBy === 'machine_end_beep' ? ('beep' as const) : ('other' as const) }
    : {};
  return [{ kind: 'machine_detection', callSid, answeredBy: who, ...ended }];
}

function snapshotOf(call: CarrierACall): CallSnapshot {
  const answeredBy = answeredByOf(call.answered_by);
  return {
    callSid: call.sid,
    status: CALL_STATUSES[call.status] ?? 'failed',
    ...(call.duration != null ? { durationSeconds: Number(call.duration) || 0 } : {}),
    ...(answeredBy ? { answeredBy } : {}),
    createdAt: call.date_created ? new Date(call.date_created) : new Date(0),
    ...(call.end_time ? { endedAt: new Date(call.end_time) } : {}),
  };
}

export class CarrierAAdapter implements CarrierAdapter {
  readonly id = 'carrier_a' as const;

  constructor(private readonly options: { baseUrl: string; timeoutMs?: number }) {}

  async placeCall(credentials: CarrierCredentials, request: PlaceCallRequest): Promise<PlacedCall> {
    const form = new URLSearchParams({
      To: request.to,
      From: request.from,
      Url: request.answerUrl,
      Method: 'POST',
      StatusCallback: request.statusCallbackUrl,
      StatusCallbackMethod: 'POST',
      Timeout: String(request.timeoutSeconds ?? 30),
    });
    for (const event of ['initiated', 'ringing', 'answered', 'completed'])
      form.append('StatusCallbackEvent', event);
    if (request.detectMachine) {
      // Asynchronous, so the stream starts at once; waiting for the message's end, so the verdict on
      // a machine comes when its beep (or the silence after its greeting) does.
      form.set('MachineDetection', 'DetectMessageEnd');
      form.set('AsyncAmd', 'true');
      form.set('AsyncAmdStatusCallback', request.statusCallbackUrl);
      form.set('AsyncAmdStatusCallbackMethod', 'POST');
    }
    const { body } = await this.#call<CarrierAResource>(credentials, 'POST', '/Calls.json', form);
    return { callSid: body.sid, status: CALL_STATUSES[body.status] ?? 'queued' };
  }

  async lookupCall(credentials: CarrierCredentials, callSid: string): Promise<CallSnapshot | undefined> {
    try {
      const { body } = await this.#call<CarrierACall>(
        credentials,
        'GET',
        `/Calls/${encodeURIComponent(callSid)}.json`,
      );
      return snapshotOf(body);
    } catch (error) {
      if (error instanceof ProviderError && error.status === 404) return undefined;
      throw error;
    }
  }

  async findOutboundCalls(
    credentials: CarrierCredentials,
    query: { from: string; to: string; since: Date },
  ): Promise<CallSnapshot[]> {
    // The list filters by day (UTC); the exact time is compared on the records.
    const params = new URLSearchParams({
      From: query.from,
      To: query.to,
      'StartTime>': query.since.toISOString().slice(0, 10),
      PageSize: '100',
    });
    const { body } = await this.#call<{ calls: CarrierACall[] }>(credentials, 'GET', `/Calls.json?${params}`);
    return (body.calls ?? []).map(snapshotOf).filter((call) => call.createdAt >= query.since);
  }

  async hangUp(credentials: CarrierCredentials, callSid: string): Promise<void> {
    await this.#call(
      credentials,
      'POST',
      `/Calls/${encodeURIComponent(callSid)}.json`,
      new URLSearchParams({ Status: 'completed' }),
    );
  }

  async transfer(credentials: CarrierCredentials, callSid: string, to: string): Promise<void> {
    const twiml = `<?xml version="1.0" encoding="UTF-8"?><Response><Dial>${escapeXml(to)}</Dial></Response>`;
    await this.#call(
      credentials,
      'POST',
      `/Calls/${encodeURIComponent(callSid)}.json`,
      new URLSearchParams({ Twiml: twiml }),
    );
  }

  async sendMessage(credentials: CarrierCredentials, request: SendMessageRequest): Promise<SentMessage> {
    const form = new URLSearchParams({
      To: request.to,
      Body: request.body,
      StatusCallback: request.statusCallbackUrl,
    });
    if (request.messagingServiceSid) form.set('MessagingServiceSid', request.messagingServiceSid);
    else form.set('From', request.from);
    for (const url of request.mediaUrls) form.append('MediaUrl', url);
    const { body } = await this.#call<CarrierAResource>(credentials, 'POST', '/Messages.json', form);
    return {
      messageId: body.sid,
      status: MESSAGE_STATUSES[body.status] ?? 'queued',
      segments: Number(body.num_segments ?? 1) || 1,
    };
  }

  async validateCredentials(credentials: CarrierCredentials): Promise<CredentialCheck> {
    try {
      const { body } = await this.#call<CarrierAResource>(credentials, 'GET', '.json');
      return {
        valid: body.status === undefined || body.status === 'active',
        detail:
          body.status === undefined || body.status === 'active'
            ? 'Credentials accepted'
            : `Account is ${body.status}`,
        account: body.friendly_name,
      };
    } catch (error) {
      if (
        error instanceof ProviderError &&
        (error.status === 401 || error.status === 403 || error.status === 404)
      ) {
        return { valid: false, detail: 'The carrier refused the account SID and auth token' };
      }
      throw error;
    }
  }

  identifyWebhook(webhook: IncomingWebhook): WebhookOwner {
    const params = parseForm(webhook.rawBody);
    const direction = first(params, 'Direction') ?? '';
    const inbound =
      direction === 'inbound' ||
      (first(params, 'MessageSid') !== undefined && first(params, 'Body') !== undefined);
    return {
      accountId: first(params, 'AccountSid'),
      callSid: first(params, 'CallSid'),
      messageId: first(params, 'MessageSid') ?? first(params, 'SmsSid'),
      ourNumber: inbound ? first(params, 'To') : first(params, 'From'),
    };
  }

  verifyWebhook(credentials: CarrierCredentials, webhook: IncomingWebhook): boolean {
    const signature = header(webhook, 'x-twilio-signature');
    const token = credentials.auth_token;
    if (!signature || !token) return false;
    const params = webhook.method === 'GET' ? {} : parseForm(webhook.rawBody);
    if (first(params, 'AccountSid') !== undefined && first(params, 'AccountSid') !== credentials.account_sid)
      return false;
    return urlVariants(webhook.url).some((url) =>
      safeEqual(carrierASignature(token, url, params), signature),
    );
  }

  parseWebhook(webhook: IncomingWebhook): CarrierEvent[] {
    const params = parseForm(webhook.rawBody);
    const callSid = first(params, 'CallSid');
    const messageSid = first(params, 'MessageSid') ?? first(params, 'SmsSid');
    const callStatus = first(params, 'CallStatus');
    const messageStatus = first(params, 'MessageStatus') ?? first(params, 'SmsStatus');
    // The asynchronous detection's callback: the verdict alone, without a call status.
    if (callSid && !callStatus && first(params, 'AnsweredBy') !== undefined)
      return machineDetection(callSid, first(params, 'AnsweredBy')!);
    if (callSid && callStatus) {
      const events: CarrierEvent[] = [];
      if (first(params, 'Direction') === 'inbound' && callStatus === 'ringing') {
        events.push({
          kind: 'inbound_call',
          callSid,
          from: first(params, 'From') ?? '',
          to: first(params, 'To') ?? '',
        });
      }
      const duration = first(params, 'CallDuration');
      const timestamp = first(params, 'Timestamp');
      const answeredBy = answeredByOf(first(params, 'AnsweredBy'));
      events.push({
        kind: 'call_status',
        callSid,
        status: CALL_STATUSES[callStatus] ?? 'failed',
        ...(duration !== undefined ? { durationSeconds: Number(duration) || 0 } : {}),
        ...(timestamp ? { at: new Date(timestamp) } : {}),
        ...(answeredBy ? { answeredBy } : {}),
      });
      return events;
    }
    if (
      messageSid &&
      first(params, 'Body') !== undefined &&
      (messageStatus === undefined || messageStatus === 'received')
    ) {
      const count = Number(first(params, 'NumMedia') ?? 0);
      const mediaUrls: string[] = [];
      for (let i = 0; i < count; i++) {
        const url = first(params, `MediaUrl${i}`);
        if (url) mediaUrls.push(url);
      }
      return [
        {
          kind: 'inbound_message',
          messageId: messageSid,
          from: first(params, 'From') ?? '',
          to: first(params, 'To') ?? '',
          body: first(params, 'Body') ?? '',
          mediaUrls,
        },
      ];
    }
    if (messageSid && messageStatus) {
      const code = first(params, 'ErrorCode');
      return [
        {
          kind: 'message_status',
          messageId: messageSid,
          status: MESSAGE_STATUSES[messageStatus] ?? 'failed',
          ...(code ? { error: `carrier error ${code}` } : {}),
        },
      ];
    }
    return [];
  }

  answerMarkup(stream: MediaStreamTarget): { contentType: string; body: string } {
    return {
      contentType: 'text/xml',
      body:
        '<?xml version="1.0" encoding="UTF-8"?>' +
        `<Response><Connect><Stream url="${escapeXml(stream.url)}">` +
        `<Parameter name="token" value="${escapeXml(stream.token)}"/>` +
        '</Stream></Connect></Response>',
    };
  }

  /** The upgrade is signed like a webhook without parameters: over the `wss://` URL it connected to. */
  verifyMediaHandshake(credentials: CarrierCredentials, handshake: MediaHandshake): boolean {
    const signature = header(handshake, 'x-twilio-signature');
    const token = credentials.auth_token;
    if (!signature || !token) return false;
    return urlVariants(handshake.url).some((url) => safeEqual(carrierASignature(token, url, {}), signature));
  }

  async #call<T>(
    credentials: CarrierCredentials,
    method: 'GET' | 'POST',
    path: string,
    form?: URLSearchParams,
  ): Promise<{ body: T }> {
    const sid = credentials.account_sid;
    const token = credentials.auth_token;
    if (!sid || !token) {
      throw new ProviderError('carrier_a credentials need account_sid and auth_token', {
        provider: PROVIDER,
        retryable: false,
      });
    }
    const base = this.options.baseUrl.replace(/\/+$/, '');
    return providerRequest<T>({
      provider: PROVIDER,
      method,
      url: `${base}/2010-04-01/Accounts/${encodeURIComponent(sid)}${path}`,
      headers: { authorization: `Basic ${Buffer.from(`${sid}:${token}`).toString('base64')}` },
      body: form,
      timeoutMs: this.options.timeoutMs,
    });
  }
}

function escapeXml(value: string): string {
  return value
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&apos;');
}
