/**
 * carrier_b's media stream. First the wire alone: the vendor's documented messages (golden files
 * under fixtures/vendors/carrier_b-media) parse to exactly these events, what we send is the
 * documented client frames, and a stream's reader puts shuffled frames back in sequence, gives up on
 * a lost one after a few, and never holds more than its bound. Then the route, over a real listening
 * platform, the carrier_b simulator (which holds answered calls, so they stay live) and a real `ws`
 * client playing the carrier: a stream whose upgrade carries the dial's `stream_auth_token` reaches
 * a recording runtime, in order, as μ-law or A-law; every refusal closes with 1008 and nothing of
 * it reaches the runtime.
 */
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import {
  CARRIER_B_STREAM_TOKEN_HEADER,
  carrierBMedia,
  carrierBMediaMessages,
} from '../src/providers/carriers/carrier-b-media.js';
import { MediaProtocolError, type MediaReader } from '../src/providers/carriers/media.js';
import { DEFAULT_MAX_HELD } from '../src/providers/carriers/media-reorder.js';
import { CarrierBSimulator } from '../src/sim/carrier-b.js';
import { carrierBPhoneWire } from '../src/sim/carrier-b-phone-wire.js';
import { ALAW_8K, MULAW_8K } from '../src/voice/audio.js';
import { REFUSED_REASON } from '../src/voice/media-stream.js';
import { expectStatus, Factories, type TestUser } from './support/factories.js';
import { startTestPlatform, type TestPlatform, waitFor } from './support/harness.js';
import { RecordingRuntime } from './support/recording-runtime.js';

const golden = (name: string) =>
  readFileSync(new URL(`./fixtures/vendors/carrier_b-media/${name}.json`, import.meta.url), 'utf8');
const handshake = (headers: Record<string, string> = {}) => ({ url: 'wss://platform.example/x', headers });
const frame = (byte: number) => Buffer.alloc(160, byte);
const STREAM = 'stream-1';

/** A reader that has read a start (sequence 1); what `messages` then make, in order. */
function readAll(reader: MediaReader, messages: string[]) {
  return messages.flatMap((message) => reader.read(Buffer.from(message), false));
}

function started(): MediaReader {
  const reader = carrierBMedia.reader(handshake());
  reader.read(
    Buffer.from(carrierBMediaMessages.start(1, { streamId: STREAM, callControlId: 'v3:a', userId: 'u' })),
    false,
  );
  return reader;
}

const media = (sequence: number, byte: number, track: 'inbound' | 'outbound' = 'inbound') =>
  carrierBMediaMessages.media(sequence, STREAM, {
    track,
    chunk: sequence - 1,
    timestampMs: (sequence - 2) * 20,
    audio: frame(byte),
  });
const heard = (byte: number, sequence: number) => ({
  type: 'media',
  audio: frame(byte),
  timestampMs: (sequence - 2) * 20,
});

