/**
 * carrier_a adapter against its simulator, both over real loopback HTTP: every adapter method, the
 * signed callbacks the simulator posts (verified by the adapter, as the platform will), the published
 * signature example of the carrier's documentation, and typed errors (retryable vs permanent).
 */
import { createServer, type Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CarrierAAdapter, carrierASignature } from '../src/providers/carriers/carrier-a.js';
import type { IncomingWebhook } from '../src/providers/carriers/types.js';
import { ProviderError } from '../src/providers/errors.js';
import { CarrierASimulator } from '../src/sim/carrier-a.js';

const ACCOUNT = { account_sid: 'AC00000000000000000000000000000001', auth_token: 'token-one-0123456789' };
const OTHER = { account_sid: 'AC00000000000000000000000000000002', auth_token: 'token-two-0123456789' };

/** A receiver standing in for the platform: records every webhook and answers TwiML to voice URLs. */
class Receiver {
  readonly received: IncomingWebhook[] = [];
  #server: Server | undefined;
  base = '';

  async start(): Promise<void> {
    this.#server = createServer(async (req, res) => {
      const chunks: Buffer[] = [];
      for await (const chunk of req) chunks.push(chunk as Buffer);
      this.received.push({
        url: `${this.base}${req.url}`,
        method: req.method ?? 'POST',
        headers: req.headers,
        rawBody: Buffer.concat(chunks).toString('utf8'),
      });
      if (req.url?.startsWith('/voice')) {
        const markup = adapter.answerMarkup({ url: 'wss://platform.example/media/1', token: 't' });
        res.writeHead(200, { 'content-type': markup.contentType }).end(markup.body);
      } else {
        res.writeHead(204).end();
      }
    });
    await new Promise<void>((resolve) => this.#server!.listen(0, '127.0.0.1', resolve));
    const address = this.#server.address();
    this.base = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
  }

  async stop(): Promise<void> {
    this.#server?.closeAllConnections();
    await new Promise<void>((resolve) => this.#server?.close(() => resolve()));
  }

  to(path: string): IncomingWebhook[] {
    return this.received.filter((w) => new URL(w.url).pathname === path);
  }
}

const sim = new CarrierASimulator();
const receiver = new Receiver();
let adapter: CarrierAAdapter;

beforeAll(async () => {
  await sim.start();
  sim.addAccount(ACCOUNT);
  sim.addAccount(OTHER);
  adapter = new CarrierAAdapter({ baseUrl: sim.baseUrl });
  await receiver.start();
});
afterAll(async () => {
  await sim.stop();
  await receiver.stop();
});

function callRequest(to: string, callId: number) {
  return {
    from: '+14155550100',
    to,
    callId,
    answerUrl: `${receiver.base}/voice?call=${callId}`,
    statusCallbackUrl: `${receiver.base}/status?call=${callId}`,
    stream: { url: 'wss://platform.example/media/1', token: 't' },
  };
}

async function expectProviderError(promise: Promise<unknown>, retryable: boolean, status?: number) {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ProviderError);
  expect((error as ProviderError).retryable).toBe(retryable);
  if (status !== undefined) expect((error as ProviderError).status).toBe(status);
}

