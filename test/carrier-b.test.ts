/**
 * carrier_b adapter against its simulator, both real HTTP on loopback; a small receiver stands in for
 * the platform's webhook endpoint and keeps every callback exactly as it arrived.
 */
import { generateKeyPairSync } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  CARRIER_B_SIGNATURE_TOLERANCE_SECONDS,
  CarrierBAdapter,
  decodeClientState,
  encodeClientState,
} from '../src/providers/carriers/carrier-b.js';
import type { CarrierEvent, IncomingWebhook, PlaceCallRequest } from '../src/providers/carriers/types.js';
import { ProviderError } from '../src/providers/errors.js';
import { CarrierBSimulator } from '../src/sim/carrier-b.js';
import type { CallOutcome, MessageOutcome } from '../src/sim/carrier-sim.js';

const ACCOUNT = {
  api_key: 'KEY_test_123',
  connection_id: '1293384261075731499',
  application_name: 'switchboard',
};

const sim = new CarrierBSimulator();
let adapter: CarrierBAdapter;
let credentials: Record<string, string>;
let receiver: Server;
let receiverUrl: string;
const received: IncomingWebhook[] = [];

beforeAll(async () => {
  sim.addAccount(ACCOUNT);
  adapter = new CarrierBAdapter({ baseUrl: await sim.start() });
  credentials = { ...ACCOUNT, public_key: sim.publicKey };
  receiver = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    received.push({
      url: `${receiverUrl}${req.url ?? '/'}`,
      method: req.method ?? 'POST',
      headers: req.headers,
      rawBody: Buffer.concat(chunks).toString('utf8'),
    });
    res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  const address = receiver.address();
  receiverUrl = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
});

afterEach(async () => {
  await sim.settle();
  sim.holdAnsweredCalls = false;
});

afterAll(async () => {
  await sim.stop();
  await new Promise<void>((resolve) => receiver.close(() => resolve()));
});

let counter = 0;
/** A receiver path of its own for one test, and the webhooks that reached it (after settle). */
function hookPath(): { url: string; hooks: () => Promise<IncomingWebhook[]> } {
  counter += 1;
  const url = `${receiverUrl}/hooks/${counter}`;
  return {
    url,
    hooks: async () => {
      await sim.settle();
      return received.filter((hook) => hook.url === url);
    },
  };
}

function callRequest(overrides: Partial<PlaceCallRequest> = {}): PlaceCallRequest {
  return {
    from: '+15550001000',
    to: '+15550002000',
    callId: 42,
    answerUrl: 'https://platform.example/carrier_b/answer/42',
    statusCallbackUrl: `${receiverUrl}/unused`,
    stream: { url: 'wss://platform.example/media/42', token: 'abc' },
    timeoutSeconds: 25,
    ...overrides,
  };
}

function eventType(hook: IncomingWebhook): string {
  return (JSON.parse(hook.rawBody) as { data: { event_type: string } }).data.event_type;
}

function lastRequest() {
  const request = sim.requests.at(-1);
  if (!request) throw new Error('the simulator saw no request');
  return request;
}

async function providerError(promise: Promise<unknown>): Promise<ProviderError> {
  const error = await promise.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(ProviderError);
  return error as ProviderError;
}

