/**
 * carrier_c adapter against its simulator over real loopback HTTP: the wire format of each method,
 * the application JWT the simulator checks, signed webhooks, and how failures are typed.
 */
import { createHmac, createPrivateKey, createPublicKey, generateKeyPairSync, randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import { decodeJwt, decodeProtectedHeader, jwtVerify, SignJWT } from 'jose';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { sha256Hex } from '../src/lib/crypto.js';
import { MediaTokens } from '../src/lib/media-token.js';
import { smsSegments } from '../src/lib/sms-segments.js';
import { CarrierCAdapter } from '../src/providers/carriers/carrier-c.js';
import { requestToken } from '../src/providers/carriers/carrier-c-tokens.js';
import type { CarrierCredentials, CarrierEvent, IncomingWebhook } from '../src/providers/carriers/types.js';
import { ProviderError } from '../src/providers/errors.js';
import { providerRequest } from '../src/providers/http.js';
import { CarrierCSimulator } from '../src/sim/carrier-c.js';

const APPLICATION_ID = 'aaaaaaaa-bbbb-cccc-dddd-0123456789ab';
const OUR_NUMBER = '+14155550100';
const CALLEE = '+447700900001';
const STREAM = { url: 'wss://switchboard.test/media/42', token: 'abc' };
/** The NCCO's websocket endpoint: the token (and the call's uuid, when known) ride in its headers. */
const ENDPOINT = {
  type: 'websocket',
  uri: 'wss://switchboard.test/media/42',
  'content-type': 'audio/l16;rate=16000',
  headers: { token: 'abc' },
};

const keys = generateKeyPairSync('rsa', {
  modulusLength: 2048,
  publicKeyEncoding: { type: 'spki', format: 'pem' },
  privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
});
const otherKeys = generateKeyPairSync('rsa', {
  modulusLength: 2048,
  publicKeyEncoding: { type: 'spki', format: 'pem' },
  privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
});

/** Our side of the webhooks: records every request; the answer URL answers with the adapter's NCCO. */
class Receiver {
  readonly received: IncomingWebhook[] = [];
  #server: Server | undefined;
  base = '';

  constructor(private readonly adapter: () => CarrierCAdapter) {}

  async start(): Promise<void> {
    this.#server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        this.received.push({
          url: `${this.base}${req.url ?? '/'}`,
          method: req.method ?? 'GET',
          headers: req.headers,
          rawBody: Buffer.concat(chunks).toString('utf8'),
        });
        if ((req.url ?? '').startsWith('/answer')) {
          const markup = this.adapter().answerMarkup(STREAM);
          res.writeHead(200, { 'content-type': markup.contentType });
          res.end(markup.body);
        } else {
          res.writeHead(204);
          res.end();
        }
      });
    });
    await new Promise<void>((resolve) => this.#server!.listen(0, '127.0.0.1', resolve));
    const address = this.#server.address();
    this.base = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
  }

  async stop(): Promise<void> {
    this.#server?.closeAllConnections();
    await new Promise<void>((resolve) => this.#server?.close(() => resolve()));
  }

  at(path: string): IncomingWebhook[] {
    return this.received.filter((webhook) => new URL(webhook.url).pathname === path);
  }
}

let sim: CarrierCSimulator;
let adapter: CarrierCAdapter;
let credentials: CarrierCredentials;
const receiver = new Receiver(() => adapter);

beforeAll(async () => {
  await receiver.start();
});

afterAll(async () => {
  await receiver.stop();
});

beforeEach(async () => {
  sim = new CarrierCSimulator();
  sim.addAccount({ application_id: APPLICATION_ID, public_key_pem: keys.publicKey });
  await sim.start();
  adapter = new CarrierCAdapter({ baseUrl: sim.baseUrl });
  credentials = {
    application_id: APPLICATION_ID,
    private_key: keys.privateKey,
    signature_secret: sim.signatureSecret,
  };
  receiver.received.length = 0;
});

afterEach(async () => {
  await sim.stop();
});

function callRequest(overrides: Partial<Parameters<CarrierCAdapter['placeCall']>[1]> = {}) {
  return {
    from: OUR_NUMBER,
    to: CALLEE,
    callId: 42,
    answerUrl: `${receiver.base}/answer/42`,
    statusCallbackUrl: `${receiver.base}/events/42`,
    stream: STREAM,
    timeoutSeconds: 25,
    ...overrides,
  };
}