describe('the carrier_b wire', () => {
  it('parses the documented messages exactly', () => {
    const reader = carrierBMedia.reader(handshake());
    const events = [
      'connected',
      'start',
      'media',
      'media-outbound-track',
      'mark',
      'dtmf',
      'error',
      'stop',
    ].map((name) => reader.read(Buffer.from(golden(name)), false));
    expect(events).toEqual([
      [{ type: 'connected' }],
      [
        {
          type: 'start',
          start: {
            streamId: '32DE0DEA-53CB-4B21-89A4-9E1819C043BC',
            callSid: 'v2:T02llQxIyaRkhfRKxgAP8nY511EhFLizdvdUKJiSw8d6A9BborherQ',
            accountId: '3E6F995F-85F7-4705-9741-53B116D28237',
            parameters: { customer_id: 'customer_123' },
            format: MULAW_8K,
          },
        },
      ],
      // The golden media is sequence 4: 2 and 3 never came, so it waits behind them.
      [],
      [],
      [],
      [],
      // An error frame reports what the carrier refused of ours; nothing for the runtime.
      [],
      // `stop` releases what waited, in order, then ends.
      [
        { type: 'media', audio: Buffer.from(Array.from({ length: 160 }, (_, i) => 96 + i)), timestampMs: 5 },
        { type: 'mark', name: 'greeting-end' },
        { type: 'dtmf', digit: '1' },
        { type: 'stop' },
      ],
    ]);
  });

  it('sends the documented client frames, naming no stream', () => {
    const audio = Buffer.alloc(160, 0x7f);
    expect(JSON.parse(String(carrierBMedia.media(STREAM, audio)))).toEqual(
      JSON.parse(golden('client-media')),
    );
    expect(JSON.parse(carrierBMedia.mark(STREAM, 'greeting-end'))).toEqual(JSON.parse(golden('client-mark')));
    expect(JSON.parse(carrierBMedia.clear(STREAM))).toEqual(JSON.parse(golden('client-clear')));
  });

  it('takes the token from the upgrade header only', () => {
    const start = {
      streamId: STREAM,
      callSid: 'v3:a',
      parameters: { token: 'in-a-parameter' },
      format: MULAW_8K,
    };
    expect(carrierBMedia.tokenOf(start, handshake({ [CARRIER_B_STREAM_TOKEN_HEADER]: 'tok' }))).toBe('tok');
    expect(carrierBMedia.tokenOf(start, handshake())).toBeUndefined();
  });

  it('reads PCMA as A-law and refuses any other format', () => {
    const start = (codec: string) =>
      carrierBMediaMessages
        .start(1, { streamId: STREAM, callControlId: 'v3:a', userId: 'u' })
        .replace('PCMU', codec);
    const [event] = carrierBMedia.reader(handshake()).read(Buffer.from(start('PCMA')), false);
    expect(event).toMatchObject({ type: 'start', start: { format: ALAW_8K } });
    for (const codec of ['G722', 'OPUS', 'L16'])
      expect(() => carrierBMedia.reader(handshake()).read(Buffer.from(start(codec)), false)).toThrow(
        MediaProtocolError,
      );
  });

  it('puts shuffled frames back in sequence, with marks and key presses in their place', () => {
    const reader = started();
    const mark = carrierBMediaMessages.mark(5, STREAM, 'm');
    const dtmf = carrierBMediaMessages.dtmf(7, STREAM, '9');
    const events = readAll(reader, [
      media(3, 3),
      mark,
      media(2, 2),
      media(6, 6),
      dtmf,
      media(4, 4),
      media(8, 8),
    ]);
    expect(events).toEqual([
      heard(2, 2),
      heard(3, 3),
      heard(4, 4),
      { type: 'mark', name: 'm' },
      heard(6, 6),
      { type: 'dtmf', digit: '9' },
      heard(8, 8),
    ]);
  });

  it('gives up on a lost frame after a few, and drops it if it comes after all', () => {
    const reader = started();
    // 2 is lost: 3… wait behind it until more than the bound wait, then go on.
    const waiting = readAll(
      reader,
      Array.from({ length: DEFAULT_MAX_HELD }, (_, i) => media(i + 3, i + 3)),
    );
    expect(waiting).toEqual([]);
    const released = readAll(reader, [media(DEFAULT_MAX_HELD + 3, 99)]);
    expect(released.map((event) => (event.type === 'media' ? event.audio[0] : event.type))).toEqual([
      ...Array.from({ length: DEFAULT_MAX_HELD }, (_, i) => i + 3),
      99,
    ]);
    // The lost frame, late: heard out of place would be worse than not heard.
    expect(readAll(reader, [media(2, 2)])).toEqual([]);
    expect(readAll(reader, [media(DEFAULT_MAX_HELD + 4, 100)])).toEqual([heard(100, DEFAULT_MAX_HELD + 4)]);
  });

  it('hears only the inbound track, and the outbound track’s numbers do not stall it', () => {
    const reader = started();
    const events = readAll(reader, [
      media(2, 2),
      media(3, 0xaa, 'outbound'),
      media(4, 4),
      media(5, 0xbb, 'outbound'),
    ]);
    expect(events).toEqual([heard(2, 2), heard(4, 4)]);
  });

  it('never holds more than its bound, whatever the peer sends', () => {
    const reader = started();
    let out = 0;
    // Every other number missing, forever: each gap is given up on once the bound is passed.
    for (let sequence = 3; sequence < 2003; sequence += 2)
      out += readAll(reader, [media(sequence, 1)]).length;
    expect(out).toBeGreaterThanOrEqual(1000 - DEFAULT_MAX_HELD);
    const rest = readAll(reader, [carrierBMediaMessages.stop(3000, STREAM, 'u', 'v3:a')]);
    expect(rest.length).toBeLessThanOrEqual(DEFAULT_MAX_HELD + 1);
    expect(out + rest.length - 1).toBe(1000);
  });

  it('reads the simulated carrier’s disorder back in sequence: swapped frames in place, lost ones skipped', () => {
    const phone = carrierBPhoneWire({ swapEvery: 3, dropEvery: 7 })({
      callSid: 'v3:a',
      accountSid: 'u',
      streamSid: STREAM,
      parameters: {},
    });
    const reader = carrierBMedia.reader(handshake());
    const sent: string[] = [];
    for (const message of phone.opening()) reader.read(Buffer.from(String(message)), false);
    const events = [];
    for (let index = 0; index < 29; index += 1) {
      const messages = phone.media(index, index * 20, frame(index));
      sent.push(...messages.map((message) => JSON.parse(String(message)).media.chunk));
      events.push(...readAll(reader, messages.map(String)));
    }
    events.push(...readAll(reader, [String(phone.stop())]));
    // The simulated carrier really sent them out of order, and lost every seventh.
    expect(sent.slice(0, 9)).toEqual(['1', '2', '4', '3', '5', '6', '8', '10', '9']);
    expect(sent).not.toContain('14');
    // The platform hears them in order, without the lost ones (the last held one released by stop).
    const chunks = events.flatMap((event) => (event.type === 'media' ? [event.timestampMs! / 20 + 1] : []));
    // (A frame held back to be swapped is never the one lost: 21 goes out, after 22.)
    const expected = Array.from({ length: 29 }, (_, i) => i + 1).filter((n) => n % 7 !== 0 || n % 3 === 0);
    expect(chunks).toEqual(expected);
  });

  it('refuses what the protocol does not allow', () => {
    const bad = [
      'not json',
      '[1]',
      '{"event":"hello"}',
      '{"event":"media","sequence_number":"2","media":{"track":"inbound"}}',
      '{"event":"media","sequence_number":"-1","media":{"payload":""}}',
      '{"event":"start","sequence_number":"1","start":{"media_format":{"encoding":"PCMU","sample_rate":8000}}}',
      '{"event":"mark","sequence_number":"3","mark":{}}',
    ];
    for (const message of bad)
      expect(() => started().read(Buffer.from(message), false), message).toThrow(MediaProtocolError);
    expect(() => started().read(Buffer.from(media(2, 2)), true)).toThrow(MediaProtocolError);
  });
});