describe('carrier_b adapter: requests', () => {
  it('placeCall dials with the call-control wire format and returns the call_control_id', async () => {
    const { url } = hookPath();
    const placed = await adapter.placeCall(credentials, callRequest({ statusCallbackUrl: url }));

    const request = lastRequest();
    expect(request.method).toBe('POST');
    expect(request.path).toBe('/v2/calls');
    expect(request.headers.authorization).toBe(`Bearer ${ACCOUNT.api_key}`);
    expect(request.headers['content-type']).toContain('application/json');
    expect(request.body).toEqual({
      connection_id: ACCOUNT.connection_id,
      to: '+15550002000',
      from: '+15550001000',
      webhook_url: url,
      webhook_url_method: 'POST',
      // The token travels as the stream's auth token (an upgrade header), never in the URL.
      stream_url: 'wss://platform.example/media/42',
      stream_track: 'inbound_track',
      stream_codec: 'PCMU',
      stream_bidirectional_mode: 'rtp',
      stream_bidirectional_codec: 'PCMU',
      stream_auth_token: 'abc',
      timeout_secs: 25,
      client_state: encodeClientState(42),
    });
    const clientState = (request.body as { client_state: string }).client_state;
    expect(JSON.parse(Buffer.from(clientState, 'base64').toString('utf8'))).toEqual({ call_id: 42 });
    expect(placed.status).toBe('queued');
    expect(placed.callSid).toMatch(/^v3:/);
    expect(sim.calls.get(placed.callSid)?.to).toBe('+15550002000');
  });

  it('placeCall leaves timeout_secs to the carrier when no time-out is given', async () => {
    await adapter.placeCall(
      credentials,
      callRequest({ timeoutSeconds: undefined, statusCallbackUrl: hookPath().url }),
    );
    expect(lastRequest().body).not.toHaveProperty('timeout_secs');
  });

  it('hangUp posts the hangup action for a live call, which then reports its end', async () => {
    sim.holdAnsweredCalls = true;
    const { url, hooks } = hookPath();
    const placed = await adapter.placeCall(credentials, callRequest({ statusCallbackUrl: url }));
    expect((await hooks()).map(eventType)).toEqual(['call.initiated', 'call.answered']);

    await adapter.hangUp(credentials, placed.callSid);

    const request = lastRequest();
    expect(request.path).toBe(`/v2/calls/${encodeURIComponent(placed.callSid)}/actions/hangup`);
    expect(request.headers.authorization).toBe(`Bearer ${ACCOUNT.api_key}`);
    expect(sim.calls.get(placed.callSid)?.hungUp).toBe(true);
    const all = await hooks();
    expect(all.map(eventType)).toEqual(['call.initiated', 'call.answered', 'call.hangup']);
    const hangup = all[2]!;
    expect(adapter.verifyWebhook(credentials, hangup)).toBe(true);
    expect(adapter.parseWebhook(hangup)).toEqual([
      expect.objectContaining({
        kind: 'call_status',
        callSid: placed.callSid,
        status: 'completed',
        callId: 42,
      }),
    ]);
  });

  it('hangUp of a call that has ended is refused for good (422), of an unknown call too (404)', async () => {
    const { url } = hookPath();
    const placed = await adapter.placeCall(credentials, callRequest({ statusCallbackUrl: url }));
    await sim.settle();

    const ended = await providerError(adapter.hangUp(credentials, placed.callSid));
    expect(ended.retryable).toBe(false);
    expect(ended.status).toBe(422);
    expect(ended.options.code).toBe('90018');

    const unknown = await providerError(adapter.hangUp(credentials, 'v3:does-not-exist'));
    expect(unknown.retryable).toBe(false);
    expect(unknown.status).toBe(404);
  });

  it('transfer posts the transfer action with the new destination', async () => {
    sim.holdAnsweredCalls = true;
    const placed = await adapter.placeCall(credentials, callRequest({ statusCallbackUrl: hookPath().url }));

    await adapter.transfer(credentials, placed.callSid, '+15550009999');

    const request = lastRequest();
    expect(request.path).toBe(`/v2/calls/${encodeURIComponent(placed.callSid)}/actions/transfer`);
    expect(request.body).toEqual({ to: '+15550009999' });
    expect(sim.calls.get(placed.callSid)?.transferredTo).toBe('+15550009999');

    const unknown = await providerError(adapter.transfer(credentials, 'v3:nope', '+15550009999'));
    expect(unknown.status).toBe(404);
    expect(unknown.retryable).toBe(false);
    expect(sim.endCall(placed.callSid)).toBe(true);
  });

  it('sendMessage posts /v2/messages and returns the id, status and parts', async () => {
    const { url } = hookPath();
    const sent = await adapter.sendMessage(credentials, {
      from: '+15550001000',
      to: '+15550003000',
      body: 'x'.repeat(200),
      mediaUrls: [],
      statusCallbackUrl: url,
    });

    const request = lastRequest();
    expect(request.path).toBe('/v2/messages');
    expect(request.headers.authorization).toBe(`Bearer ${ACCOUNT.api_key}`);
    expect(request.body).toEqual({
      from: '+15550001000',
      to: '+15550003000',
      text: 'x'.repeat(200),
      webhook_url: url,
    });
    const message = sim.messages.at(-1);
    expect(sent).toEqual({ messageId: message?.id, status: 'queued', segments: 2 });
  });

  it('sendMessage sends media_urls when there are any', async () => {
    const sent = await adapter.sendMessage(credentials, {
      from: '+15550001000',
      to: '+15550003000',
      body: 'see attached',
      mediaUrls: ['https://files.example/a.png'],
      statusCallbackUrl: hookPath().url,
    });
    expect(lastRequest().body).toMatchObject({
      media_urls: ['https://files.example/a.png'],
      text: 'see attached',
    });
    expect(sim.messages.at(-1)?.mediaUrls).toEqual(['https://files.example/a.png']);
    expect(sent.segments).toBe(1);
  });

  it('validateCredentials reads the call-control application with the key', async () => {
    const check = await adapter.validateCredentials(credentials);
    expect(check).toEqual({ valid: true, detail: expect.any(String), account: 'switchboard' });
    const request = lastRequest();
    expect(request.method).toBe('GET');
    expect(request.path).toBe(`/v2/call_control_applications/${ACCOUNT.connection_id}`);
    expect(request.headers.authorization).toBe(`Bearer ${ACCOUNT.api_key}`);
  });

  it('validateCredentials says invalid for a refused key or an unknown connection, without throwing', async () => {
    const badKey = await adapter.validateCredentials({ ...credentials, api_key: 'KEY_wrong' });
    expect(badKey.valid).toBe(false);
    expect(badKey.detail).toMatch(/refused/);

    const badConnection = await adapter.validateCredentials({ ...credentials, connection_id: '999' });
    expect(badConnection.valid).toBe(false);
    expect(badConnection.detail).toMatch(/999/);

    const incomplete = await adapter.validateCredentials({ api_key: ACCOUNT.api_key });
    expect(incomplete.valid).toBe(false);
  });
});