describe('the signature scheme', () => {
  // The worked example of the carrier's request-validation documentation (auth token 12345).
  const url = 'https://mycompany.com/myapp.php?foo=1&bar=2';
  const params = {
    CallSid: 'CA1234567890ABCDE',
    Caller: '+14158675309',
    Digits: '1234',
    From: '+14158675309',
    To: '+18005551212',
  };

  it('reproduces the published example signature', () => {
    expect(carrierASignature('12345', url, params)).toBe('RSOYDt4T1cUTdK1PDd93/VVr8B8=');
  });

  it('reproduces the published example with a repeated parameter (distinct values, sorted)', () => {
    const repeated = { Sid: 'CA123', SidAccount: 'AC123', Digits: ['5678', '1234', '1234'] };
    expect(carrierASignature('12345', url, repeated)).toBe('IK+Dwps556ElfBT0I3Rgjkr1wJU=');
  });

  it('verifyWebhook accepts the example and refuses any change to token, URL or parameters', () => {
    const body = new URLSearchParams(params).toString();
    const webhook = (overrides: Partial<IncomingWebhook> = {}): IncomingWebhook => ({
      url,
      method: 'POST',
      headers: { 'x-twilio-signature': 'RSOYDt4T1cUTdK1PDd93/VVr8B8=' },
      rawBody: body,
      ...overrides,
    });
    const credentials = { account_sid: 'AC123', auth_token: '12345' };
    expect(adapter.verifyWebhook(credentials, webhook())).toBe(true);
    expect(adapter.verifyWebhook({ ...credentials, auth_token: '12346' }, webhook())).toBe(false);
    expect(adapter.verifyWebhook(credentials, webhook({ url: `${url}&x=1` }))).toBe(false);
    expect(adapter.verifyWebhook(credentials, webhook({ rawBody: body.replace('1234', '9999') }))).toBe(
      false,
    );
    expect(adapter.verifyWebhook(credentials, webhook({ headers: {} }))).toBe(false);
    expect(adapter.verifyWebhook(credentials, webhook({ headers: { 'x-twilio-signature': 'AAAA' } }))).toBe(
      false,
    );
  });

  it('accepts the URL with the default port added or removed, as carriers sign either', () => {
    const plain = 'https://hooks.example.com/webhooks/carrier_a/status';
    const rawBody = 'CallSid=CA1&CallStatus=ringing';
    const signedWithPort = carrierASignature(
      'tok',
      'https://hooks.example.com:443/webhooks/carrier_a/status',
      {
        CallSid: 'CA1',
        CallStatus: 'ringing',
      },
    );
    const credentials = { account_sid: 'AC1', auth_token: 'tok' };
    expect(
      adapter.verifyWebhook(credentials, {
        url: plain,
        method: 'POST',
        headers: { 'x-twilio-signature': signedWithPort },
        rawBody,
      }),
    ).toBe(true);
  });
});