function messageRequest(overrides: Partial<Parameters<CarrierCAdapter['sendMessage']>[1]> = {}) {
  return {
    from: OUR_NUMBER,
    to: CALLEE,
    body: 'Your appointment is at 10:00',
    mediaUrls: [],
    statusCallbackUrl: `${receiver.base}/message-status`,
    ...overrides,
  };
}

/** Rejects with a ProviderError; returns it for inspection. */
async function providerError(promise: Promise<unknown>): Promise<ProviderError> {
  const error = await promise.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(ProviderError);
  return error as ProviderError;
}

function parsedStatuses(webhooks: IncomingWebhook[]): CarrierEvent[] {
  return webhooks.flatMap((webhook) => adapter.parseWebhook(webhook));
}

/** A webhook signed like the carrier's, with claims and body of our choosing. */
async function signedWebhook(
  body: string,
  options: { secret?: string; iat?: number; payloadHash?: string; applicationId?: string } = {},
): Promise<IncomingWebhook> {
  const token = await new SignJWT({
    payload_hash: options.payloadHash ?? sha256Hex(body),
    application_id: options.applicationId ?? APPLICATION_ID,
  })
    .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
    .setIssuedAt(options.iat ?? Math.floor(Date.now() / 1000))
    .setJti(randomUUID())
    .sign(new TextEncoder().encode(options.secret ?? sim.signatureSecret));
  return {
    url: `${receiver.base}/events/1`,
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    rawBody: body,
  };
}

function unsigned(body: Record<string, unknown>): IncomingWebhook {
  return { url: `${receiver.base}/x`, method: 'POST', headers: {}, rawBody: JSON.stringify(body) };
}

describe('placeCall', () => {
  it('creates the call with the documented body and returns its uuid', async () => {
    const placed = await adapter.placeCall(credentials, callRequest());

    const request = sim.requests.find((r) => r.method === 'POST' && r.path === '/v1/calls');
    expect(request?.body).toEqual({
      to: [{ type: 'phone', number: '447700900001' }],
      from: { type: 'phone', number: '14155550100' },
      answer_url: [`${receiver.base}/answer/42`],
      answer_method: 'POST',
      event_url: [`${receiver.base}/events/42`],
      event_method: 'POST',
      ringing_timer: 25,
    });
    expect(placed.status).toBe('queued');
    expect(sim.calls.get(placed.callSid)).toMatchObject({ from: OUR_NUMBER, to: CALLEE });
  });

  it('signs each request with a fresh short-lived RS256 JWT of the application', async () => {
    await adapter.placeCall(credentials, callRequest());
    await adapter.placeCall(credentials, callRequest());
    const tokens = sim.requests
      .filter((r) => r.path === '/v1/calls')
      .map((r) => String(r.headers.authorization).replace(/^Bearer /, ''));
    expect(tokens).toHaveLength(2);
    for (const token of tokens) {
      expect(decodeProtectedHeader(token)).toMatchObject({ alg: 'RS256', typ: 'JWT' });
      const { payload } = await jwtVerify(token, createPublicKey(keys.publicKey), {
        algorithms: ['RS256'],
      });
      expect(payload.application_id).toBe(APPLICATION_ID);
      expect(typeof payload.jti).toBe('string');
      expect(payload.exp! - payload.iat!).toBeGreaterThan(0);
      expect(payload.exp! - payload.iat!).toBeLessThanOrEqual(300);
      expect(Math.abs(payload.iat! - Date.now() / 1000)).toBeLessThan(30);
    }
    expect(decodeJwt(tokens[0]!).jti).not.toBe(decodeJwt(tokens[1]!).jti);
  });

  it('leaves out ringing_timer when no timeout is given and keeps it within 1–120 s', async () => {
    await adapter.placeCall(credentials, callRequest({ timeoutSeconds: undefined }));
    await adapter.placeCall(credentials, callRequest({ timeoutSeconds: 600 }));
    const bodies = sim.requests
      .filter((r) => r.path === '/v1/calls')
      .map((r) => r.body as Record<string, unknown>);
    expect(bodies[0]).not.toHaveProperty('ringing_timer');
    expect(bodies[1]?.ringing_timer).toBe(120);
  });

  it('fetches the answer URL (signed POST) and records the NCCO, then posts the call events', async () => {
    sim.setCallOutcome(CALLEE, { status: 'completed', durationSeconds: 42 });
    const placed = await adapter.placeCall(credentials, callRequest());
    await sim.settle();

    const answer = sim.calls.get(placed.callSid)?.answer;
    expect(answer?.status).toBe(200);
    expect(answer?.contentType).toBe('application/json');
    expect(JSON.parse(answer?.body ?? 'null')).toEqual([
      {
        action: 'connect',
        endpoint: [ENDPOINT],
      },
    ]);
    const answerRequests = receiver.at('/answer/42');
    expect(answerRequests).toHaveLength(1);
    expect(answerRequests[0]?.method).toBe('POST');
    expect(adapter.verifyWebhook(credentials, answerRequests[0]!)).toBe(true);

    const events = receiver.at('/events/42');
    expect(events.map((webhook) => adapter.verifyWebhook(credentials, webhook))).toEqual([
      true,
      true,
      true,
      true,
    ]);
    const parsed = parsedStatuses(events);
    expect(parsed.map((event) => (event.kind === 'call_status' ? event.status : event.kind))).toEqual([
      'queued',
      'ringing',
      'in-progress',
      'completed',
    ]);
    expect(parsed.every((event) => event.kind === 'call_status' && event.callSid === placed.callSid)).toBe(
      true,
    );
    const completed = parsed[3];
    expect(completed?.kind === 'call_status' && completed.durationSeconds).toBe(42);
    expect(completed?.kind === 'call_status' && completed.at instanceof Date).toBe(true);
  });

  it.each([
    [{ status: 'busy' } as const, 'busy'],
    [{ status: 'no-answer' } as const, 'no-answer'],
    [{ status: 'failed' } as const, 'failed'],
    [{ status: 'canceled' } as const, 'canceled'],
  ])('reports the %o outcome as %s without fetching the answer URL', async (outcome, expected) => {
    sim.setCallOutcome(CALLEE, outcome);
    const placed = await adapter.placeCall(credentials, callRequest());
    await sim.settle();

    expect(receiver.at('/answer/42')).toHaveLength(0);
    expect(sim.calls.get(placed.callSid)?.answer).toBeUndefined();
    const events = receiver.at('/events/42');
    expect(events.every((webhook) => adapter.verifyWebhook(credentials, webhook))).toBe(true);
    const last = parsedStatuses(events).at(-1);
    expect(last).toMatchObject({ kind: 'call_status', callSid: placed.callSid, status: expected });
    expect(last && 'durationSeconds' in last).toBe(false);
  });
});