describe('carrier_b adapter: answering an inbound call, DTMF', () => {
  it('answerCall answers a ringing inbound call with its stream, and the call events then echo our call id', async () => {
    const { url, hooks } = hookPath();
    const rang = await sim.placeInboundCall({
      apiKey: ACCOUNT.api_key,
      webhookUrl: url,
      from: '+15550003000',
      to: '+15550001000',
    });
    await adapter.answerCall(credentials, {
      callSid: rang.callControlId,
      callId: 77,
      stream: { url: 'wss://platform.example/media-stream/77', token: 'tok-77' },
    });
    const request = lastRequest();
    expect(request.path).toBe(`/v2/calls/${encodeURIComponent(rang.callControlId)}/actions/answer`);
    expect(request.body).toEqual({
      stream_url: 'wss://platform.example/media-stream/77',
      stream_track: 'inbound_track',
      stream_codec: 'PCMU',
      stream_bidirectional_mode: 'rtp',
      stream_bidirectional_codec: 'PCMU',
      stream_auth_token: 'tok-77',
      client_state: encodeClientState(77),
    });
    const events = (await hooks()).map((hook) => adapter.parseWebhook(hook));
    expect(events).toEqual([
      [{ kind: 'inbound_call', callSid: rang.callControlId, from: '+15550003000', to: '+15550001000' }],
      [
        {
          kind: 'call_status',
          callSid: rang.callControlId,
          status: 'in-progress',
          callId: 77,
          at: expect.any(Date),
        },
      ],
    ]);
    // A second answer is the carrier's refusal, and not retryable.
    const again = await providerError(
      adapter.answerCall(credentials, {
        callSid: rang.callControlId,
        callId: 77,
        stream: { url: 'wss://platform.example/media-stream/77', token: 'tok-77' },
      }),
    );
    expect(again.status).toBe(422);
    expect(again.retryable).toBe(false);
    sim.endCall(rang.callControlId);
  });

  it('sendDtmf plays digits into a live call, and refuses what is not a digit before asking', async () => {
    sim.holdAnsweredCalls = true;
    const placed = await adapter.placeCall(credentials, callRequest({ statusCallbackUrl: hookPath().url }));
    await adapter.sendDtmf(credentials, placed.callSid, '12w#*');
    expect(lastRequest().path).toBe(`/v2/calls/${encodeURIComponent(placed.callSid)}/actions/send_dtmf`);
    expect(lastRequest().body).toEqual({ digits: '12w#*' });
    expect(sim.dtmfSent).toContainEqual({ callControlId: placed.callSid, digits: '12w#*' });
    const requests = sim.requests.length;
    const refused = await providerError(adapter.sendDtmf(credentials, placed.callSid, '1x'));
    expect(refused.retryable).toBe(false);
    expect(sim.requests).toHaveLength(requests);
    sim.endCall(placed.callSid);
  });
});

