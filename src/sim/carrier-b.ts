/**
 * A local stand-in for carrier_b's call-control v2 API: dial, hang up, transfer, send a message, read a
 * call-control application; and the Ed25519-signed JSON event webhooks the carrier posts afterwards
 * (call.initiated → call.answered → call.hangup; message.sent → message.finalized; message.received).
 *
 * Time is compressed: a call's whole life is posted right after the dial is answered, with start and
 * end times back-dated so that they span the outcome's duration. Set `holdAnsweredCalls` to keep
 * answered calls connected until they are hung up, transferred away or ended with `endCall()`.
 */
import { generateKeyPairSync, type KeyObject, randomUUID, sign } from 'node:crypto';
import {
  asRecord,
  E164,
  errorResponse,
  HANGUP,
  iso,
  MESSAGE_FAILURES,
  missing,
  notFound,
  RING_SECONDS,
  segmentsOf,
  text,
  unauthorizedResponse,
} from './carrier-b-wire.js';
import {
  CarrierSimulatorBase,
  type RecordedRequest,
  type Route,
  type SimResponse,
  type SimulatedCall,
} from './carrier-sim.js';

export interface CarrierBAccount {
  api_key: string;
  /** The call-control application (connection) the account's calls run under. */
  connection_id: string;
  application_name?: string;
  /** Where call events go when a dial names no webhook_url (the application's setting). */
  webhook_event_url?: string;
}

interface LiveCall {
  apiKey: string;
  webhookUrl: string | undefined;
  /** Fields every event of the call carries. */
  base: Record<string, unknown>;
  phase: 'ringing' | 'answered' | 'ended';
  startedAt: number;
  /** Events of one call are posted one after another, in order. */
  chain: Promise<void>;
}

export class CarrierBSimulator extends CarrierSimulatorBase {
  /** The account's Ed25519 public key, base64 of the 32 raw bytes: use it as `credentials.public_key`. */
  readonly publicKey: string;
  /** Keep answered calls connected until hangup/transfer/endCall() instead of ending them at once. */
  holdAnsweredCalls = false;
  readonly #privateKey: KeyObject;
  readonly #accounts = new Map<string, CarrierBAccount>();
  readonly #live = new Map<string, LiveCall>();

  constructor() {
    super();
    const { publicKey, privateKey } = generateKeyPairSync('ed25519');
    const jwk = publicKey.export({ format: 'jwk' });
    this.publicKey = Buffer.from(jwk.x ?? '', 'base64url').toString('base64');
    this.#privateKey = privateKey;
  }