describe('answering-machine detection', () => {
  it('asks for advanced detection with beep detection, and the events of a machine and of a person parse', async () => {
    sim.setCallOutcome(CALLEE, { status: 'completed', durationSeconds: 30, answeredBy: 'machine' });
    const machine = await adapter.placeCall(credentials, callRequest({ detectMachine: true }));
    await sim.settle();
    expect(sim.calls.get(machine.callSid)?.request.advanced_machine_detection).toEqual({
      behavior: 'continue',
      mode: 'detect_beep',
    });
    const events = receiver.at('/events/42');
    expect(events.every((webhook) => adapter.verifyWebhook(credentials, webhook))).toBe(true);
    const parsed = parsedStatuses(events);
    expect(parsed.filter((event) => event.kind === 'machine_detection')).toEqual([
      { kind: 'machine_detection', callSid: machine.callSid, answeredBy: 'machine' },
      { kind: 'machine_detection', callSid: machine.callSid, answeredBy: 'machine', greetingEnded: 'beep' },
    ]);
    // Between the answer and the end of the call.
    expect(parsed.map((event) => (event.kind === 'call_status' ? event.status : event.kind))).toEqual([
      'queued',
      'ringing',
      'in-progress',
      'machine_detection',
      'machine_detection',
      'completed',
    ]);

    receiver.received.length = 0;
    sim.setCallOutcome(CALLEE, { status: 'completed', durationSeconds: 30, answeredBy: 'human' });
    const person = await adapter.placeCall(credentials, callRequest({ detectMachine: true }));
    await sim.settle();
    expect(
      parsedStatuses(receiver.at('/events/42')).filter((event) => event.kind === 'machine_detection'),
    ).toEqual([{ kind: 'machine_detection', callSid: person.callSid, answeredBy: 'human' }]);
  });

  it('leaves detection out unless asked, and the simulator refuses settings the carrier does not take', async () => {
    const plain = await adapter.placeCall(credentials, callRequest());
    expect(sim.calls.get(plain.callSid)?.request).not.toHaveProperty('advanced_machine_detection');
    const refused = await providerError(
      providerRequest({
        provider: 'carrier_c',
        method: 'POST',
        url: `${sim.baseUrl}/v1/calls`,
        headers: { authorization: `Bearer ${await requestToken(credentials)}` },
        body: {
          ...JSON.parse(sim.requests.findLast((request) => request.path === '/v1/calls')!.rawBody),
          advanced_machine_detection: { behavior: 'continue', mode: 'detect_beep', beep_timeout: 10 },
        },
      }),
    );
    expect(refused.status).toBe(400);
  });
});