describe('carrier_b adapter: failures', () => {
  it('a refused api_key is a permanent ProviderError with status 401', async () => {
    const error = await providerError(
      adapter.placeCall(
        { ...credentials, api_key: 'KEY_wrong' },
        callRequest({ statusCallbackUrl: hookPath().url }),
      ),
    );
    expect(error.retryable).toBe(false);
    expect(error.status).toBe(401);
    expect(error.options.code).toBe('10009');
    expect(error.options.provider).toBe('carrier_b');
  });

  it('a 503 from the carrier is retryable', async () => {
    sim.failNext(1, 503);
    const error = await providerError(
      adapter.placeCall(credentials, callRequest({ statusCallbackUrl: hookPath().url })),
    );
    expect(error.retryable).toBe(true);
    expect(error.status).toBe(503);
  });

  it('a 422 from the carrier is permanent', async () => {
    sim.failNext(1, 422, { errors: [{ code: '10015', title: 'Bad Request', detail: 'simulated' }] });
    const error = await providerError(
      adapter.sendMessage(credentials, {
        from: '+15550001000',
        to: '+15550003000',
        body: 'hi',
        mediaUrls: [],
        statusCallbackUrl: hookPath().url,
      }),
    );
    expect(error.retryable).toBe(false);
    expect(error.status).toBe(422);
    expect(error.options.code).toBe('10015');
  });

  it('validateCredentials throws (retryable) when the carrier fails rather than refuses', async () => {
    sim.failNext(1, 503);
    const error = await providerError(adapter.validateCredentials(credentials));
    expect(error.retryable).toBe(true);
  });

  it('a carrier that cannot be reached is a retryable ProviderError, for calls and for credential checks', async () => {
    const stopped = new CarrierBSimulator();
    const url = await stopped.start();
    await stopped.stop();
    const offline = new CarrierBAdapter({ baseUrl: url });

    const dial = await providerError(offline.placeCall(credentials, callRequest()));
    expect(dial.retryable).toBe(true);
    expect(dial.status).toBeUndefined();
    const check = await providerError(offline.validateCredentials(credentials));
    expect(check.retryable).toBe(true);
  });

  it('missing credentials are refused before any request', async () => {
    const before = sim.requests.length;
    const error = await providerError(adapter.placeCall({ api_key: ACCOUNT.api_key }, callRequest()));
    expect(error.retryable).toBe(false);
    expect(sim.requests.length).toBe(before);
  });
});