describe('calls', () => {
  it('places a call: the simulator asks the answer URL, then reports signed statuses in order', async () => {
    sim.setCallOutcome('+14155550111', { status: 'completed', durationSeconds: 42 });
    const placed = await adapter.placeCall(ACCOUNT, callRequest('+14155550111', 11));
    expect(placed.callSid).toMatch(/^CA[0-9a-f]{32}$/);
    expect(placed.status).toBe('queued');
    await sim.settle();

    const request = sim.requests.find((r) => r.path.endsWith('/Calls.json'));
    expect(request?.headers['content-type']).toContain('application/x-www-form-urlencoded');
    expect(request?.body).toMatchObject({
      To: '+14155550111',
      From: '+14155550100',
      Method: 'POST',
      StatusCallbackMethod: 'POST',
      StatusCallbackEvent: ['initiated', 'ringing', 'answered', 'completed'],
    });
    const call = sim.calls.get(placed.callSid);
    expect(call?.answer?.body).toContain(
      '<Connect><Stream url="wss://platform.example/media/1"><Parameter name="token" value="t"/></Stream>',
    );

    const statuses = receiver.to('/status').filter((w) => w.rawBody.includes(placed.callSid));
    for (const webhook of statuses) expect(adapter.verifyWebhook(ACCOUNT, webhook)).toBe(true);
    const events = statuses.flatMap((w) => adapter.parseWebhook(w));
    expect(events.map((e) => (e.kind === 'call_status' ? e.status : e.kind))).toEqual([
      'queued',
      'ringing',
      'in-progress',
      'completed',
    ]);
    expect(events.at(-1)).toMatchObject({
      kind: 'call_status',
      callSid: placed.callSid,
      durationSeconds: 42,
    });
    expect(adapter.identifyWebhook(statuses[0]!)).toMatchObject({
      accountId: ACCOUNT.account_sid,
      callSid: placed.callSid,
      ourNumber: '+14155550100',
    });
    // The voice request is signed too, and another account's token does not verify it.
    const voice = receiver.to('/voice').find((w) => w.rawBody.includes(placed.callSid));
    expect(voice && adapter.verifyWebhook(ACCOUNT, voice)).toBe(true);
    expect(voice && adapter.verifyWebhook(OTHER, voice)).toBe(false);
  });

  it.each([
    ['busy', 'busy'],
    ['no-answer', 'no-answer'],
    ['failed', 'failed'],
    ['canceled', 'canceled'],
  ] as const)(
    'reports the outcome %s as the final status %s with no answer fetched',
    async (outcome, expected) => {
      const to = `+1415555${String(200 + ['busy', 'no-answer', 'failed', 'canceled'].indexOf(outcome)).padStart(4, '0')}`;
      sim.setCallOutcome(to, { status: outcome });
      const placed = await adapter.placeCall(ACCOUNT, callRequest(to, 12));
      await sim.settle();
      const events = receiver
        .to('/status')
        .filter((w) => w.rawBody.includes(placed.callSid))
        .flatMap((w) => adapter.parseWebhook(w));
      expect(events.at(-1)).toMatchObject({ kind: 'call_status', status: expected });
      expect(sim.calls.get(placed.callSid)?.answer).toBeUndefined();
    },
  );

  it('asks for asynchronous answering-machine detection to the end of the greeting, and parses its signed verdicts', async () => {
    sim.setCallOutcome('+14155550121', { status: 'completed', durationSeconds: 20, answeredBy: 'machine' });
    sim.setCallOutcome('+14155550122', { status: 'completed', durationSeconds: 20, answeredBy: 'human' });
    const machine = await adapter.placeCall(ACCOUNT, {
      ...callRequest('+14155550121', 21),
      detectMachine: true,
    });
    const human = await adapter.placeCall(ACCOUNT, {
      ...callRequest('+14155550122', 22),
      detectMachine: true,
    });
    await sim.settle();
    expect(sim.calls.get(machine.callSid)?.request).toMatchObject({
      MachineDetection: 'DetectMessageEnd',
      AsyncAmd: 'true',
      AsyncAmdStatusCallback: `${receiver.base}/status?call=21`,
      AsyncAmdStatusCallbackMethod: 'POST',
    });
    // The verdict comes alone (no CallStatus), signed like every callback.
    const verdicts = (callSid: string) =>
      receiver.to('/status').filter((w) => w.rawBody.includes(callSid) && !w.rawBody.includes('CallStatus'));
    for (const [placed, expected] of [
      [machine, { answeredBy: 'machine', greetingEnded: 'beep' }],
      [human, { answeredBy: 'human' }],
    ] as const) {
      const [verdict, ...more] = verdicts(placed.callSid);
      expect(more).toEqual([]);
      expect(adapter.verifyWebhook(ACCOUNT, verdict!)).toBe(true);
      expect(adapter.identifyWebhook(verdict!)).toMatchObject({ callSid: placed.callSid });
      expect(adapter.parseWebhook(verdict!)).toEqual([
        { kind: 'machine_detection', callSid: placed.callSid, ...expected },
      ]);
    }
    // Without detection the dial asks for none.
    const plain = await adapter.placeCall(ACCOUNT, callRequest('+14155550123', 23));
    expect(sim.calls.get(plain.callSid)?.request.MachineDetection).toBeUndefined();
  });

  it.each([
    ['machine_end_beep', [{ answeredBy: 'machine', greetingEnded: 'beep' }]],
    ['machine_end_silence', [{ answeredBy: 'machine', greetingEnded: 'other' }]],
    ['machine_end_other', [{ answeredBy: 'machine', greetingEnded: 'other' }]],
    ['machine_start', [{ answeredBy: 'machine' }]],
    ['fax', [{ answeredBy: 'machine' }]],
    ['human', [{ answeredBy: 'human' }]],
    ['unknown', []],
  ] as const)('reads the detection callback AnsweredBy=%s', (answeredBy, expected) => {
    const webhook = {
      url: 'https://platform.example/webhooks/carrier_a/status?call_id=1',
      method: 'POST',
      headers: {},
      rawBody: new URLSearchParams({
        CallSid: 'CA1',
        AccountSid: ACCOUNT.account_sid,
        AnsweredBy: answeredBy,
        MachineDetectionDuration: '2400',
      }).toString(),
    };
    expect(adapter.parseWebhook(webhook)).toEqual(
      expected.map((verdict) => ({ kind: 'machine_detection', callSid: 'CA1', ...verdict })),
    );
  });

  it('hangs up and transfers a call', async () => {
    const placed = await adapter.placeCall(ACCOUNT, callRequest('+14155550112', 13));
    await adapter.transfer(ACCOUNT, placed.callSid, '+14155550199');
    expect(sim.calls.get(placed.callSid)?.transferredTo).toBe('+14155550199');
    await adapter.hangUp(ACCOUNT, placed.callSid);
    expect(sim.calls.get(placed.callSid)?.hungUp).toBe(true);
    await expectProviderError(adapter.hangUp(ACCOUNT, 'CA00000000000000000000000000000bad'), false, 404);
  });

  it('answers markup that connects the audio to the stream URL, the token as a <Parameter>, escaped', () => {
    const markup = adapter.answerMarkup({ url: 'wss://h.example/media/1', token: 'a&b"<c>' });
    expect(markup.contentType).toBe('text/xml');
    expect(markup.body).toBe(
      '<?xml version="1.0" encoding="UTF-8"?><Response><Connect><Stream url="wss://h.example/media/1">' +
        '<Parameter name="token" value="a&amp;b&quot;&lt;c&gt;"/></Stream></Connect></Response>',
    );
  });

  it('verifies a media stream handshake signed over its wss URL with the auth token, and nothing else', () => {
    const url = 'wss://h.example/media-stream/7';
    const signed = (signature: string | undefined, at = url) => ({
      url: at,
      headers: signature === undefined ? {} : { 'x-twilio-signature': signature },
    });
    const good = carrierASignature(ACCOUNT.auth_token, url, {});
    expect(adapter.verifyMediaHandshake(ACCOUNT, signed(good))).toBe(true);
    // The carrier may sign with the default port written out.
    const withPort = carrierASignature(ACCOUNT.auth_token, 'wss://h.example:443/media-stream/7', {});
    expect(adapter.verifyMediaHandshake(ACCOUNT, signed(withPort))).toBe(true);
    expect(adapter.verifyMediaHandshake(ACCOUNT, signed(undefined))).toBe(false);
    expect(adapter.verifyMediaHandshake(ACCOUNT, signed(''))).toBe(false);
    expect(adapter.verifyMediaHandshake(ACCOUNT, signed(good, 'wss://h.example/media-stream/8'))).toBe(false);
    expect(adapter.verifyMediaHandshake(ACCOUNT, signed(good, 'https://h.example/media-stream/7'))).toBe(
      false,
    );
    const otherToken = carrierASignature(`${ACCOUNT.auth_token}x`, url, {});
    expect(adapter.verifyMediaHandshake(ACCOUNT, signed(otherToken))).toBe(false);
    expect(adapter.verifyMediaHandshake({ account_sid: ACCOUNT.account_sid }, signed(good))).toBe(false);
  });

  it('refuses a number that is not E.164 with a permanent error carrying the carrier code', async () => {
    const error = await adapter.placeCall(ACCOUNT, callRequest('4155550113', 14)).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ProviderError);
    expect(error).toMatchObject({ retryable: false, status: 400, options: { code: '21211' } });
  });
});