// ——— the route ———

const sim = new CarrierBSimulator();
const runtime = new RecordingRuntime();
let t: TestPlatform;
let f: Factories;
let serial = 0;

beforeAll(async () => {
  // Answered calls stay connected until hung up: a stream needs a live call.
  sim.holdAnsweredCalls = true;
  await sim.start();
  t = await startTestPlatform({ CARRIER_B_BASE_URL: sim.baseUrl }, { listen: true, callRuntime: runtime });
  f = new Factories(t);
});
afterAll(async () => {
  await sim.stop();
  await t.close();
});

interface LiveCall {
  callId: number;
  callSid: string;
  /** The stream URL and token the dial gave the carrier. */
  url: string;
  token: string;
  admin: TestUser;
  userId: string;
}

const nextNumber = () => `+1415666${String(1000 + ++serial).padStart(4, '0')}`;

/** An organization with carrier_b credentials, an assistant and a number; a call placed to someone. */
async function placeCall(admin?: TestUser): Promise<LiveCall> {
  const owner = admin ?? (await f.user());
  if (!admin) {
    const account = { api_key: `KEY-${++serial}`, connection_id: `app-${serial}` };
    sim.addAccount(account);
    expectStatus(
      await t.app.inject({
        method: 'PUT',
        url: '/api/v1/organization',
        headers: owner.headers,
        payload: { carrier_b: { ...account, public_key: sim.publicKey } },
      }),
      200,
    );
  }
  const number = nextNumber();
  const assistant = await t.app.inject({
    method: 'POST',
    url: '/api/v1/assistants',
    headers: owner.headers,
    payload: { name: `Caller ${serial}` },
  });
  expectStatus(assistant, 201);
  expectStatus(
    await t.app.inject({
      method: 'POST',
      url: '/api/v1/phone-numbers',
      headers: owner.headers,
      payload: { phone_number: number, provider: 'carrier_b', assistant_id: assistant.json().id },
    }),
    201,
  );
  const placed = await t.app.inject({
    method: 'POST',
    url: '/calls/initiate',
    headers: owner.headers,
    payload: { from_phone_number: number, to_phone_number: nextNumber() },
  });
  expectStatus(placed, 200);
  const { call_id: callId, call_sid: callSid } = placed.json() as { call_id: number; call_sid: string };
  await sim.settle();
  const request = sim.calls.get(callSid)!.request;
  return {
    callId,
    callSid,
    url: String(request.stream_url),
    token: String(request.stream_auth_token),
    admin: owner,
    userId: `user-${String(request.connection_id)}`,
  };
}

