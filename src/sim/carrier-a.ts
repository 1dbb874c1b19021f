/**
 * A local carrier_a: the parts of the REST API the adapter uses (calls, messages, account lookup,
 * with HTTP Basic auth and the carrier's error bodies), and the signed callbacks a real account
 * sends afterwards. A placed call fetches its instructions from the answer URL, then reports
 * initiated → ringing → in-progress → completed (or busy / no-answer / failed / canceled) to the
 * status callback; a message reports sent, then its delivery receipt. Every callback carries
 * `X-Twilio-Signature` made with the account's auth token.
 *
 * A number given a phone script (`setPhone`) is answered by a simulated phone instead: the call's
 * media stream really runs (carrier-a-phone.ts), the call stays in progress while it does, and
 * `completed` reports its real duration.
 */

import { smsSegments } from '../lib/sms-segments.js';
import { carrierASignature } from '../providers/carriers/carrier-a.js';
import { carrierAAnswer, carrierADetection } from './answering-machine.js';
import {
  callDurationSeconds,
  type PhoneCall,
  PhoneCalls,
  type PhoneScript,
  type PhoneSettings,
} from './carrier-a-phone.js';
import {
  CarrierSimulatorBase,
  type RecordedRequest,
  type Route,
  type SimResponse,
  type SimulatedCall,
} from './carrier-sim.js';

type Form = Record<string, string | string[]>;

const E164 = /^\+[1-9]\d{6,14}$/;

function field(form: Form, name: string): string | undefined {
  const value = form[name];
  return Array.isArray(value) ? value[0] : value;
}

function list(form: Form, name: string): string[] {
  const value = form[name];
  return value === undefined ? [] : Array.isArray(value) ? value : [value];
}

function error(status: number, code: number, message: string): SimResponse {
  return {
    status,
    body: { code, message, more_info: `https://www.twilio.com/docs/errors/${code}`, status },
  };
}

export class CarrierASimulator extends CarrierSimulatorBase {
  /** Accounts it accepts: account SID → auth token. */
  readonly accounts = new Map<string, string>();
  readonly #phones = new PhoneCalls();
  /** Posts accepted messages' status callbacks: a real account always does; a benchmark may not. */
  messageReceipts = true;

  /** The calls a simulated phone answered (or placed), by call SID, to look at afterwards. */
  get phoneCalls(): ReadonlyMap<string, PhoneCall> {
    return this.#phones.calls;
  }

  /**
   * Calls to `number` (`'*'`: every number without its own) are answered by a simulated phone that
   * runs `script` on the call's media stream.
   */
  setPhone(number: string, script: PhoneScript, settings: PhoneSettings = {}): void {
    this.#phones.set(number, script, settings);
  }

  override async stop(): Promise<void> {
    await this.#phones.stopAll();
    await super.stop();
  }

  addAccount(credentials: { account_sid: string; auth_token: string }): void {
    this.accounts.set(credentials.account_sid, credentials.auth_token);
  }

  protected unauthorized(): SimResponse {
    return error(401, 20003, 'Authenticate');
  }

  protected routes(): Route[] {
    const account = '/2010-04-01/Accounts/(?<sid>[^/.]+)';
    return [
      {
        method: 'GET',
        pattern: new RegExp(`^${account}\\.json$`),
        handle: (r, p) => this.#account(r, p.sid!),
      },
      {
        method: 'POST',
        pattern: new RegExp(`^${account}/Calls\\.json$`),
        handle: (r, p) => this.#createCall(r, p.sid!),
      },
      {
        method: 'GET',
        pattern: new RegExp(`^${account}/Calls\\.json$`),
        handle: (r, p) => this.#listCalls(r, p.sid!),
      },
      {
        method: 'GET',
        pattern: new RegExp(`^${account}/Calls/(?<call>[^/.]+)\\.json$`),
        handle: (r, p) => this.#fetchCall(r, p.sid!, p.call!),
      },
      {
        method: 'POST',
        pattern: new RegExp(`^${account}/Calls/(?<call>[^/.]+)\\.json$`),
        handle: (r, p) => this.#updateCall(r, p.sid!, p.call!),
      },
      {
        method: 'POST',
        pattern: new RegExp(`^${account}/Messages\\.json$`),
        handle: (r, p) => this.#createMessage(r, p.sid!),
      },
    ];
  }

