/**
 * A local carrier_c (Vonage Voice API v1 and Messages API v1): verifies each request's RS256
 * application JWT with the account's public key, places calls (fetches the answer URL, then posts the
 * call's events), sends messages (posts submitted, then the delivery outcome), and signs every webhook
 * it posts with `Authorization: Bearer <HS256 JWT>` carrying `payload_hash`, as the real service does.
 *
 * A number given a phone script (`setPhone`) is answered by a simulated phone: when the NCCO
 * connects a websocket, the call's media stream really runs (carrier-c-phone.ts), the call stays
 * answered while it does, and `completed` reports its real duration.
 *
 * Numbers are kept in SimulatedCall / SimulatedMessage in E.164 with `+` (as the other simulators
 * do), so `setCallOutcome('+15551230000', …)` matches a call the wire sent to `15551230000`.
 */
import { createPublicKey, type KeyObject, randomBytes, randomUUID } from 'node:crypto';
import { decodeJwt, jwtVerify, SignJWT } from 'jose';
import { sha256Hex } from '../lib/crypto.js';
import { carrierCDetection } from './answering-machine.js';
import type { PhoneCall, PhoneScript, PhoneSettings } from './carrier-a-phone.js';
import { CarrierCPhones } from './carrier-c-phone.js';
import {
  badRequest,
  callRequestProblems,
  completedFields,
  digitsProblems,
  FINAL_EVENT,
  FINAL_MESSAGE_STATUS,
  inboundMessage,
  messageFailure,
  messageRequestProblems,
  notFound,
  plus,
  record,
  transferTarget,
  unauthorizedResponse,
  wire,
} from './carrier-c-wire.js';
import {
  CarrierSimulatorBase,
  type RecordedRequest,
  type Route,
  type SimResponse,
  type SimulatedCall,
} from './carrier-sim.js';

export interface CarrierCAccount {
  application_id: string;
  /** The PEM public key of the application's key pair (SPKI or PKCS#1). */
  public_key_pem: string;
}

interface Account {
  applicationId: string;
  publicKey: KeyObject;
}

export class CarrierCSimulator extends CarrierSimulatorBase {
  /** The account's webhook signing secret: every webhook the simulator posts is signed with it. */
  readonly signatureSecret = randomBytes(24).toString('base64url');
  readonly #accounts = new Map<string, Account>();
  /** Which application placed each call / sent each message (its webhooks name it). */
  readonly #owners = new Map<string, string>();
  readonly #phones = new CarrierCPhones();
  /** DTMF the platform played into each call (`PUT /v1/calls/{uuid}/dtmf`), by call uuid. */
  readonly digitsSent = new Map<string, string[]>();

  /** The calls a simulated phone answered (or placed), by call uuid. */
  get phoneCalls(): ReadonlyMap<string, PhoneCall> {
    return this.#phones.calls;
  }

  /** Calls to `number` (`'*'`: every other) are answered by a phone running `script` on the stream. */
  setPhone(number: string, script: PhoneScript, settings: PhoneSettings = {}): void {
    this.#phones.set(number, script, settings);
  }

  override async stop(): Promise<void> {
    await this.#phones.stopAll();
    await super.stop();
  }