describe('hangUp, transfer and DTMF', () => {
  it('hangs up with PUT /v1/calls/{uuid} {action: hangup}', async () => {
    const placed = await adapter.placeCall(credentials, callRequest());
    await adapter.hangUp(credentials, placed.callSid);

    const request = sim.requests.find((r) => r.method === 'PUT');
    expect(request?.path).toBe(`/v1/calls/${placed.callSid}`);
    expect(request?.body).toEqual({ action: 'hangup' });
    expect(sim.calls.get(placed.callSid)?.hungUp).toBe(true);
  });

  it('transfers with an NCCO destination connecting a phone endpoint', async () => {
    const placed = await adapter.placeCall(credentials, callRequest());
    await adapter.transfer(credentials, placed.callSid, '+14155550199');

    const request = sim.requests.find((r) => r.method === 'PUT');
    expect(request?.body).toEqual({
      action: 'transfer',
      destination: {
        type: 'ncco',
        ncco: [{ action: 'connect', endpoint: [{ type: 'phone', number: '14155550199' }] }],
      },
    });
    expect(sim.calls.get(placed.callSid)?.transferredTo).toBe('+14155550199');
  });

  it('plays key tones with PUT /v1/calls/{uuid}/dtmf {digits}, our pause `w` as its `p`', async () => {
    const placed = await adapter.placeCall(credentials, callRequest());
    await adapter.sendDtmf(credentials, placed.callSid, '12#w9');

    const request = sim.requests.find((r) => r.method === 'PUT');
    expect(request?.path).toBe(`/v1/calls/${placed.callSid}/dtmf`);
    expect(request?.body).toEqual({ digits: '12#p9' });
    expect(sim.digitsSent.get(placed.callSid)).toEqual(['12#p9']);
    // What carrier_c cannot play (no A-D) is refused before asking.
    const requests = sim.requests.length;
    for (const digits of ['x', '1A']) {
      const refused = await providerError(adapter.sendDtmf(credentials, placed.callSid, digits));
      expect(refused).toMatchObject({ code: 'invalid_digits', retryable: false });
    }
    expect(sim.requests).toHaveLength(requests);
  });

  it('reports an unknown call as a permanent 404', async () => {
    const error = await providerError(adapter.hangUp(credentials, randomUUID()));
    expect(error.status).toBe(404);
    expect(error.retryable).toBe(false);
  });
});

describe('sendMessage', () => {
  it('sends an SMS with the documented body and follows its status callbacks', async () => {
    const sent = await adapter.sendMessage(credentials, messageRequest());

    const request = sim.requests.find((r) => r.path === '/v1/messages');
    expect(request?.body).toEqual({
      message_type: 'text',
      channel: 'sms',
      text: 'Your appointment is at 10:00',
      to: '447700900001',
      from: '14155550100',
      webhook_url: `${receiver.base}/message-status`,
    });
    expect(sent).toEqual({ messageId: sim.messages[0]?.id, status: 'queued', segments: 1 });

    await sim.settle();
    const callbacks = receiver.at('/message-status');
    expect(callbacks.every((webhook) => adapter.verifyWebhook(credentials, webhook))).toBe(true);
    expect(parsedStatuses(callbacks)).toEqual([
      { kind: 'message_status', messageId: sent.messageId, status: 'sent' },
      { kind: 'message_status', messageId: sent.messageId, status: 'delivered' },
    ]);
  });

  it('sends an MMS with the first media URL as an image and the text as caption', async () => {
    const sent = await adapter.sendMessage(
      credentials,
      messageRequest({
        body: 'See attached',
        mediaUrls: ['https://cdn.test/a.png', 'https://cdn.test/b.png'],
      }),
    );
    const request = sim.requests.find((r) => r.path === '/v1/messages');
    expect(request?.body).toMatchObject({
      message_type: 'image',
      channel: 'mms',
      image: { url: 'https://cdn.test/a.png', caption: 'See attached' },
      to: '447700900001',
      from: '14155550100',
    });
    expect(request?.body).not.toHaveProperty('text');
    expect(sent.segments).toBe(1);
    expect(sim.messages[0]?.mediaUrls).toEqual(['https://cdn.test/a.png']);
  });

  it('counts segments from the text, since the API does not report parts', async () => {
    const sent = await adapter.sendMessage(credentials, messageRequest({ body: 'a'.repeat(161) }));
    expect(sent.segments).toBe(2);
  });

  it.each([
    ['undelivered', 'undelivered'],
    ['failed', 'failed'],
  ] as const)('reports a %s outcome as %s with the carrier error', async (outcome, expected) => {
    sim.setMessageOutcome(CALLEE, outcome);
    const sent = await adapter.sendMessage(credentials, messageRequest());
    await sim.settle();
    const events = parsedStatuses(receiver.at('/message-status'));
    expect(events[0]).toEqual({ kind: 'message_status', messageId: sent.messageId, status: 'sent' });
    expect(events[1]).toMatchObject({ kind: 'message_status', messageId: sent.messageId, status: expected });
    expect(events[1]?.kind === 'message_status' && events[1].error).toMatch(/^13\d\d: /);
  });
});