describe('messages', () => {
  it('sends an SMS and receives signed sent and delivered receipts', async () => {
    const sent = await adapter.sendMessage(ACCOUNT, {
      from: '+14155550100',
      to: '+14155550120',
      body: 'Hello there',
      mediaUrls: [],
      statusCallbackUrl: `${receiver.base}/sms-status`,
    });
    expect(sent).toMatchObject({ status: 'queued', segments: 1 });
    expect(sent.messageId).toMatch(/^SM/);
    await sim.settle();
    const receipts = receiver.to('/sms-status').filter((w) => w.rawBody.includes(sent.messageId));
    for (const receipt of receipts) expect(adapter.verifyWebhook(ACCOUNT, receipt)).toBe(true);
    expect(receipts.flatMap((w) => adapter.parseWebhook(w))).toEqual([
      { kind: 'message_status', messageId: sent.messageId, status: 'sent' },
      { kind: 'message_status', messageId: sent.messageId, status: 'delivered' },
    ]);
  });

  it('sends MMS media URLs and long texts in several segments; reports undelivered with its code', async () => {
    sim.setMessageOutcome('+14155550121', 'undelivered');
    const sent = await adapter.sendMessage(ACCOUNT, {
      from: '+14155550100',
      to: '+14155550121',
      body: 'x'.repeat(161),
      mediaUrls: ['https://cdn.example/a.png', 'https://cdn.example/b.png'],
      statusCallbackUrl: `${receiver.base}/sms-status`,
    });
    expect(sent.segments).toBe(2);
    expect(sim.messages.find((m) => m.id === sent.messageId)?.mediaUrls).toEqual([
      'https://cdn.example/a.png',
      'https://cdn.example/b.png',
    ]);
    await sim.settle();
    const final = receiver
      .to('/sms-status')
      .filter((w) => w.rawBody.includes(sent.messageId))
      .flatMap((w) => adapter.parseWebhook(w))
      .at(-1);
    expect(final).toEqual({
      kind: 'message_status',
      messageId: sent.messageId,
      status: 'undelivered',
      error: 'carrier error 30003',
    });
  });

  it('sends through a messaging service when one is given', async () => {
    await adapter.sendMessage(ACCOUNT, {
      from: '+14155550100',
      to: '+14155550122',
      body: 'via service',
      mediaUrls: [],
      statusCallbackUrl: `${receiver.base}/sms-status`,
      messagingServiceSid: 'MG123',
    });
    const request = sim.requests.filter((r) => r.path.endsWith('/Messages.json')).at(-1);
    expect(request?.body).toMatchObject({ MessagingServiceSid: 'MG123' });
    expect(request?.body).not.toHaveProperty('From');
  });

  it('parses a signed inbound message with media', async () => {
    await sim.sendInboundMessage({
      webhookUrl: `${receiver.base}/sms-in`,
      accountSid: ACCOUNT.account_sid,
      from: '+14155550130',
      to: '+14155550100',
      body: 'Hi!',
      mediaUrls: ['https://media.example/1.jpg'],
    });
    const webhook = receiver.to('/sms-in').at(-1)!;
    expect(adapter.verifyWebhook(ACCOUNT, webhook)).toBe(true);
    expect(adapter.identifyWebhook(webhook)).toMatchObject({ ourNumber: '+14155550100' });
    expect(adapter.parseWebhook(webhook)).toEqual([
      {
        kind: 'inbound_message',
        messageId: expect.stringMatching(/^SM/),
        from: '+14155550130',
        to: '+14155550100',
        body: 'Hi!',
        mediaUrls: ['https://media.example/1.jpg'],
      },
    ]);
  });
});