describe('carrier_b webhooks: calls', () => {
  it('a completed call posts initiated, answered and hangup, all signed and parsed in order', async () => {
    sim.setCallOutcome('+15550004000', { status: 'completed', durationSeconds: 45 });
    const { url, hooks } = hookPath();
    const placed = await adapter.placeCall(
      credentials,
      callRequest({ to: '+15550004000', statusCallbackUrl: url }),
    );

    const all = await hooks();
    expect(all.map(eventType)).toEqual(['call.initiated', 'call.answered', 'call.hangup']);
    for (const hook of all) {
      expect(hook.headers['telnyx-signature-ed25519']).toEqual(expect.any(String));
      expect(hook.headers['telnyx-timestamp']).toMatch(/^\d+$/);
      expect(adapter.verifyWebhook(credentials, hook)).toBe(true);
      expect(adapter.identifyWebhook(hook)).toEqual({
        accountId: ACCOUNT.connection_id,
        callSid: placed.callSid,
        ourNumber: '+15550001000',
      });
    }
    const events = all.flatMap((hook) => adapter.parseWebhook(hook));
    expect(events).toEqual([
      { kind: 'call_status', callSid: placed.callSid, status: 'ringing', callId: 42, at: expect.any(Date) },
      {
        kind: 'call_status',
        callSid: placed.callSid,
        status: 'in-progress',
        callId: 42,
        at: expect.any(Date),
      },
      {
        kind: 'call_status',
        callSid: placed.callSid,
        status: 'completed',
        callId: 42,
        durationSeconds: 45,
        at: expect.any(Date),
      },
    ]);
  });

  const unanswered: Array<[CallOutcome['status'], string]> = [
    ['busy', 'user_busy'],
    ['no-answer', 'timeout'],
    ['failed', 'call_rejected'],
    ['canceled', 'originator_cancel'],
  ];
  it.each(unanswered)('a %s call posts initiated then a hangup with cause %s', async (status, cause) => {
    const to = `+1555000${5000 + unanswered.findIndex(([s]) => s === status)}`;
    sim.setCallOutcome(to, { status } as CallOutcome);
    const { url, hooks } = hookPath();
    const placed = await adapter.placeCall(
      credentials,
      callRequest({ to, statusCallbackUrl: url, callId: 7 }),
    );

    const all = await hooks();
    expect(all.map(eventType)).toEqual(['call.initiated', 'call.hangup']);
    const hangup = all[1]!;
    expect(adapter.verifyWebhook(credentials, hangup)).toBe(true);
    expect(JSON.parse(hangup.rawBody).data.payload.hangup_cause).toBe(cause);
    expect(adapter.parseWebhook(hangup)).toEqual([
      {
        kind: 'call_status',
        callSid: placed.callSid,
        status,
        callId: 7,
        durationSeconds: 0,
        at: expect.any(Date),
      },
    ]);
  });

  it('dials with detect_beep answering-machine detection; a machine posts its verdict, then its greeting end', async () => {
    sim.setCallOutcome('+15550004100', { status: 'completed', durationSeconds: 30, answeredBy: 'machine' });
    sim.setCallOutcome('+15550004101', { status: 'completed', durationSeconds: 30, answeredBy: 'human' });
    const machine = hookPath();
    const placed = await adapter.placeCall(
      credentials,
      callRequest({ to: '+15550004100', statusCallbackUrl: machine.url, detectMachine: true, callId: 8 }),
    );
    expect(lastRequest().body).toMatchObject({ answering_machine_detection: 'detect_beep' });
    const all = await machine.hooks();
    expect(all.map(eventType)).toEqual([
      'call.initiated',
      'call.answered',
      'call.machine.detection.ended',
      'call.machine.greeting.ended',
      'call.hangup',
    ]);
    for (const hook of all) expect(adapter.verifyWebhook(credentials, hook)).toBe(true);
    expect(adapter.identifyWebhook(all[2]!)).toMatchObject({ callSid: placed.callSid });
    expect(all.slice(2, 4).flatMap((hook) => adapter.parseWebhook(hook))).toEqual([
      { kind: 'machine_detection', callSid: placed.callSid, callId: 8, answeredBy: 'machine' },
      {
        kind: 'machine_detection',
        callSid: placed.callSid,
        callId: 8,
        answeredBy: 'machine',
        greetingEnded: 'beep',
      },
    ]);

    const person = hookPath();
    const human = await adapter.placeCall(
      credentials,
      callRequest({ to: '+15550004101', statusCallbackUrl: person.url, detectMachine: true, callId: 9 }),
    );
    const heard = (await person.hooks()).filter((hook) => eventType(hook).startsWith('call.machine.'));
    expect(heard.flatMap((hook) => adapter.parseWebhook(hook))).toEqual([
      { kind: 'machine_detection', callSid: human.callSid, callId: 9, answeredBy: 'human' },
    ]);
    // Without detection the dial asks for none.
    await adapter.placeCall(
      credentials,
      callRequest({ to: '+15550004101', statusCallbackUrl: hookPath().url }),
    );
    expect(lastRequest().body).not.toHaveProperty('answering_machine_detection');
  });

  it.each([
    ['call.machine.detection.ended', 'human', { answeredBy: 'human' }],
    ['call.machine.detection.ended', 'machine', { answeredBy: 'machine' }],
    ['call.machine.detection.ended', 'not_sure', undefined],
    ['call.machine.greeting.ended', 'beep_detected', { answeredBy: 'machine', greetingEnded: 'beep' }],
    ['call.machine.greeting.ended', 'ended', { answeredBy: 'machine', greetingEnded: 'other' }],
    ['call.machine.greeting.ended', 'not_sure', { answeredBy: 'machine', greetingEnded: 'other' }],
  ] as const)('reads %s with result %s', (eventType, result, expected) => {
    const hook = {
      url: 'https://platform.example/webhooks/carrier_b/status',
      method: 'POST',
      headers: {},
      rawBody: JSON.stringify({
        data: {
          event_type: eventType,
          occurred_at: '2024-05-01T10:00:00Z',
          payload: { call_control_id: 'v3:abc', client_state: encodeClientState(5), result },
        },
      }),
    };
    expect(adapter.parseWebhook(hook)).toEqual(
      expected ? [{ kind: 'machine_detection', callSid: 'v3:abc', callId: 5, ...expected }] : [],
    );
  });

  it('maps the other hang-up causes of the carrier', () => {
    const causes: Record<string, string> = {
      no_answer: 'no-answer',
      not_found: 'failed',
      unspecified: 'failed',
      time_limit: 'completed',
      something_new: 'failed',
    };
    for (const [cause, status] of Object.entries(causes)) {
      const [event] = adapter.parseWebhook(
        webhook('call.hangup', {
          call_control_id: 'v3:x',
          hangup_cause: cause,
          client_state: encodeClientState(3),
        }),
      );
      expect(event).toMatchObject({ kind: 'call_status', status, callId: 3 });
    }
  });

  it('an incoming call.initiated is an inbound call, identified by the number called', () => {
    const hook = webhook('call.initiated', {
      call_control_id: 'v3:inbound',
      connection_id: ACCOUNT.connection_id,
      direction: 'incoming',
      state: 'parked',
      from: '+15550007777',
      to: '+15550001000',
      client_state: null,
    });
    expect(adapter.parseWebhook(hook)).toEqual([
      { kind: 'inbound_call', callSid: 'v3:inbound', from: '+15550007777', to: '+15550001000' },
    ]);
    expect(adapter.identifyWebhook(hook)).toEqual({
      accountId: ACCOUNT.connection_id,
      callSid: 'v3:inbound',
      ourNumber: '+15550001000',
    });
  });

  it('events it does not use, and bodies that are not events, give nothing', () => {
    expect(adapter.parseWebhook(webhook('call.bridged', { call_control_id: 'v3:x' }))).toEqual([]);
    expect(adapter.parseWebhook({ ...webhook('call.answered', {}), rawBody: 'not json' })).toEqual([]);
    expect(adapter.identifyWebhook({ ...webhook('call.answered', {}), rawBody: '{"data":1}' })).toEqual({});
  });

  it('client state round-trips our call id and ignores anything else', () => {
    expect(decodeClientState(encodeClientState(123456))).toBe(123456);
    expect(decodeClientState(Buffer.from('hello').toString('base64'))).toBeUndefined();
    expect(decodeClientState(Buffer.from('{"call_id":"7"}').toString('base64'))).toBeUndefined();
    expect(decodeClientState(null)).toBeUndefined();
  });
});

