/**
 * A local stand-in for carrier_b's call-control v2 API: dial, hang up, transfer, send a message, read a
 * call-control application; and the Ed25519-signed JSON event webhooks the carrier posts afterwards
 * (call.initiated → call.answered → call.hangup; message.sent → message.finalized; message.received).
 *
 * Time is compressed: a call's whole life is posted right after the dial is answered, with start and
 * end times back-dated so that they span the outcome's duration. Set `holdAnsweredCalls` to keep
 * answered calls connected until they are hung up, transferred away or ended with `endCall()`.
 *
 * A number given a phone script (`setPhone`) is answered by a simulated phone instead, when the dial
 * names a `stream_url`: the call's media stream really runs (carrier-b-phone.ts) and the call stays
 * connected until it ends. `placeInboundCall` rings one of our numbers (call.initiated, incoming);
 * the platform answers it with the `answer` command, whose stream a phone connects to likewise.
 */
import { randomUUID } from 'node:crypto';
import { detectedAnswer, detectMachine } from './answering-machine.js';
import type { PhoneCall, PhoneScript } from './carrier-a-phone.js';
import { CarrierBSimulatorBase } from './carrier-b-messaging.js';
import { type CarrierBPhoneSettings, CarrierBPhones, streamRequestOf } from './carrier-b-phone.js';
import {
  asRecord,
  E164,
  errorResponse,
  HANGUP,
  iso,
  missing,
  notFound,
  RING_SECONDS,
  text,
} from './carrier-b-wire.js';
import type { CallOutcome, RecordedRequest, Route, SimResponse, SimulatedCall } from './carrier-sim.js';

export type { CarrierBAccount } from './carrier-b-messaging.js';

/** A phone that answers a call: its script and settings. */
interface PhoneAnswer {
  script: PhoneScript;
  settings: CarrierBPhoneSettings;
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
  /** The phone that answers (or placed) the call, when its number has one. */
  phone?: PhoneAnswer;
}

export class CarrierBSimulator extends CarrierBSimulatorBase {
  /** Keep answered calls connected until hangup/transfer/endCall() instead of ending them at once. */
  holdAnsweredCalls = false;
  readonly #live = new Map<string, LiveCall>();
  readonly #phones = new CarrierBPhones();
  /** DTMF the platform played into calls (send_dtmf), in order. */
  readonly dtmfSent: Array<{ callControlId: string; digits: string }> = [];

  /** The calls a simulated phone answered (or placed), by call_control_id. */
  get phoneCalls(): ReadonlyMap<string, PhoneCall> {
    return this.#phones.calls;
  }

  /**
   * Calls to `number` (`'*'`: every number without its own) are answered by a simulated phone that
   * runs `script` on the call's media stream.
   */
  setPhone(number: string, script: PhoneScript, settings: CarrierBPhoneSettings = {}): void {
    this.#phones.set(number, script, settings);
  }

  override async stop(): Promise<void> {
    await this.#phones.stopAll();
    await super.stop();
  }

  /** Ends a held, connected call from the callee's side (call.hangup, normal_clearing). */
  endCall(callControlId: string): boolean {
    const live = this.#live.get(callControlId);
    if (!live || live.phase === 'ended') return false;
    this.#finish(live, live.phase === 'answered' ? HANGUP.completed : HANGUP.canceled);
    return true;
  }

  protected override routes(): Route[] {
    return [
      ...super.routes(),
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
      {
        method: 'POST',
        pattern: /^\/v2\/calls\/(?<id>[^/]+)\/actions\/answer$/,
        handle: (request, params) => this.#answer(request, decodeURIComponent(params.id ?? '')),
      },
      {
        method: 'POST',
        pattern: /^\/v2\/calls\/(?<id>[^/]+)\/actions\/send_dtmf$/,
        handle: (request, params) => this.#sendDtmf(request, decodeURIComponent(params.id ?? '')),
      },
    ];
  }