describe('smsSegments', () => {
  it.each([
    ['', 1],
    ['a'.repeat(160), 1],
    ['a'.repeat(161), 2],
    ['a'.repeat(306), 2],
    ['a'.repeat(307), 3],
    ['€'.repeat(80), 1],
    ['€'.repeat(81), 2],
    ['é'.repeat(160), 1],
    ['ł'.repeat(70), 1],
    ['ł'.repeat(71), 2],
    ['ł'.repeat(134), 2],
    ['ł'.repeat(135), 3],
    ['😀'.repeat(35), 1],
    ['😀'.repeat(36), 2],
  ])('%j takes %i segment(s)', (text, segments) => {
    expect(smsSegments(text)).toBe(segments);
  });
});

describe('validateCredentials', () => {
  it('accepts working credentials with an authenticated GET /v1/calls', async () => {
    const check = await adapter.validateCredentials(credentials);
    expect(check).toMatchObject({ valid: true, account: APPLICATION_ID });
    const request = sim.requests.at(-1);
    expect(request?.method).toBe('GET');
    expect(request?.path).toBe('/v1/calls');
    expect(String(request?.headers.authorization)).toMatch(/^Bearer ey/);
  });

  it('refuses a key that is not the application’s', async () => {
    const check = await adapter.validateCredentials({ ...credentials, private_key: otherKeys.privateKey });
    expect(check.valid).toBe(false);
    expect(check.detail).toMatch(/401/);
  });

  it('refuses an unknown application id', async () => {
    const check = await adapter.validateCredentials({ ...credentials, application_id: randomUUID() });
    expect(check.valid).toBe(false);
  });

  it('refuses a malformed private key with a clear detail, without calling the carrier', async () => {
    const check = await adapter.validateCredentials({ ...credentials, private_key: 'not a key' });
    expect(check).toEqual({ valid: false, detail: expect.stringMatching(/private_key/) });
    expect(sim.requests).toHaveLength(0);
  });

  it('accepts a PKCS#1 key and a key pasted with literal \\n', async () => {
    const pkcs1 = createPrivateKey(keys.privateKey).export({ type: 'pkcs1', format: 'pem' }).toString();
    expect((await adapter.validateCredentials({ ...credentials, private_key: pkcs1 })).valid).toBe(true);
    const escaped = keys.privateKey.replace(/\n/g, '\\n');
    expect((await adapter.validateCredentials({ ...credentials, private_key: escaped })).valid).toBe(true);
  });

  it('throws a retryable error when the carrier cannot be reached', async () => {
    await sim.stop();
    const error = await providerError(adapter.validateCredentials(credentials));
    expect(error.retryable).toBe(true);
  });
});