describe('carrier_b webhooks: messages', () => {
  const outcomes: Array<[MessageOutcome, string, string | undefined]> = [
    ['delivered', 'delivered', undefined],
    ['undelivered', 'undelivered', '40008'],
    ['failed', 'failed', '40001'],
  ];
  it.each(outcomes)(
    'a %s message posts message.sent then message.finalized (%s)',
    async (outcome, status, code) => {
      const to = `+1555000${6000 + outcomes.findIndex(([o]) => o === outcome)}`;
      sim.setMessageOutcome(to, outcome);
      const { url, hooks } = hookPath();
      const sent = await adapter.sendMessage(credentials, {
        from: '+15550001000',
        to,
        body: 'hello',
        mediaUrls: [],
        statusCallbackUrl: url,
      });

      const all = await hooks();
      expect(all.map(eventType)).toEqual(['message.sent', 'message.finalized']);
      for (const hook of all) {
        expect(adapter.verifyWebhook(credentials, hook)).toBe(true);
        expect(adapter.identifyWebhook(hook)).toEqual({
          messageId: sent.messageId,
          ourNumber: '+15550001000',
        });
      }
      const [first, last] = all.map((hook) => adapter.parseWebhook(hook));
      expect(first).toEqual([
        {
          kind: 'message_status',
          messageId: sent.messageId,
          status: outcome === 'failed' ? 'sending' : 'sent',
        },
      ]);
      const finalEvent = last?.[0] as Extract<CarrierEvent, { kind: 'message_status' }>;
      expect(finalEvent).toMatchObject({ kind: 'message_status', messageId: sent.messageId, status });
      if (code) expect(finalEvent.error).toContain(code);
      else expect(finalEvent.error).toBeUndefined();
    },
  );

  it('an inbound message arrives signed as message.received and parses with its media', async () => {
    const { url, hooks } = hookPath();
    const { messageId, status } = await sim.sendInboundMessage({
      webhookUrl: url,
      from: '+15550008888',
      to: '+15550001000',
      text: 'hi there',
      mediaUrls: ['https://media.example/cat.jpg'],
    });
    expect(status).toBe(200);

    const [hook] = await hooks();
    expect(hook && eventType(hook)).toBe('message.received');
    expect(adapter.verifyWebhook(credentials, hook!)).toBe(true);
    expect(adapter.identifyWebhook(hook!)).toEqual({ messageId, ourNumber: '+15550001000' });
    expect(adapter.parseWebhook(hook!)).toEqual([
      {
        kind: 'inbound_message',
        messageId,
        from: '+15550008888',
        to: '+15550001000',
        body: 'hi there',
        mediaUrls: ['https://media.example/cat.jpg'],
      },
    ]);
  });

  it('maps every per-recipient status of the carrier', () => {
    const statuses: Record<string, string> = {
      queued: 'queued',
      sending: 'sending',
      sent: 'sent',
      delivery_unconfirmed: 'sent',
      delivered: 'delivered',
      delivery_failed: 'undelivered',
      expired: 'undelivered',
      sending_failed: 'failed',
      cancelled: 'cancelled',
    };
    for (const [carrierStatus, ours] of Object.entries(statuses)) {
      const hook = webhook('message.finalized', {
        id: 'm1',
        to: [{ phone_number: '+1555', status: carrierStatus }],
      });
      expect(adapter.parseWebhook(hook)).toEqual([
        expect.objectContaining({ messageId: 'm1', status: ours }),
      ]);
    }
    const unknown = webhook('message.finalized', {
      id: 'm1',
      to: [{ phone_number: '+1555', status: 'brand_new' }],
    });
    expect(adapter.parseWebhook(unknown)).toEqual([]);
  });
});