describe('credentials and failures', () => {
  it('validates credentials: accepted, refused (valid: false), never throwing for a refusal', async () => {
    await expect(adapter.validateCredentials(ACCOUNT)).resolves.toMatchObject({ valid: true });
    await expect(
      adapter.validateCredentials({ ...ACCOUNT, auth_token: 'wrong-token' }),
    ).resolves.toMatchObject({ valid: false });
  });

  it('a wrong auth token is a permanent 401 for every operation', async () => {
    const wrong = { ...ACCOUNT, auth_token: 'wrong-token' };
    await expectProviderError(adapter.placeCall(wrong, callRequest('+14155550140', 20)), false, 401);
    await expectProviderError(
      adapter.sendMessage(wrong, {
        from: '+14155550100',
        to: '+14155550141',
        body: 'x',
        mediaUrls: [],
        statusCallbackUrl: `${receiver.base}/sms-status`,
      }),
      false,
      401,
    );
  });

  it('server faults and rate limits are retryable; other client errors are permanent', async () => {
    sim.failNext(1, 503);
    await expectProviderError(adapter.placeCall(ACCOUNT, callRequest('+14155550150', 21)), true, 503);
    sim.failNext(1, 429);
    await expectProviderError(adapter.placeCall(ACCOUNT, callRequest('+14155550151', 22)), true, 429);
    sim.failNext(1, 400, { code: 21210, message: 'From is not a verified number' });
    await expectProviderError(adapter.placeCall(ACCOUNT, callRequest('+14155550152', 23)), false, 400);
  });

  it('a carrier that cannot be reached, or answers too slowly, is retryable', async () => {
    const unreachable = new CarrierAAdapter({ baseUrl: 'http://127.0.0.1:9' });
    await expectProviderError(unreachable.placeCall(ACCOUNT, callRequest('+14155550160', 24)), true);
    const impatient = new CarrierAAdapter({ baseUrl: sim.baseUrl, timeoutMs: 50 });
    sim.delayMs = 300;
    try {
      await expectProviderError(impatient.placeCall(ACCOUNT, callRequest('+14155550161', 25)), true);
    } finally {
      sim.delayMs = 0;
    }
  });
});