  /** Accepts requests made with this API key (others answer 401). */
  addAccount(account: CarrierBAccount): void {
    this.#accounts.set(account.api_key, account);
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
    const answer = await this.#deliver(message.webhookUrl, 'message.received', new Date(), {
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

  /** Ends a held, connected call from the callee's side (call.hangup, normal_clearing). */
  endCall(callControlId: string): boolean {
    const live = this.#live.get(callControlId);
    if (!live || live.phase === 'ended') return false;
    this.#finish(live, live.phase === 'answered' ? HANGUP.completed : HANGUP.canceled);
    return true;
  }

  protected unauthorized(): SimResponse {
    return unauthorizedResponse();
  }

  protected routes(): Route[] {
    return [
      { method: 'POST', pattern: /^\/v2\/calls$/, handle: (request) => this.#dial(request) },
      {
        method: 'POST',
        pattern: /^\/v2\/calls\/(?<id>[^/]+)\/actions\/hangup$/,
        handle: (request, params) => this.#hangup(request, decodeURIComponent(params.id ?? '')),
      },
      {
        method: 'POST',
        pattern: /^\/v2\/calls\/(?<id>[^/]+)\/actions\/transfer$/,
        handle: (request, params) => this.#transfer(request, decodeURIComponent(params.id ?? '')),
      },
      { method: 'POST', pattern: /^\/v2\/messages$/, handle: (request) => this.#message(request) },
      {
        method: 'GET',
        pattern: /^\/v2\/call_control_applications\/(?<id>[^/]+)$/,
        handle: (request, params) => this.#application(request, decodeURIComponent(params.id ?? '')),
      },
    ];
  }

  #account(request: RecordedRequest): CarrierBAccount | undefined {
    const header = request.headers.authorization;
    const match = typeof header === 'string' ? /^Bearer (.+)$/.exec(header) : null;
    return match?.[1] ? this.#accounts.get(match[1]) : undefined;
  }

  #dial(request: RecordedRequest): SimResponse {
    const account = this.#account(request);
    if (!account) return this.unauthorized();
    const body = asRecord(request.body);
    const to = text(body.to);
    const from = text(body.from);
    const connectionId = text(body.connection_id);
    for (const [field, value] of [
      ['to', to],
      ['from', from],
      ['connection_id', connectionId],
    ] as const) {
      if (!value) return missing(field);
    }
    if (!E164.test(from!)) {
      return errorResponse(422, '10016', 'Phone number must be in +E.164 format', `from: ${from}`, '/from');
    }
    if (connectionId !== account.connection_id) {
      return errorResponse(
        422,
        '10015',
        'Invalid value for connection_id',
        'The connection_id is not a call-control application of this account.',
        '/connection_id',
      );
    }
    const callControlId = `v3:${this.nextId('')}`;
    const outcome = this.callOutcome(to!);
    this.calls.set(callControlId, {
      sid: callControlId,
      from: from!,
      to: to!,
      outcome,
      request: body,
      hungUp: false,
    });
    const base = {
      call_control_id: callControlId,
      call_leg_id: randomUUID(),
      call_session_id: randomUUID(),
      connection_id: connectionId,
      client_state: typeof body.client_state === 'string' ? body.client_state : null,
      from,
      to,
    };
    const now = Date.now();
    const ringSeconds =
      outcome.status === 'completed'
        ? 0
        : outcome.status === 'no-answer' && typeof body.timeout_secs === 'number'
          ? body.timeout_secs
          : RING_SECONDS[outcome.status];
    const held = outcome.status === 'completed' && this.holdAnsweredCalls;
    const connectedSeconds = outcome.status === 'completed' && !held ? outcome.durationSeconds : 0;
    const startedAt = held ? now : now - (ringSeconds + connectedSeconds) * 1000;
    const live: LiveCall = {
      apiKey: account.api_key,
      webhookUrl: text(body.webhook_url) ?? account.webhook_event_url,
      base,
      phase: 'ringing',
      startedAt,
      // The first event follows the dial's answer.
      chain: new Promise((resolve) => setTimeout(resolve, 0)),
    };
    this.#live.set(callControlId, live);
    this.#queue(live, 'call.initiated', startedAt, {
      direction: 'outgoing',
      state: 'bridging',
      start_time: iso(startedAt),
    });
    if (outcome.status === 'completed') {
      live.phase = 'answered';
      this.#queue(live, 'call.answered', startedAt, { state: 'answered', start_time: iso(startedAt) });
    }
    if (!held) this.#finish(live, HANGUP[outcome.status], now);
    return {
      status: 200,
      body: {
        data: {
          record_type: 'call',
          call_control_id: callControlId,
          call_leg_id: base.call_leg_id,
          call_session_id: base.call_session_id,
          client_state: base.client_state,
          is_alive: false,
        },
      },
    };
  }

  #hangup(request: RecordedRequest, callControlId: string): SimResponse {
    const found = this.#command(request, callControlId);
    if ('status' in found) return found;
    const { live, call } = found;
    call.hungUp = true;
    this.#finish(
      live,
      live.phase === 'answered' ? { ...HANGUP.completed, source: 'caller' } : HANGUP.canceled,
    );
    return { status: 200, body: { data: { result: 'ok' } } };
  }

  #transfer(request: RecordedRequest, callControlId: string): SimResponse {
    const found = this.#command(request, callControlId);
    if ('status' in found) return found;
    const to = text(asRecord(request.body).to);
    if (!to) return missing('to');
    found.call.transferredTo = to;
    return { status: 200, body: { data: { result: 'ok' } } };
  }

  /** The live call a command is for, or the carrier's refusal. */
  #command(
    request: RecordedRequest,
    callControlId: string,
  ): SimResponse | { live: LiveCall; call: SimulatedCall } {
    const account = this.#account(request);
    if (!account) return this.unauthorized();
    const live = this.#live.get(callControlId);
    const call = this.calls.get(callControlId);
    if (!live || !call || live.apiKey !== account.api_key) {
      return notFound();
    }
    if (live.phase === 'ended') {
      return errorResponse(422, '90018', 'Call has already ended', 'This call is no longer active.');
    }
    return { live, call };
  }

  #message(request: RecordedRequest): SimResponse {
    const account = this.#account(request);
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
        await this.#deliver(webhookUrl, 'message.sent', new Date(sentAt), {
          ...record,
          to: recipient(outcome === 'failed' ? 'sending' : 'sent'),
          sent_at: iso(sentAt),
          completed_at: null,
          errors: [],
        });
        const doneAt = Date.now();
        await this.#deliver(webhookUrl, 'message.finalized', new Date(doneAt), {
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
    const account = this.#account(request);
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

  /** Posts the call's call.hangup (after its other events) and marks it ended. */
  #finish(live: LiveCall, hangup: { cause: string; sip: string; source: string }, at = Date.now()): void {
    live.phase = 'ended';
    this.#queue(live, 'call.hangup', at, {
      state: 'hangup',
      hangup_cause: hangup.cause,
      hangup_source: hangup.source,
      sip_hangup_cause: hangup.sip,
      start_time: iso(live.startedAt),
      end_time: iso(at),
    });
  }

  #queue(live: LiveCall, eventType: string, at: number, fields: Record<string, unknown>): void {
    const url = live.webhookUrl;
    if (!url) return;
    const payload = { ...live.base, ...fields };
    const next = live.chain.then(() => this.#deliver(url, eventType, new Date(at), payload));
    live.chain = next.then(
      () => undefined,
      () => undefined,
    );
    this.background(() => next);
  }

  async #deliver(url: string, eventType: string, occurredAt: Date, payload: Record<string, unknown>) {
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