/** The carrier's side of one stream: a real client with the token header, recording what it gets. */
class CarrierBStream {
  readonly received: unknown[] = [];
  readonly closed: Promise<{ code: number; reason: string }>;
  readonly streamId = `stream-${++serial}`;
  #sequence = 0;

  constructor(readonly socket: WebSocket) {
    socket.on('message', (data) => this.received.push(JSON.parse(String(data))));
    this.closed = new Promise((resolve) =>
      socket.on('close', (code, reason) => resolve({ code, reason: String(reason) })),
    );
  }

  static async open(url: string, token?: string): Promise<CarrierBStream> {
    const socket = new WebSocket(url, { headers: token ? { [CARRIER_B_STREAM_TOKEN_HEADER]: token } : {} });
    const stream = new CarrierBStream(socket);
    await new Promise((resolve, reject) => socket.once('open', resolve).once('error', reject));
    return stream;
  }

  next = () => ++this.#sequence;
  send = (message: string) => this.socket.send(message);

  start(call: LiveCall, options: { codec?: 'PCMU' | 'PCMA'; callSid?: string } = {}): void {
    this.send(carrierBMediaMessages.connected());
    this.send(
      carrierBMediaMessages.start(this.next(), {
        streamId: this.streamId,
        callControlId: options.callSid ?? call.callSid,
        userId: call.userId,
        ...(options.codec ? { codec: options.codec } : {}),
      }),
    );
  }

  /** The frame numbered `sequence` (the stream's second message is frame 1). */
  media(sequence: number, audio: Uint8Array): string {
    return carrierBMediaMessages.media(sequence, this.streamId, {
      chunk: sequence - 1,
      timestampMs: (sequence - 2) * 20,
      audio,
    });
  }
}

function refusals(since: number): string[] {
  return t.logs
    .slice(since)
    .map((line) => JSON.parse(line) as { msg?: string; reason?: string })
    .filter((line) => line.msg === 'media stream refused')
    .map((line) => line.reason ?? '');
}

async function expectRefused(stream: CarrierBStream, since: number, why: RegExp, callId: number) {
  expect(await stream.closed).toEqual({ code: 1008, reason: REFUSED_REASON });
  expect(refusals(since)).toEqual([expect.stringMatching(why)]);
  expect(runtime.of(callId)).toEqual([]);
}