  #dial(request: RecordedRequest): SimResponse {
    const account = this.account(request);
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
    const script = outcome.status === 'completed' && streamRequestOf(body) && this.#phones.scriptFor(to!);
    const phone = script || undefined;
    // A phone's call really lasts: connected until its stream ends.
    const held = outcome.status === 'completed' && (this.holdAnsweredCalls || phone !== undefined);
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
      ...(phone ? { phone } : {}),
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
      this.#answerWithPhone(live, body);
      if (body.answering_machine_detection === 'detect_beep') this.#detectMachine(live, outcome);
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
    this.#phones.end(callControlId, 'hang-up');
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
    // The call is bridged elsewhere: its stream to the platform ends (the call ends with the phone's).
    this.#phones.end(callControlId, 'transfer');
    return { status: 200, body: { data: { result: 'ok' } } };
  }

  /**
   * Rings `to` (one of our numbers) from `from`, as the carrier does for an inbound call: posts
   * call.initiated (incoming) to the application's webhook and waits for it to be answered. With
   * `phone`, the caller is a simulated phone on the stream the platform's answer command asks for.
   */
  async placeInboundCall(options: {
    apiKey: string;
    webhookUrl?: string;
    from: string;
    to: string;
    phone?: PhoneScript;
    phoneSettings?: CarrierBPhoneSettings;
  }): Promise<{ callControlId: string; status: number | undefined; phoneCall: PhoneCall | undefined }> {
    const account = this.accounts.get(options.apiKey);
    if (!account) throw new Error('no such account');
    const callControlId = `v3:${this.nextId('')}`;
    const now = Date.now();
    this.calls.set(callControlId, {
      sid: callControlId,
      from: options.from,
      to: options.to,
      outcome: { status: 'completed', durationSeconds: 0 },
      request: { direction: 'incoming' },
      hungUp: false,
    });
    const live: LiveCall = {
      apiKey: account.api_key,
      webhookUrl: options.webhookUrl ?? account.webhook_event_url,
      base: {
        call_control_id: callControlId,
        call_leg_id: randomUUID(),
        call_session_id: randomUUID(),
        connection_id: account.connection_id,
        client_state: null,
        from: options.from,
        to: options.to,
      },
      phase: 'ringing',
      startedAt: now,
      chain: Promise.resolve(),
      ...(options.phone ? { phone: { script: options.phone, settings: options.phoneSettings ?? {} } } : {}),
    };
    this.#live.set(callControlId, live);
    const url = live.webhookUrl;
    const initiated = url
      ? await this.deliver(url, 'call.initiated', new Date(now), {
          ...live.base,
          direction: 'incoming',
          state: 'parked',
          start_time: iso(now),
        })
      : undefined;
    // The answer command came while the event was handled: its events and the phone follow it.
    await live.chain;
    return { callControlId, status: initiated?.status, phoneCall: this.#phones.calls.get(callControlId) };
  }

  #answer(request: RecordedRequest, callControlId: string): SimResponse {
    const found = this.#command(request, callControlId);
    if ('status' in found) return found;
    const { live } = found;
    if (
      live.phase !== 'ringing' ||
      live.base.client_state !== null ||
      found.call.request.direction !== 'incoming'
    )
      return errorResponse(422, '90015', 'Call already answered', 'This call cannot be answered.');
    const body = asRecord(request.body);
    if (typeof body.client_state === 'string') live.base.client_state = body.client_state;
    found.call.request = { ...found.call.request, ...body };
    live.phase = 'answered';
    const at = Date.now();
    this.#queue(live, 'call.answered', at, { state: 'answered', start_time: iso(live.startedAt) });
    this.#answerWithPhone(live, body);
    return { status: 200, body: { data: { result: 'ok' } } };
  }

  #sendDtmf(request: RecordedRequest, callControlId: string): SimResponse {
    const found = this.#command(request, callControlId);
    if ('status' in found) return found;
    const digits = text(asRecord(request.body).digits);
    if (!digits) return missing('digits');
    // `w` and `W` pause 0.5 s and 1 s between keys.
    if (!/^[0-9*#A-Da-dwW]+$/.test(digits))
      return errorResponse(422, '90013', 'Invalid digits', 'Digits may be 0-9, *, #, A-D, w, W.', '/digits');
    this.dtmfSent.push({ callControlId, digits });
    this.#phones.calls.get(callControlId)?.phone.hearCarrierDigits(digits);
    return { status: 200, body: { data: { result: 'ok' } } };
  }

  /**
   * Connects the call's phone, if it has one, to the stream `command` asked for, once the events
   * queued so far are posted; the call ends (call.hangup) when the phone's call does.
   */
  #answerWithPhone(live: LiveCall, command: Record<string, unknown>): void {
    const request = streamRequestOf(command);
    const phone = live.phone;
    if (!request || !phone) return;
    const base = live.base as Record<string, string | null>;
    const account = this.accounts.get(live.apiKey);
    live.chain = live.chain.then(() => {
      if (live.phase !== 'answered') return;
      const call = this.#phones.stream({
        callControlId: base.call_control_id!,
        userId: account?.user_id ?? `user-${account?.connection_id ?? 'unknown'}`,
        from: base.from ?? '',
        to: base.to ?? '',
        clientState: base.client_state ?? null,
        request,
        script: phone.script,
        settings: phone.settings,
      });
      this.background(async () => {
        await call.done;
        if (live.phase !== 'ended') this.#finish(live, HANGUP.completed);
      });
    });
  }

  /**
   * `detect_beep` (answering-machine.ts): call.machine.detection.ended with who answered, then on a
   * machine call.machine.greeting.ended once its beep is heard — at once for a call without a phone.
   */
  #detectMachine(live: LiveCall, outcome: CallOutcome): void {
    const report = async (verdict: { answeredBy: string; greetingEnded?: string }) => {
      if (live.phase === 'ended') return;
      const [event, result] = verdict.greetingEnded
        ? ['call.machine.greeting.ended', 'beep_detected']
        : ['call.machine.detection.ended', verdict.answeredBy];
      this.#queue(live, event, Date.now(), { result });
    };
    const callControlId = String(live.base.call_control_id);
    const who = detectedAnswer(outcome, false);
    if (!live.phone && who) {
      void report({ answeredBy: who });
      if (who === 'machine') void report({ answeredBy: who, greetingEnded: 'beep' });
    } else if (live.phone)
      this.background(async () => {
        await live.chain;
        const phone = this.#phones.calls.get(callControlId)?.phone;
        await detectMachine(outcome, phone, report, { early: true, greeting: ['beep'] });
      });
  }

  /** The live call a command is for, or the carrier's refusal. */
  #command(
    request: RecordedRequest,
    callControlId: string,
  ): SimResponse | { live: LiveCall; call: SimulatedCall } {
    const account = this.account(request);
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
    const next = live.chain.then(() => this.deliver(url, eventType, new Date(at), payload));
    live.chain = next.then(
      () => undefined,
      () => undefined,
    );
    this.background(() => next);
  }
}