  addAccount(account: CarrierCAccount): void {
    this.#accounts.set(account.application_id, {
      applicationId: account.application_id,
      publicKey: createPublicKey(account.public_key_pem),
    });
  }

  /** Posts a signed inbound SMS (or MMS, with `imageUrl`) to `webhookUrl`, as the carrier would. */
  async sendInboundMessage(message: {
    webhookUrl: string;
    from: string;
    to: string;
    text: string;
    imageUrl?: string;
    applicationId?: string;
  }): Promise<{ messageId: string; status: number | 'error' }> {
    const messageId = randomUUID();
    const payload = inboundMessage(messageId, message);
    const answer = await this.#postSigned(
      message.webhookUrl,
      payload,
      message.applicationId ?? this.#defaultApplication(),
    );
    return { messageId, status: answer?.status ?? 'error' };
  }

  /**
   * Rings our number: posts a signed answer request to `answerUrl` (what the application's answer
   * webhook receives) and records what the platform answered on the new call.
   */
  async sendInboundCall(call: {
    answerUrl: string;
    from: string;
    to: string;
    applicationId?: string;
    /** The caller: a phone running this script on the stream the NCCO connects. */
    phone?: PhoneScript;
    /** Where `completed` goes once the phone's call has ended. */
    eventUrl?: string;
  }): Promise<SimulatedCall & { phoneCall?: PhoneCall }> {
    const uuid = randomUUID();
    const simulated: SimulatedCall = {
      sid: uuid,
      from: plus(call.from),
      to: plus(call.to),
      outcome: this.callOutcome(plus(call.to)),
      request: { direction: 'inbound', answer_url: [call.answerUrl] },
      hungUp: false,
    };
    this.calls.set(uuid, simulated);
    const applicationId = call.applicationId ?? this.#defaultApplication();
    if (applicationId) this.#owners.set(uuid, applicationId);
    const answer = await this.#postSigned(
      call.answerUrl,
      {
        to: wire(call.to),
        from: wire(call.from),
        uuid,
        conversation_uuid: `CON-${randomUUID()}`,
        region_url: this.baseUrl,
      },
      applicationId,
    );
    if (answer) simulated.answer = answer;
    const phoneCall = call.phone && this.#phones.answer(simulated, { script: call.phone, settings: {} });
    if (!phoneCall) return simulated;
    this.background(async () => {
      await phoneCall.done;
      const fields = this.#phones.ended(simulated, phoneCall);
      const base = { uuid, from: wire(call.from), to: wire(call.to), direction: 'inbound' };
      const completed = { ...base, status: 'completed', ...fields, timestamp: new Date().toISOString() };
      if (call.eventUrl) await this.#postSigned(call.eventUrl, completed, applicationId);
    });
    return Object.assign(simulated, { phoneCall });
  }

  protected override unauthorized(): SimResponse {
    return unauthorizedResponse();
  }

  protected override routes(): Route[] {
    return [
      {
        method: 'POST',
        pattern: /^\/v1\/calls\/?$/,
        handle: (request) => this.#authenticated(request, (account) => this.#createCall(account, request)),
      },
      {
        method: 'GET',
        pattern: /^\/v1\/calls\/?$/,
        handle: (request) => this.#authenticated(request, () => this.#listCalls()),
      },
      {
        method: 'PUT',
        pattern: /^\/v1\/calls\/(?<uuid>[^/]+)\/dtmf$/,
        handle: (request, params) =>
          this.#authenticated(request, () =>
            this.#sendDigits(decodeURIComponent(params.uuid ?? ''), request),
          ),
      },
      {
        method: 'PUT',
        pattern: /^\/v1\/calls\/(?<uuid>[^/]+)$/,
        handle: (request, params) =>
          this.#authenticated(request, () =>
            this.#modifyCall(decodeURIComponent(params.uuid ?? ''), request),
          ),
      },
      {
        method: 'POST',
        pattern: /^\/v1\/messages\/?$/,
        handle: (request) => this.#authenticated(request, (account) => this.#sendMessage(account, request)),
      },
    ];
  }

  /** Runs `handle` when the request carries a valid RS256 JWT of a known application. */
  async #authenticated(
    request: RecordedRequest,
    handle: (account: Account) => SimResponse | Promise<SimResponse>,
  ): Promise<SimResponse> {
    const account = await this.#authenticate(request);
    return account ? handle(account) : this.unauthorized();
  }

  async #authenticate(request: RecordedRequest): Promise<Account | undefined> {
    const value = request.headers.authorization;
    const match = typeof value === 'string' ? /^Bearer\s+(\S+)$/i.exec(value) : null;
    if (!match?.[1]) return undefined;
    const token = match[1];
    let applicationId: unknown;
    try {
      applicationId = decodeJwt(token).application_id;
    } catch {
      return undefined;
    }
    const account = typeof applicationId === 'string' ? this.#accounts.get(applicationId) : undefined;
    if (!account) return undefined;
    try {
      await jwtVerify(token, account.publicKey, {
        algorithms: ['RS256'],
        requiredClaims: ['iat', 'exp', 'jti'],
      });
      return account;
    } catch {
      return undefined;
    }
  }

  #createCall(account: Account, request: RecordedRequest): SimResponse {
    const body = record(request.body);
    const to = Array.isArray(body.to) ? record(body.to[0]) : {};
    const from = record(body.from);
    const answerUrl = Array.isArray(body.answer_url) ? body.answer_url[0] : undefined;
    const eventUrl = Array.isArray(body.event_url) ? body.event_url[0] : undefined;
    const invalid = callRequestProblems(body, to, from, answerUrl);
    if (invalid.length > 0) return badRequest('Invalid parameters', invalid);
    const uuid = randomUUID();
    const conversationUuid = `CON-${randomUUID()}`;
    const call: SimulatedCall = {
      sid: uuid,
      from: plus(String(from.number)),
      to: plus(String(to.number)),
      outcome: this.callOutcome(plus(String(to.number))),
      request: body,
      hungUp: false,
    };
    this.calls.set(uuid, call);
    this.#owners.set(uuid, account.applicationId);
    this.background(() =>
      this.#runCall(call, {
        answerUrl: typeof answerUrl === 'string' ? answerUrl : undefined,
        eventUrl: typeof eventUrl === 'string' ? eventUrl : undefined,
        conversationUuid,
      }),
    );
    return {
      status: 201,
      body: { uuid, status: 'started', direction: 'outbound', conversation_uuid: conversationUuid },
    };
  }

  /** The call's life: started, ringing, then answered (answer URL fetched) and completed, or its failure. */
  async #runCall(
    call: SimulatedCall,
    urls: { answerUrl?: string; eventUrl?: string; conversationUuid: string },
  ): Promise<void> {
    const applicationId = this.#owners.get(call.sid);
    const base = {
      from: wire(call.from),
      to: wire(call.to),
      uuid: call.sid,
      conversation_uuid: urls.conversationUuid,
      direction: 'outbound',
    };
    const event = async (status: string, extra: Record<string, unknown> = {}) => {
      if (!urls.eventUrl) return;
      await this.#postSigned(
        urls.eventUrl,
        { ...base, status, ...extra, timestamp: new Date().toISOString() },
        applicationId,
      );
    };
    const outcome = call.outcome;
    await event('started');
    if (outcome.status === 'failed') {
      await event('failed');
      return;
    }
    await event('ringing');
    if (outcome.status !== 'completed') {
      await event(FINAL_EVENT[outcome.status]);
      return;
    }
    const startedAt = new Date();
    if (urls.answerUrl) {
      const answerRequest = {
        to: base.to,
        from: base.from,
        uuid: call.sid,
        conversation_uuid: urls.conversationUuid,
      };
      // Answer requests are POSTed (the adapter asks for answer_method POST): the body is signed.
      const answer = await this.#postSigned(urls.answerUrl, answerRequest, applicationId);
      if (answer) call.answer = answer;
    }
    const phoneCall = this.#phones.answer(call);
    await event('answered', { start_time: null, rate: null, network: null });
    const detection = carrierCDetection(call.request, outcome, phoneCall?.phone, event); // beside a phone's call
    if (detection && phoneCall) this.background(() => detection);
    else await detection;
    // A phone's call really lasts: answered until its stream ends, then its real duration.
    if (phoneCall) await phoneCall.done;
    const seconds = outcome.durationSeconds;
    await event(
      'completed',
      phoneCall
        ? this.#phones.ended(call, phoneCall)
        : completedFields(startedAt, new Date(startedAt.getTime() + seconds * 1000), seconds),
    );
  }

  #listCalls(): SimResponse {
    const calls = [...this.calls.values()].slice(-1).map((call) => ({
      uuid: call.sid,
      status: call.hungUp ? 'completed' : FINAL_EVENT[call.outcome.status],
      direction: 'outbound',
      from: { type: 'phone', number: wire(call.from) },
      to: { type: 'phone', number: wire(call.to) },
    }));
    return {
      status: 200,
      body: { count: this.calls.size, page_size: 1, record_index: 0, _embedded: { calls } },
    };
  }

  #modifyCall(uuid: string, request: RecordedRequest): SimResponse {
    const call = this.calls.get(uuid);
    if (!call) {
      return notFound(`Call ${uuid} does not exist`);
    }
    const body = record(request.body);
    switch (body.action) {
      case 'hangup':
        call.hungUp = true;
        this.#phones.end(uuid, 'hang-up');
        return { status: 204 };
      case 'transfer': {
        const target = transferTarget(record(body.destination));
        if (target === undefined)
          return badRequest('Invalid transfer destination', [
            {
              name: 'destination',
              reason: 'must be {type: "ncco", ncco: [...]} or {type: "ncco", url: [...]}',
            },
          ]);
        call.transferredTo = target;
        // The new NCCO replaces the websocket: the call leaves the platform for the target.
        this.#phones.end(uuid, 'transfer');
        return { status: 204 };
      }
      case 'mute':
      case 'unmute':
      case 'earmuff':
      case 'unearmuff':
        return { status: 204 };
      default:
        return badRequest('Invalid action', [{ name: 'action', reason: 'unknown action' }]);
    }
  }

  /** Plays key tones into a call: `digits` of 0-9, *, # and `p` (a pause). */
  #sendDigits(uuid: string, request: RecordedRequest): SimResponse {
    const call = this.calls.get(uuid);
    if (!call || call.hungUp) return notFound(`Call ${uuid} does not exist or has ended`);
    const digits = record(request.body).digits;
    const invalid = digitsProblems(digits);
    if (invalid.length > 0 || typeof digits !== 'string') return badRequest('Invalid parameters', invalid);
    this.digitsSent.set(uuid, [...(this.digitsSent.get(uuid) ?? []), digits]);
    this.#phones.calls.get(uuid)?.phone.hearCarrierDigits(digits);
    return { status: 200, body: { message: 'DTMF sent', uuid } };
  }

  #sendMessage(account: Account, request: RecordedRequest): SimResponse {
    const body = record(request.body);
    const invalid = messageRequestProblems(body);
    const channel = body.channel;
    const image = record(body.image);
    if (invalid.length > 0) return badRequest('Invalid parameters', invalid);
    const messageId = randomUUID();
    const to = plus(String(body.to));
    const outcome = this.messageOutcome(to);
    this.messages.push({
      id: messageId,
      from: plus(String(body.from)),
      to,
      body:
        typeof body.text === 'string' ? body.text : typeof image.caption === 'string' ? image.caption : '',
      mediaUrls: typeof image.url === 'string' ? [image.url] : [],
      outcome,
      at: Date.now(),
    });
    this.#owners.set(messageId, account.applicationId);
    const webhookUrl = typeof body.webhook_url === 'string' ? body.webhook_url : undefined;
    if (webhookUrl) {
      const status = (value: string, extra: Record<string, unknown> = {}) =>
        this.#postSigned(
          webhookUrl,
          {
            message_uuid: messageId,
            to: body.to,
            from: body.from,
            timestamp: new Date().toISOString(),
            status: value,
            channel,
            ...(typeof body.client_ref === 'string' ? { client_ref: body.client_ref } : {}),
            ...extra,
          },
          account.applicationId,
        );
      this.background(async () => {
        await status('submitted', { usage: { currency: 'EUR', price: '0.0333' } });
        const final = FINAL_MESSAGE_STATUS[outcome];
        await status(final, final === 'delivered' ? {} : { error: messageFailure(final) });
      });
    }
    return { status: 202, body: { message_uuid: messageId } };
  }

  /** A signed webhook: HS256 with the signature secret, `payload_hash` = SHA-256 hex of the body. */
  async webhookToken(payload: string, applicationId?: string): Promise<string> {
    const claims: Record<string, unknown> = { payload_hash: sha256Hex(payload) };
    if (applicationId) claims.application_id = applicationId;
    return new SignJWT(claims)
      .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
      .setIssuedAt()
      .setJti(randomUUID())
      .sign(new TextEncoder().encode(this.signatureSecret));
  }

  async #postSigned(url: string, payload: Record<string, unknown>, applicationId?: string) {
    const body = JSON.stringify(payload);
    const token = await this.webhookToken(body, applicationId);
    return this.post(url, body, { 'content-type': 'application/json', authorization: `Bearer ${token}` });
  }

  #defaultApplication(): string | undefined {
    return this.#accounts.keys().next().value;
  }
}