  /**
   * Posts an inbound message to `webhookUrl` as the carrier does when someone texts `to`.
   * Answers what the platform answered.
   */
  async sendInboundMessage(options: {
    webhookUrl: string;
    accountSid: string;
    from: string;
    to: string;
    body: string;
    mediaUrls?: string[];
  }) {
    const media = options.mediaUrls ?? [];
    const params: Record<string, string> = {
      MessageSid: this.nextId('SM'),
      SmsSid: '',
      AccountSid: options.accountSid,
      From: options.from,
      To: options.to,
      Body: options.body,
      NumMedia: String(media.length),
      SmsStatus: 'received',
    };
    params.SmsSid = params.MessageSid!;
    media.forEach((url, i) => {
      params[`MediaUrl${i}`] = url;
    });
    return this.#signedPost(options.webhookUrl, options.accountSid, params);
  }

  /**
   * Rings our number as an inbound caller would: asks `voiceUrl` what to do and records the answer.
   * With `phone`, the caller is a simulated phone that runs the script on the stream the answer opens;
   * the call is in progress until it ends, then `completed` goes to `statusCallbackUrl` (when given).
   */
  async placeInboundCall(options: {
    voiceUrl: string;
    accountSid: string;
    from: string;
    to: string;
    phone?: PhoneScript;
    phoneSettings?: PhoneSettings;
    statusCallbackUrl?: string;
  }) {
    const sid = this.nextId('CA');
    const base = {
      CallSid: sid,
      AccountSid: options.accountSid,
      From: options.from,
      To: options.to,
      Direction: 'inbound',
    };
    const answer = await this.#signedPost(options.voiceUrl, options.accountSid, {
      ...base,
      CallStatus: 'ringing',
    });
    const call: SimulatedCall = {
      sid,
      from: options.from,
      to: options.to,
      answer,
      hungUp: false,
      outcome: { status: 'completed', durationSeconds: 0 },
      request: { Direction: 'inbound' },
    };
    this.calls.set(sid, call);
    const script = options.phone && { script: options.phone, settings: options.phoneSettings ?? {} };
    const phoneCall = script && this.#answerWithPhone(options.accountSid, call, script);
    if (phoneCall) {
      Object.assign(call, { status: 'in-progress', createdAt: phoneCall.answeredAt });
      this.background(async () => {
        await phoneCall.done;
        const durationSeconds = this.#ended(call, phoneCall);
        if (options.statusCallbackUrl)
          await this.#signedPost(options.statusCallbackUrl, options.accountSid, {
            ...base,
            CallStatus: 'completed',
            Timestamp: call.endedAt!.toUTCString(),
            CallDuration: String(durationSeconds),
          });
      });
    }
    return { callSid: sid, answer, phoneCall };
  }

  #authorized(request: RecordedRequest, sid: string): boolean {
    const header = request.headers.authorization ?? '';
    if (!header.startsWith('Basic ')) return false;
    const [user, ...rest] = Buffer.from(header.slice(6), 'base64').toString('utf8').split(':');
    const token = this.accounts.get(sid);
    return user === sid && token !== undefined && rest.join(':') === token;
  }

  #account(request: RecordedRequest, sid: string): SimResponse {
    if (!this.#authorized(request, sid)) return this.unauthorized();
    return {
      status: 200,
      body: { sid, friendly_name: `Simulated account ${sid}`, status: 'active', type: 'Full' },
    };
  }

  #createCall(request: RecordedRequest, sid: string): SimResponse {
    if (!this.#authorized(request, sid)) return this.unauthorized();
    const form = request.body as Form;
    const to = field(form, 'To');
    const from = field(form, 'From');
    const url = field(form, 'Url');
    if (!to) return error(400, 21201, "No 'To' number is specified");
    if (!from) return error(400, 21213, "No 'From' number is specified");
    if (!url && !field(form, 'Twiml')) return error(400, 21205, 'Url parameter is required');
    if (!E164.test(to)) return error(400, 21211, `Invalid 'To' Phone Number: ${to}`);
    const callSid = this.nextId('CA');
    const outcome = this.callOutcome(to);
    this.calls.set(callSid, {
      sid: callSid,
      from,
      to,
      outcome,
      request: { ...form },
      hungUp: false,
      status: 'queued',
      createdAt: new Date(),
    });
    this.background(() => this.#runCall(sid, callSid, form));
    return { status: 201, body: this.#callResource(sid, callSid, from, to, 'queued') };
  }

  #fetchCall(request: RecordedRequest, sid: string, callSid: string): SimResponse {
    if (!this.#authorized(request, sid)) return this.unauthorized();
    const call = this.calls.get(callSid);
    if (!call) return error(404, 20404, `The requested resource /Calls/${callSid}.json was not found`);
    return { status: 200, body: this.#callRecord(sid, call) };
  }

  /** The account's calls, filtered by `To`, `From` and `StartTime>` (a UTC date) as the carrier does. */
  #listCalls(request: RecordedRequest, sid: string): SimResponse {
    if (!this.#authorized(request, sid)) return this.unauthorized();
    const query = new URL(request.url, 'http://sim').searchParams;
    const to = query.get('To');
    const from = query.get('From');
    const after = query.get('StartTime>');
    const calls = [...this.calls.values()].filter(
      (call) =>
        call.request.Direction !== 'inbound' &&
        (!to || call.to === to) &&
        (!from || call.from === from) &&
        (!after || (call.createdAt ?? new Date(0)).toISOString().slice(0, 10) >= after),
    );
    return { status: 200, body: { calls: calls.map((call) => this.#callRecord(sid, call)), page: 0 } };
  }

  #callRecord(sid: string, call: SimulatedCall) {
    const outcome = call.outcome;
    const done = call.status === outcome.status;
    return {
      ...this.#callResource(sid, call.sid, call.from, call.to, call.status ?? 'queued'),
      duration: done ? String(outcome.status === 'completed' ? outcome.durationSeconds : 0) : null,
      answered_by:
        (done &&
          call.request.MachineDetection &&
          carrierAAnswer(outcome, this.#phones.calls.has(call.sid))) ||
        null,
      date_created: (call.createdAt ?? new Date()).toUTCString(),
      end_time: call.endedAt?.toUTCString() ?? null,
    };
  }

  #updateCall(request: RecordedRequest, sid: string, callSid: string): SimResponse {
    if (!this.#authorized(request, sid)) return this.unauthorized();
    const call = this.calls.get(callSid);
    if (!call) return error(404, 20404, `The requested resource /Calls/${callSid}.json was not found`);
    const form = request.body as Form;
    const twiml = field(form, 'Twiml');
    if (field(form, 'Status') === 'completed' || field(form, 'Status') === 'canceled') {
      call.hungUp = true;
      this.#phones.end(callSid, 'hang-up');
    } else if (twiml) {
      call.transferredTo = /<Dial>([^<]+)<\/Dial>/.exec(twiml)?.[1];
      // The new instructions replace the stream: the call leaves the platform for the target.
      this.#phones.end(callSid, 'transfer');
    } else return error(400, 21218, 'Invalid update: give Status or Twiml');
    return {
      status: 200,
      body: this.#callResource(sid, callSid, call.from, call.to, call.hungUp ? 'completed' : 'in-progress'),
    };
  }

  #createMessage(request: RecordedRequest, sid: string): SimResponse {
    if (!this.#authorized(request, sid)) return this.unauthorized();
    const form = request.body as Form;
    const to = field(form, 'To');
    const from = field(form, 'From') ?? field(form, 'MessagingServiceSid');
    const body = field(form, 'Body') ?? '';
    const mediaUrls = list(form, 'MediaUrl');
    if (!to) return error(400, 21604, "A 'To' phone number is required");
    if (!from) return error(400, 21603, "A 'From' phone number or MessagingServiceSid is required");
    if (!E164.test(to)) return error(400, 21211, `Invalid 'To' Phone Number: ${to}`);
    if (body === '' && mediaUrls.length === 0) return error(400, 21602, 'Message body is required');
    if (body.length > 1600)
      return error(400, 21617, 'The concatenated message body exceeds the 1600 character limit');
    const id = this.nextId(mediaUrls.length > 0 ? 'MM' : 'SM');
    const outcome = this.messageOutcome(to);
    this.messages.push({ id, from, to, body, mediaUrls, outcome, at: Date.now() });
    const callback = this.messageReceipts ? field(form, 'StatusCallback') : undefined;
    if (callback) {
      this.background(async () => {
        const base = { MessageSid: id, SmsSid: id, AccountSid: sid, From: from, To: to };
        await this.#signedPost(callback, sid, { ...base, MessageStatus: 'sent', SmsStatus: 'sent' });
        const code: Record<string, string> =
          outcome === 'undelivered'
            ? { ErrorCode: '30003' }
            : outcome === 'failed'
              ? { ErrorCode: '30008' }
              : {};
        await this.#signedPost(callback, sid, {
          ...base,
          MessageStatus: outcome,
          SmsStatus: outcome,
          ...code,
        });
      });
    }
    return {
      status: 201,
      body: {
        sid: id,
        account_sid: sid,
        from,
        to,
        body,
        status: 'queued',
        num_segments: String(smsSegments(body)),
        num_media: String(mediaUrls.length),
        direction: 'outbound-api',
      },
    };
  }

  /** What a real account does after accepting a call, in order. */
  async #runCall(sid: string, callSid: string, form: Form): Promise<void> {
    const call = this.calls.get(callSid)!;
    const callback = field(form, 'StatusCallback');
    const base = {
      CallSid: callSid,
      AccountSid: sid,
      From: call.from,
      To: call.to,
      Direction: 'outbound-api',
    };
    const final = ['completed', 'busy', 'no-answer', 'failed', 'canceled'];
    // The call happens at once, but its stamps say what a real one would: set up and answered the
    // outcome's duration before it ended.
    let answeredAt = new Date(
      Date.now() - (call.outcome.status === 'completed' ? call.outcome.durationSeconds * 1000 : 0),
    );
    const report = async (status: string, extra: Record<string, string> = {}) => {
      call.status = status;
      if (final.includes(status)) call.endedAt = new Date();
      const stamp = final.includes(status) ? new Date() : answeredAt;
      if (callback)
        await this.#signedPost(callback, sid, {
          ...base,
          CallStatus: status,
          Timestamp: stamp.toUTCString(),
          ...extra,
        });
    };
    await report('initiated');
    if (call.outcome.status === 'failed') return report('failed', { CallDuration: '0' });
    await report('ringing');
    if (call.outcome.status !== 'completed') return report(call.outcome.status, { CallDuration: '0' });
    const answerUrl = field(form, 'Url');
    if (answerUrl)
      call.answer = await this.#signedPost(answerUrl, sid, { ...base, CallStatus: 'in-progress' });
    const phoneCall = this.#answerWithPhone(sid, call);
    if (phoneCall) answeredAt = phoneCall.answeredAt;
    await report('in-progress');
    // Asynchronous answering-machine detection (answering-machine.ts) posts its verdict beside the call.
    const amd = (url: string, AnsweredBy: string) =>
      this.#signedPost(url, sid, { CallSid: callSid, AccountSid: sid, AnsweredBy });
    this.background(() => carrierADetection(form, call.outcome, phoneCall?.phone, amd));
    if (phoneCall) {
      // A phone's call really lasts: in progress until its media ends, then its real duration.
      await phoneCall.done;
      this.#ended(call, phoneCall);
    }
    // Answering-machine detection reports who answered when it was asked for (and could tell).
    const who = field(form, 'MachineDetection') && carrierAAnswer(call.outcome, phoneCall !== undefined);
    const answeredBy: Record<string, string> = who ? { AnsweredBy: who } : {};
    await report('completed', {
      CallDuration: String(call.outcome.durationSeconds),
      Duration: String(Math.ceil(call.outcome.durationSeconds / 60)),
      ...answeredBy,
    });
  }

  /** The phone on an answered call, when its number has a script and the answer opens a stream. */
  #answerWithPhone(sid: string, call: SimulatedCall, phone = this.#phones.scriptFor(call.to)) {
    if (!phone || !call.answer || call.hungUp) return undefined;
    return this.#phones.start({
      callSid: call.sid,
      accountSid: sid,
      authToken: this.accounts.get(sid) ?? '',
      answer: call.answer.body,
      script: phone.script,
      settings: phone.settings,
    });
  }

  /** Records a phone's call as completed with its real duration; answers the duration. */
  #ended(call: SimulatedCall, phoneCall: PhoneCall): number {
    const durationSeconds = callDurationSeconds(phoneCall);
    Object.assign(call, { status: 'completed', endedAt: phoneCall.endedAt ?? new Date() });
    call.outcome = { ...call.outcome, status: 'completed', durationSeconds };
    return durationSeconds;
  }

  #signedPost(url: string, accountSid: string, params: Record<string, string>) {
    const token = this.accounts.get(accountSid) ?? '';
    return this.post(url, new URLSearchParams(params).toString(), {
      'content-type': 'application/x-www-form-urlencoded',
      'x-twilio-signature': carrierASignature(token, url, params),
    });
  }

  #callResource(sid: string, callSid: string, from: string, to: string, status: string) {
    return { sid: callSid, account_sid: sid, from, to, status, direction: 'outbound-api' };
  }
}