describe('failures', () => {
  it('answers 401 in the carrier’s error shape to a JWT signed with the wrong key: permanent', async () => {
    const error = await providerError(
      adapter.placeCall({ ...credentials, private_key: otherKeys.privateKey }, callRequest()),
    );
    expect(error.status).toBe(401);
    expect(error.retryable).toBe(false);
    expect(error.message).toMatch(/did not provide correct credentials/);
    expect(sim.calls.size).toBe(0);
  });

  it('rejects a request without a token', async () => {
    const response = await fetch(`${sim.baseUrl}/v1/calls`, { method: 'GET' });
    expect(response.status).toBe(401);
    expect(await response.json()).toMatchObject({ type: expect.any(String), title: 'Unauthorized' });
  });

  it('makes missing credentials a permanent error', async () => {
    const error = await providerError(adapter.placeCall({ application_id: APPLICATION_ID }, callRequest()));
    expect(error.retryable).toBe(false);
    expect(sim.requests).toHaveLength(0);
  });

  it('makes a 503 retryable', async () => {
    sim.failNext(1, 503);
    const error = await providerError(adapter.placeCall(credentials, callRequest()));
    expect(error.retryable).toBe(true);
    expect(error.status).toBe(503);
    // The next request goes through.
    await expect(adapter.placeCall(credentials, callRequest())).resolves.toMatchObject({ status: 'queued' });
  });

  it('makes a 400 permanent', async () => {
    sim.failNext(1, 400, { type: 'x', title: 'Bad Request', detail: 'invalid to' });
    const error = await providerError(adapter.sendMessage(credentials, messageRequest()));
    expect(error.retryable).toBe(false);
    expect(error.status).toBe(400);
    expect(error.message).toMatch(/invalid to/);
  });

  it('makes a stopped carrier retryable', async () => {
    await sim.stop();
    const error = await providerError(adapter.placeCall(credentials, callRequest()));
    expect(error.retryable).toBe(true);
    expect(error.status).toBeUndefined();
  });
});

describe('verifyWebhook', () => {
  const body = JSON.stringify({ uuid: 'u-1', status: 'ringing', from: '14155550100', to: '447700900001' });

  it('accepts a webhook the simulator signed', async () => {
    const result = await sim.sendInboundMessage({
      webhookUrl: `${receiver.base}/inbound`,
      from: CALLEE,
      to: OUR_NUMBER,
      text: 'hi',
    });
    expect(result.status).toBe(204);
    const [webhook] = receiver.at('/inbound');
    expect(adapter.verifyWebhook(credentials, webhook!)).toBe(true);
  });

  it('accepts a fresh token signed with the secret over this body', async () => {
    expect(adapter.verifyWebhook(credentials, await signedWebhook(body))).toBe(true);
  });

  it('rejects a tampered body', async () => {
    const webhook = await signedWebhook(body);
    expect(
      adapter.verifyWebhook(credentials, { ...webhook, rawBody: body.replace('ringing', 'answered') }),
    ).toBe(false);
  });

  it('rejects a token whose payload_hash is not the body’s', async () => {
    const webhook = await signedWebhook(body, { payloadHash: sha256Hex('{}') });
    expect(adapter.verifyWebhook(credentials, webhook)).toBe(false);
  });

  it('rejects a token signed with another secret', async () => {
    const webhook = await signedWebhook(body, { secret: 'another-secret-of-some-length' });
    expect(adapter.verifyWebhook(credentials, webhook)).toBe(false);
  });

  it('rejects a token issued more than five minutes ago, and accepts one just inside', async () => {
    const now = Math.floor(Date.now() / 1000);
    expect(adapter.verifyWebhook(credentials, await signedWebhook(body, { iat: now - 301 }))).toBe(false);
    expect(adapter.verifyWebhook(credentials, await signedWebhook(body, { iat: now - 280 }))).toBe(true);
  });

  it('rejects a token issued in the future', async () => {
    const now = Math.floor(Date.now() / 1000);
    expect(adapter.verifyWebhook(credentials, await signedWebhook(body, { iat: now + 600 }))).toBe(false);
  });

  it('rejects a token for another application', async () => {
    const webhook = await signedWebhook(body, { applicationId: randomUUID() });
    expect(adapter.verifyWebhook(credentials, webhook)).toBe(false);
  });

  it('rejects a webhook without an Authorization header', async () => {
    const webhook = await signedWebhook(body);
    expect(
      adapter.verifyWebhook(credentials, { ...webhook, headers: { 'content-type': 'application/json' } }),
    ).toBe(false);
  });

  it('rejects everything when no signature secret is configured', async () => {
    const webhook = await signedWebhook(body);
    const { signature_secret: _unused, ...withoutSecret } = credentials;
    expect(adapter.verifyWebhook(withoutSecret, webhook)).toBe(false);
    expect(adapter.verifyWebhook({ ...credentials, signature_secret: '' }, webhook)).toBe(false);
  });

  it('rejects a token that is not HS256: alg none, or another alg over a valid HS256 MAC', async () => {
    const claims = { payload_hash: sha256Hex(body), iat: Math.floor(Date.now() / 1000) };
    const encode = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url');
    const withToken = (token: string): IncomingWebhook => ({
      url: `${receiver.base}/events/1`,
      method: 'POST',
      headers: { authorization: `Bearer ${token}` },
      rawBody: body,
    });
    const signingInput = (alg: string) => `${encode({ alg, typ: 'JWT' })}.${encode(claims)}`;
    const mac = (input: string) =>
      createHmac('sha256', sim.signatureSecret).update(input).digest('base64url');
    expect(adapter.verifyWebhook(credentials, withToken(`${signingInput('none')}.`))).toBe(false);
    expect(
      adapter.verifyWebhook(credentials, withToken(`${signingInput('HS512')}.${mac(signingInput('HS512'))}`)),
    ).toBe(false);
    // The same hand-made token with the right alg passes, so the two refusals above are about alg.
    expect(
      adapter.verifyWebhook(credentials, withToken(`${signingInput('HS256')}.${mac(signingInput('HS256'))}`)),
    ).toBe(true);
  });
});