describe('carrier_b webhooks: signature checks', () => {
  async function signedCallback(): Promise<IncomingWebhook> {
    const { url, hooks } = hookPath();
    await adapter.placeCall(credentials, callRequest({ statusCallbackUrl: url }));
    const [first] = await hooks();
    if (!first) throw new Error('no callback arrived');
    expect(adapter.verifyWebhook(credentials, first)).toBe(true);
    return first;
  }

  it('rejects a tampered body', async () => {
    const hook = await signedCallback();
    const tampered = hook.rawBody.replace('"call.initiated"', '"call.answered"');
    expect(tampered).not.toBe(hook.rawBody);
    expect(adapter.verifyWebhook(credentials, { ...hook, rawBody: tampered })).toBe(false);
  });

  it('rejects a wrong public key and a missing one', async () => {
    const hook = await signedCallback();
    const other = generateKeyPairSync('ed25519').publicKey.export({ format: 'jwk' });
    const otherKey = Buffer.from(other.x ?? '', 'base64url').toString('base64');
    expect(adapter.verifyWebhook({ ...credentials, public_key: otherKey }, hook)).toBe(false);
    expect(adapter.verifyWebhook({ ...credentials, public_key: 'not a key' }, hook)).toBe(false);
    const { public_key: _, ...withoutKey } = credentials;
    expect(adapter.verifyWebhook(withoutKey, hook)).toBe(false);
  });

  it('accepts a PEM public key as well as the base64 raw key', async () => {
    const hook = await signedCallback();
    const raw = Buffer.from(sim.publicKey, 'base64');
    const der = Buffer.concat([Buffer.from('302a300506032b6570032100', 'hex'), raw]);
    const pem = `-----BEGIN PUBLIC KEY-----\n${der.toString('base64')}\n-----END PUBLIC KEY-----\n`;
    expect(adapter.verifyWebhook({ ...credentials, public_key: pem }, hook)).toBe(true);
  });

  it('rejects a signature older (or newer) than the tolerance, and accepts one inside it', async () => {
    const hook = await signedCallback();
    const resigned = (ageSeconds: number): IncomingWebhook => ({
      ...hook,
      headers: { ...hook.headers, ...sim.signatureHeaders(hook.rawBody, Date.now() - ageSeconds * 1000) },
    });
    const tolerance = CARRIER_B_SIGNATURE_TOLERANCE_SECONDS;
    expect(tolerance).toBe(300);
    expect(adapter.verifyWebhook(credentials, resigned(tolerance - 60))).toBe(true);
    expect(adapter.verifyWebhook(credentials, resigned(tolerance + 60))).toBe(false);
    expect(adapter.verifyWebhook(credentials, resigned(-(tolerance + 60)))).toBe(false);
  });

  it('rejects a timestamp header that is not the one signed', async () => {
    const hook = await signedCallback();
    const timestamp = Number(hook.headers['telnyx-timestamp']) - 1;
    const moved = { ...hook, headers: { ...hook.headers, 'telnyx-timestamp': String(timestamp) } };
    expect(adapter.verifyWebhook(credentials, moved)).toBe(false);
  });

  it('rejects missing or malformed signature headers', async () => {
    const hook = await signedCallback();
    const { 'telnyx-signature-ed25519': signature, 'telnyx-timestamp': timestamp, ...rest } = hook.headers;
    expect(signature).toBeDefined();
    expect(
      adapter.verifyWebhook(credentials, { ...hook, headers: { ...rest, 'telnyx-timestamp': timestamp } }),
    ).toBe(false);
    expect(
      adapter.verifyWebhook(credentials, {
        ...hook,
        headers: { ...rest, 'telnyx-signature-ed25519': signature },
      }),
    ).toBe(false);
    const garbage = { ...hook.headers, 'telnyx-signature-ed25519': 'AAAA' };
    expect(adapter.verifyWebhook(credentials, { ...hook, headers: garbage })).toBe(false);
    const notNumber = { ...hook.headers, 'telnyx-timestamp': 'yesterday' };
    expect(adapter.verifyWebhook(credentials, { ...hook, headers: notNumber })).toBe(false);
  });

  it('reads the signature headers whatever their case', async () => {
    const hook = await signedCallback();
    const upper = Object.fromEntries(
      Object.entries(hook.headers).map(([key, value]) => [key.toUpperCase(), value]),
    );
    expect(adapter.verifyWebhook(credentials, { ...hook, headers: upper })).toBe(true);
  });
});

/** An unsigned event webhook, for the parser's own mapping tests. */
function webhook(type: string, payload: Record<string, unknown>): IncomingWebhook {
  return {
    url: `${receiverUrl}/manual`,
    method: 'POST',
    headers: {},
    rawBody: JSON.stringify({
      data: {
        record_type: 'event',
        event_type: type,
        id: 'evt',
        occurred_at: new Date().toISOString(),
        payload,
      },
    }),
  };
}