describe('a proven carrier_b stream', () => {
  it('reaches the runtime with its start and its frames in sequence; the runtime speaks carrier_b back', async () => {
    const call = await placeCall();
    // The dial gave the stream URL without a query: the token travels as stream_auth_token.
    expect(new URL(call.url).search).toBe('');
    expect(new URL(call.url).pathname).toBe(`/media-stream/${call.callId}`);
    const stream = await CarrierBStream.open(call.url, call.token);
    stream.start(call);
    // Frames 2…6 as the carrier may deliver them: out of order, a mark among them.
    for (const sequence of [3, 2, 5, 4]) stream.send(stream.media(sequence, frame(sequence)));
    stream.send(carrierBMediaMessages.dtmf(7, stream.streamId, '5'));
    stream.send(carrierBMediaMessages.mark(6, stream.streamId, 'greeting'));

    const attached = await waitFor(() => runtime.of(call.callId)[0]);
    expect(attached.connection).toMatchObject({
      callId: call.callId,
      tenant: { organizationId: call.admin.organizationId },
      carrier: 'carrier_b',
      start: { streamId: stream.streamId, callSid: call.callSid, accountId: call.userId, format: MULAW_8K },
    });
    await waitFor(() => attached.events.length >= 6);
    expect(attached.events).toEqual([
      heard(2, 2),
      heard(3, 3),
      heard(4, 4),
      heard(5, 5),
      { type: 'mark', name: 'greeting' },
      { type: 'dtmf', digit: '5' },
    ]);

    const audio = Buffer.alloc(200, 0x55);
    attached.connection.send.media(audio);
    attached.connection.send.mark('said-hello');
    attached.connection.send.clear();
    await waitFor(() => stream.received.length >= 4);
    expect(stream.received).toEqual([
      { event: 'media', media: { payload: audio.subarray(0, 160).toString('base64') } },
      { event: 'media', media: { payload: audio.subarray(160).toString('base64') } },
      { event: 'mark', mark: { name: 'said-hello' } },
      { event: 'clear' },
    ]);

    stream.send(carrierBMediaMessages.stop(8, stream.streamId, call.userId, call.callSid));
    expect((await stream.closed).code).toBe(1000);
    await waitFor(() => attached.events.at(-1)?.type === 'ended');
    expect(attached.events.slice(6)).toEqual([{ type: 'ended', reason: 'stop' }]);
    expect(t.logs.join('\n')).not.toContain(call.token);
  });

  it('goes on past a lost frame', async () => {
    const call = await placeCall();
    const stream = await CarrierBStream.open(call.url, call.token);
    stream.start(call);
    // Frame 2 never comes.
    for (let sequence = 3; sequence <= DEFAULT_MAX_HELD + 3; sequence += 1)
      stream.send(stream.media(sequence, frame(sequence)));
    const attached = await waitFor(() => runtime.of(call.callId)[0]);
    await waitFor(() => attached.events.length >= DEFAULT_MAX_HELD + 1);
    expect(attached.events.map((event) => (event.type === 'media' ? event.audio[0] : event.type))).toEqual(
      Array.from({ length: DEFAULT_MAX_HELD + 1 }, (_, i) => i + 3),
    );
    stream.socket.close(1000);
  });

  it('streams a PCMA call as A-law both ways', async () => {
    const call = await placeCall();
    const stream = await CarrierBStream.open(call.url, call.token);
    stream.start(call, { codec: 'PCMA' });
    stream.send(stream.media(2, frame(0xd5)));
    const attached = await waitFor(() => runtime.of(call.callId)[0]);
    expect(attached.connection.start.format).toEqual(ALAW_8K);
    await waitFor(() => attached.events.length >= 1);
    expect(attached.events).toEqual([heard(0xd5, 2)]);
    attached.connection.send.media(frame(0xd5));
    await waitFor(() => stream.received.length >= 1);
    expect(stream.received).toEqual([{ event: 'media', media: { payload: frame(0xd5).toString('base64') } }]);
    stream.socket.close(1000);
  });
});

describe('a carrier_b stream refused before any audio reaches the runtime', () => {
  let call: LiveCall;
  beforeAll(async () => {
    call = await placeCall();
  });

  async function startWith(token: string | undefined, url = call.url, options = {}) {
    const stream = await CarrierBStream.open(url, token);
    stream.start(call, options);
    stream.send(stream.media(2, frame(1)));
    return stream;
  }

  it('without a token', async () => {
    const since = t.logs.length;
    await expectRefused(await startWith(undefined), since, /without a token/, call.callId);
  });

  it('with a wrong token', async () => {
    const since = t.logs.length;
    await expectRefused(await startWith('not-a-token'), since, /not this call's/, call.callId);
  });

  it('with the token in the URL’s query only', async () => {
    const since = t.logs.length;
    const url = `${call.url}?token=${encodeURIComponent(call.token)}`;
    await expectRefused(await startWith(undefined, url), since, /without a token/, call.callId);
  });

  it("with another call's token, of this organization or another", async () => {
    const sibling = await placeCall(call.admin);
    const stranger = await placeCall();
    for (const other of [sibling, stranger]) {
      const since = t.logs.length;
      await expectRefused(await startWith(other.token), since, /not this call's/, call.callId);
      expect(runtime.of(other.callId)).toEqual([]);
    }
  });

  it('naming another carrier call', async () => {
    const since = t.logs.length;
    const stream = await startWith(call.token, call.url, { callSid: 'v3:someone-else' });
    await expectRefused(stream, since, /another carrier call/, call.callId);
  });

  it('with audio before start', async () => {
    const since = t.logs.length;
    const stream = await CarrierBStream.open(call.url, call.token);
    stream.send(carrierBMediaMessages.connected());
    stream.send(stream.media(2, frame(1)));
    await expectRefused(stream, since, /media before a proven start/, call.callId);
  });

  it('with a malformed message', async () => {
    for (const message of ['{"event":"start"', '{"event":"start","sequence_number":"1","start":{}}']) {
      const since = t.logs.length;
      const stream = await CarrierBStream.open(call.url, call.token);
      stream.send(message);
      await expectRefused(stream, since, /protocol error/, call.callId);
    }
  });
});