describe('parseWebhook and identifyWebhook', () => {
  const voice = (status: string, extra: Record<string, unknown> = {}) =>
    unsigned({
      uuid: 'call-uuid',
      conversation_uuid: 'CON-1',
      status,
      direction: 'outbound',
      from: '14155550100',
      to: '447700900001',
      timestamp: '2024-05-01T10:00:00.000Z',
      ...extra,
    });

  it.each([
    ['started', 'queued'],
    ['ringing', 'ringing'],
    ['answered', 'in-progress'],
    ['busy', 'busy'],
    ['timeout', 'no-answer'],
    ['unanswered', 'no-answer'],
    ['failed', 'failed'],
    ['rejected', 'failed'],
    ['cancelled', 'canceled'],
  ])('maps voice status %s to %s', (status, expected) => {
    expect(adapter.parseWebhook(voice(status))).toEqual([
      {
        kind: 'call_status',
        callSid: 'call-uuid',
        status: expected,
        at: new Date('2024-05-01T10:00:00.000Z'),
      },
    ]);
  });

  it('maps completed with its duration in seconds', () => {
    const [event] = adapter.parseWebhook(
      voice('completed', {
        duration: '73',
        start_time: '2024-05-01T09:58:47.000Z',
        end_time: '2024-05-01T10:00:00.000Z',
      }),
    );
    expect(event).toMatchObject({ kind: 'call_status', status: 'completed', durationSeconds: 73 });
  });

  it.each([
    ['human', undefined, { answeredBy: 'human' }],
    ['machine', undefined, { answeredBy: 'machine' }],
    ['machine', 'beep_start', { answeredBy: 'machine', greetingEnded: 'beep' }],
    ['machine', 'beep_timeout', { answeredBy: 'machine', greetingEnded: 'other' }],
  ] as const)('reads the machine detection event status %s, sub_state %s', (status, subState, expected) => {
    expect(adapter.parseWebhook(voice(status, subState ? { sub_state: subState } : {}))).toEqual([
      { kind: 'machine_detection', callSid: 'call-uuid', ...expected },
    ]);
  });

  it('ignores voice events that are not status changes', () => {
    expect(
      adapter.parseWebhook(unsigned({ uuid: 'call-uuid', dtmf: { digits: '1' }, from: '1', to: '2' })),
    ).toEqual([]);
    expect(adapter.parseWebhook({ ...unsigned({}), rawBody: 'not json' })).toEqual([]);
  });

  it('reads an inbound call from the answer request', async () => {
    const call = await sim.sendInboundCall({
      answerUrl: `${receiver.base}/answer/in`,
      from: CALLEE,
      to: OUR_NUMBER,
    });
    const [webhook] = receiver.at('/answer/in');
    expect(adapter.verifyWebhook(credentials, webhook!)).toBe(true);
    expect(adapter.parseWebhook(webhook!)).toEqual([
      { kind: 'inbound_call', callSid: call.sid, from: CALLEE, to: OUR_NUMBER },
    ]);
    expect(adapter.identifyWebhook(webhook!)).toEqual({
      accountId: APPLICATION_ID,
      callSid: call.sid,
      ourNumber: OUR_NUMBER,
    });
    expect(JSON.parse(call.answer?.body ?? 'null')[0].endpoint[0]).toEqual(ENDPOINT);
  });

  it('reads an inbound SMS and an inbound MMS', async () => {
    const sms = await sim.sendInboundMessage({
      webhookUrl: `${receiver.base}/inbound`,
      from: CALLEE,
      to: OUR_NUMBER,
      text: 'STOP',
    });
    const mms = await sim.sendInboundMessage({
      webhookUrl: `${receiver.base}/inbound`,
      from: CALLEE,
      to: OUR_NUMBER,
      text: 'look',
      imageUrl: 'https://media.test/p.jpg',
    });
    const [smsHook, mmsHook] = receiver.at('/inbound');
    expect(adapter.parseWebhook(smsHook!)).toEqual([
      {
        kind: 'inbound_message',
        messageId: sms.messageId,
        from: CALLEE,
        to: OUR_NUMBER,
        body: 'STOP',
        mediaUrls: [],
      },
    ]);
    expect(adapter.parseWebhook(mmsHook!)).toEqual([
      {
        kind: 'inbound_message',
        messageId: mms.messageId,
        from: CALLEE,
        to: OUR_NUMBER,
        body: 'look',
        mediaUrls: ['https://media.test/p.jpg'],
      },
    ]);
    expect(adapter.identifyWebhook(smsHook!)).toEqual({
      accountId: APPLICATION_ID,
      messageId: sms.messageId,
      ourNumber: OUR_NUMBER,
    });
  });

  it('maps message statuses, with the error of a failed one', () => {
    const status = (value: string, extra: Record<string, unknown> = {}) =>
      adapter.parseWebhook(
        unsigned({ message_uuid: 'm-1', status: value, from: '14155550100', to: '1', ...extra }),
      );
    expect(status('submitted')).toEqual([{ kind: 'message_status', messageId: 'm-1', status: 'sent' }]);
    expect(status('delivered')).toEqual([{ kind: 'message_status', messageId: 'm-1', status: 'delivered' }]);
    expect(status('undeliverable')).toEqual([
      { kind: 'message_status', messageId: 'm-1', status: 'undelivered' },
    ]);
    expect(status('failed')).toEqual([{ kind: 'message_status', messageId: 'm-1', status: 'failed' }]);
    expect(
      status('rejected', { error: { type: 't', title: '1320', detail: 'Rejected by network' } }),
    ).toEqual([
      { kind: 'message_status', messageId: 'm-1', status: 'failed', error: '1320: Rejected by network' },
    ]);
    expect(status('read')).toEqual([{ kind: 'message_status', messageId: 'm-1', status: 'delivered' }]);
  });

  it('identifies our number: from on outbound calls and message statuses, to on inbound', async () => {
    expect(adapter.identifyWebhook(voice('ringing'))).toEqual({
      callSid: 'call-uuid',
      ourNumber: OUR_NUMBER,
    });
    expect(adapter.identifyWebhook(voice('ringing', { direction: 'inbound' }))).toEqual({
      callSid: 'call-uuid',
      ourNumber: CALLEE,
    });
    expect(
      adapter.identifyWebhook(
        unsigned({ message_uuid: 'm-1', status: 'delivered', from: '14155550100', to: '1' }),
      ),
    ).toEqual({ messageId: 'm-1', ourNumber: OUR_NUMBER });
    // The token's application is read, not trusted: identification works before verification.
    const signed = await signedWebhook(JSON.stringify({ uuid: 'u', status: 'ringing' }), { secret: 'wrong' });
    expect(adapter.identifyWebhook(signed)).toEqual({ accountId: APPLICATION_ID, callSid: 'u' });
  });
});

describe('answerMarkup', () => {
  it('connects the call to the media WebSocket with an NCCO as JSON, asking for L16 at 16 kHz', () => {
    const markup = adapter.answerMarkup(STREAM);
    expect(markup.contentType).toBe('application/json');
    expect(markup.format).toEqual({ encoding: 'linear16', sampleRate: 16000 });
    expect(JSON.parse(markup.body)).toEqual([
      {
        action: 'connect',
        endpoint: [ENDPOINT],
      },
    ]);
  });

  it("names the carrier's call in the headers when it is known, and keeps them under 512 bytes", async () => {
    const token = await new MediaTokens('s'.repeat(32)).issue({
      callId: 2_000_000_000,
      organizationId: 2_000_000_000,
    });
    const markup = adapter.answerMarkup({
      ...STREAM,
      token,
      callSid: '63f61863-4a51-4f6b-86e1-46edebcf9356',
    });
    const [endpoint] = JSON.parse(markup.body)[0].endpoint;
    expect(endpoint.uri).toBe(STREAM.url);
    expect(endpoint.headers).toEqual({ token, call_uuid: '63f61863-4a51-4f6b-86e1-46edebcf9356' });
    // The NCCO reference caps an endpoint's headers at 512 bytes.
    expect(Buffer.byteLength(JSON.stringify(endpoint.headers))).toBeLessThan(512);
  });
});
