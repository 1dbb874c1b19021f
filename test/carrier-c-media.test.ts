/**
 * carrier_c's media stream wire (`carrier-c-media.ts`) and the simulated carrier's side of it
 * (`carrier-c-phone.ts`): the documented messages (golden files under
 * test/fixtures/vendors/carrier_c-media/) read and written by both; then the real media route of a
 * listening platform with a recording runtime, on calls the carrier_c simulator rings in — a proven
 * stream's start and its binary audio both ways, notify and clear, what a clear does to the notifies
 * it empties, and each refusal (1008, nothing reaching the runtime). The shared cases are in the
 * conformance kit (carrier-c-media-conformance.test.ts), a whole call in carrier-c-call.test.ts.
 */
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { carrierCMedia } from '../src/providers/carriers/carrier-c-media.js';
import type { MediaHandshake } from '../src/providers/carriers/media.js';
import { CarrierCSimulator } from '../src/sim/carrier-c.js';
import { carrierCPhoneWire, websocketOfNcco } from '../src/sim/carrier-c-phone.js';
import { SimulatedPhone } from '../src/sim/phone.js';
import { audioLevel, encodeAudio, LINEAR16_16K, MULAW_8K, pcm16ToUlaw } from '../src/voice/audio.js';
import { REFUSED_REASON } from '../src/voice/media-stream.js';
import { carrierCOrganization } from './support/carrier-c-org.js';
import { Factories } from './support/factories.js';
import { startTestPlatform, type TestPlatform, waitFor } from './support/harness.js';
import { RecordingRuntime } from './support/recording-runtime.js';

const GOLDEN = 'test/fixtures/vendors/carrier_c-media';
const golden = (name: string) => readFileSync(join(GOLDEN, name), 'utf8');
const goldenJson = (name: string) => JSON.parse(golden(name)) as Record<string, unknown>;
const text = (message: string) => Buffer.from(message, 'utf8');
const HANDSHAKE: MediaHandshake = { url: 'wss://switchboard.test/media-stream/42', headers: {} };
const CONNECTED = goldenJson('websocket-connected.json');
const UUID = String(CONNECTED.call_uuid);

/** A reader past `websocket:connected`. */
function startedReader() {
  const reader = carrierCMedia.reader(HANDSHAKE);
  reader.read(text(golden('websocket-connected.json')), false);
  return reader;
}

/** `ms` of a 440 Hz tone as L16 16 kHz. */
function tone(ms: number, amplitude = 8000): Uint8Array {
  const samples = new Int16Array(16 * ms);
  for (let i = 0; i < samples.length; i++)
    samples[i] = Math.round(amplitude * Math.sin((2 * Math.PI * 440 * i) / 16000));
  return encodeAudio(LINEAR16_16K, samples);
}

describe('the documented messages', () => {
  it('websocket:connected is the start: its headers the parameters, the call uuid the call, L16 16 kHz', () => {
    const [event] = carrierCMedia.reader(HANDSHAKE).read(text(golden('websocket-connected.json')), false);
    const start = {
      streamId: UUID,
      callSid: UUID,
      parameters: { token: CONNECTED.token, call_uuid: UUID },
      format: LINEAR16_16K,
    };
    expect(event).toEqual({ type: 'start', start });
    expect(carrierCMedia.tokenOf(start as never, HANDSHAKE)).toBe(CONNECTED.token);
    // The simulated carrier says the same for the same headers.
    const wire = carrierCPhoneWire({
      callSid: UUID,
      accountSid: '',
      streamSid: '',
      parameters: start.parameters as Record<string, string>,
    });
    expect(wire.opening().map((message) => JSON.parse(String(message)))).toEqual([CONNECTED]);
  });

  it('after it: notify is a mark, cleared nothing, dtmf a key press, binary frames audio as they are', () => {
    const reader = startedReader();
    expect(reader.read(text(golden('notify-event.json')), false)).toEqual([{ type: 'mark', name: '0.1' }]);
    expect(reader.read(text(golden('cleared-event.json')), false)).toEqual([]);
    expect(reader.read(text(golden('dtmf-event.json')), false)).toEqual([{ type: 'dtmf', digit: '5' }]);
    const frame = Buffer.from(tone(20));
    expect(frame.length).toBe(640);
    expect(reader.read(frame, true)).toEqual([{ type: 'media', audio: new Uint8Array(frame) }]);
    // An event the carrier may add is nothing to the runtime, not a protocol error.
    expect(reader.read(text('{"event":"websocket:media:update"}'), false)).toEqual([]);
  });

  it('our marks, clears and audio are the documented notify and clear actions, and binary frames', () => {
    expect(JSON.parse(carrierCMedia.mark(UUID, '0.1'))).toEqual(goldenJson('notify-action.json'));
    expect(JSON.parse(carrierCMedia.clear(UUID))).toEqual(goldenJson('clear-action.json'));
    const audio = tone(20);
    const sent = carrierCMedia.media(UUID, audio);
    expect(Buffer.isBuffer(sent)).toBe(true);
    expect(new Uint8Array(sent as Buffer)).toEqual(audio);
  });

  it('the simulated carrier reads our actions and answers as documented; a clear drops the notifies it empties', () => {
    const wire = carrierCPhoneWire({ callSid: UUID, accountSid: '', streamSid: '', parameters: {} });
    expect(wire.read(text(golden('notify-action.json')), false)).toEqual({ event: 'mark', name: '0.1' });
    expect(JSON.parse(String(wire.markEcho('0.1')))).toEqual(goldenJson('notify-event.json'));
    expect(JSON.parse(String(wire.cleared?.()))).toEqual(goldenJson('cleared-event.json'));
    expect(JSON.parse(String(wire.dtmf('5')))).toEqual({
      ...goldenJson('dtmf-event.json'),
      duration: expect.any(Number),
    });
    expect(wire.stop()).toBeUndefined();

    wire.read(text(JSON.stringify({ action: 'notify', payload: { name: 'a' } })), false);
    wire.read(text(JSON.stringify({ action: 'notify', payload: { name: 'b' } })), false);
    expect(wire.read(text(golden('clear-action.json')), false)).toEqual({ event: 'clear' });
    expect(wire.markEcho('a')).toBeUndefined();
    expect(wire.markEcho('b')).toBeUndefined();
    wire.read(text(JSON.stringify({ action: 'notify', payload: { name: 'c', turn: 3 } })), false);
    // The payload comes back as it was sent.
    expect(JSON.parse(String(wire.markEcho('c')))).toEqual({
      event: 'websocket:notify',
      payload: { name: 'c', turn: 3 },
    });
  });

  it('the simulated carrier turns the caller’s μ-law 8 kHz into 640-byte L16 16 kHz frames, and ours back', () => {
    const wire = carrierCPhoneWire({ callSid: UUID, accountSid: '', streamSid: '', parameters: {} });
    const frames = [];
    for (let i = 0; i < 10; i++)
      frames.push(...wire.media(i, i * 20, pcm16ToUlaw(new Int16Array(160).fill(4000))));
    expect(frames.length).toBeGreaterThanOrEqual(9);
    for (const frame of frames) expect(frame.length).toBe(640);
    const level = audioLevel(LINEAR16_16K, frames[5] as Buffer);
    expect(level).toBeGreaterThan(3600);
    expect(level).toBeLessThan(4400);
    const played = wire.read(Buffer.from(tone(100)), true);
    expect(played.event).toBe('media');
    const ulaw = (played as { audio: Uint8Array }).audio;
    expect(Math.abs(ulaw.length - 800)).toBeLessThanOrEqual(16);
    expect(audioLevel(MULAW_8K, ulaw.subarray(80))).toBeGreaterThan(5000);
    expect(wire.read(Buffer.alloc(3), true)).toMatchObject({ event: 'invalid' });
  });

  it('refuses what the protocol does not allow', () => {
    const first =
      (data: Buffer, isBinary = false) =>
      () =>
        carrierCMedia.reader(HANDSHAKE).read(data, isBinary);
    expect(first(Buffer.from(tone(20)), true)).toThrow(/audio before websocket:connected/);
    expect(first(text('{"event":"websocket:connected"'))).toThrow(/not JSON/);
    expect(first(text(golden('notify-event.json')))).toThrow(/websocket:notify before websocket:connected/);
    expect(first(text(JSON.stringify({ ...CONNECTED, 'content-type': 'audio/l16;rate=8000' })))).toThrow(
      /content-type/,
    );
    const { call_uuid: _uuid, ...withoutUuid } = CONNECTED;
    expect(first(text(JSON.stringify(withoutUuid)))).toThrow(/without call_uuid/);
    const later =
      (data: Buffer, isBinary = false) =>
      () =>
        startedReader().read(data, isBinary);
    expect(later(Buffer.alloc(641), true)).toThrow(/odd number of bytes/);
    expect(later(text('{"event":"websocket:notify","payload":{}}'))).toThrow(/payload.name/);
    expect(later(text('[1,2]'))).toThrow(/not a JSON object/);
    expect(later(text('{"action":"clear"}'))).toThrow(/without event/);
  });
});

describe('the media route', () => {
  const sim = new CarrierCSimulator();
  const runtime = new RecordingRuntime();
  let t: TestPlatform;
  let f: Factories;
  let serial = 0;

  beforeAll(async () => {
    await sim.start();
    t = await startTestPlatform({ CARRIER_C_BASE_URL: sim.baseUrl }, { listen: true, callRuntime: runtime });
    f = new Factories(t);
  });
  afterAll(async () => {
    await sim.stop();
    await t.close();
  });

  /** A caller rings a fresh organization's number; the NCCO names the stream and its headers. */
  async function inboundCall() {
    const org = await carrierCOrganization(t, f, sim);
    serial += 1;
    const rang = await sim.sendInboundCall({
      answerUrl: `${t.baseUrl}/webhooks/carrier_c/voice`,
      from: `+1415222${String(1000 + serial).padStart(4, '0')}`,
      to: org.number,
      applicationId: org.applicationId,
    });
    const endpoint = websocketOfNcco(rang.answer?.body ?? '');
    if (!endpoint) throw new Error(`no websocket in ${rang.answer?.body}`);
    return {
      callId: Number(endpoint.uri.split('/').pop()),
      url: endpoint.uri,
      headers: endpoint.headers,
      uuid: rang.sid,
    };
  }

  interface Raw {
    socket: WebSocket;
    received: Array<{ binary: boolean; data: Buffer }>;
    closed: Promise<{ code: number; reason: string }>;
  }

  async function open(url: string): Promise<Raw> {
    const socket = new WebSocket(url);
    const received: Raw['received'] = [];
    socket.on('message', (data, binary) => received.push({ binary, data: data as Buffer }));
    const closed = new Promise<{ code: number; reason: string }>((resolve) =>
      socket.on('close', (code, reason) => resolve({ code, reason: String(reason) })),
    );
    await new Promise<void>((resolve, reject) => {
      socket.once('open', () => resolve());
      socket.once('error', reject);
    });
    return { socket, received, closed };
  }

  const connected = (headers: Record<string, string>, contentType = 'audio/l16;rate=16000') =>
    JSON.stringify({ event: 'websocket:connected', 'content-type': contentType, ...headers });

  const refusals = (since: number): string[] =>
    t.logs
      .slice(since)
      .map((line) => JSON.parse(line) as { msg?: string; reason?: string })
      .filter((line) => line.msg === 'media stream refused')
      .map((line) => line.reason ?? '');

  it('hands a proven stream to the runtime; audio is binary both ways, marks and clears are actions', async () => {
    const call = await inboundCall();
    expect(call.headers).toEqual({ token: expect.any(String), call_uuid: call.uuid });
    const raw = await open(call.url);
    raw.socket.send(connected(call.headers));
    const one = Buffer.from(tone(20, 1000));
    const two = Buffer.from(tone(20, 2000));
    raw.socket.send(one);
    raw.socket.send(JSON.stringify({ event: 'websocket:notify', payload: { name: 'greeting' } }));
    raw.socket.send(two);
    raw.socket.send(golden('cleared-event.json'));
    raw.socket.send(golden('dtmf-event.json'));

    const attached = await waitFor(() => runtime.of(call.callId)[0]);
    expect(attached.connection).toMatchObject({
      carrier: 'carrier_c',
      start: { streamId: call.uuid, callSid: call.uuid, parameters: call.headers, format: LINEAR16_16K },
    });
    await waitFor(() => attached.events.length >= 4);
    expect(attached.events).toEqual([
      { type: 'media', audio: one },
      { type: 'mark', name: 'greeting' },
      { type: 'media', audio: two },
      { type: 'dtmf', digit: '5' },
    ]);

    // 1000 bytes go out as a 640-byte frame and the rest, then the notify and the clear as text.
    const audio = Buffer.from(tone(32));
    attached.connection.send.media(audio);
    attached.connection.send.mark('said-hello');
    attached.connection.send.clear();
    await waitFor(() => raw.received.length >= 4);
    expect(
      raw.received.map((message) => (message.binary ? message.data : JSON.parse(String(message.data)))),
    ).toEqual([
      audio.subarray(0, 640),
      audio.subarray(640),
      { action: 'notify', payload: { name: 'said-hello' } },
      { action: 'clear' },
    ]);

    // carrier_c ends a call by closing the socket: the stream ends `closed`, once.
    raw.socket.close(1000);
    await waitFor(() => attached.events.at(-1)?.type === 'ended');
    expect(attached.events.slice(4)).toEqual([{ type: 'ended', reason: 'closed' }]);
    expect(t.logs.join('\n')).not.toContain(call.headers.token);
  });

  it('after a clear, the notifies it emptied never come back; later audio plays and its notify does', async () => {
    const call = await inboundCall();
    const phone = new SimulatedPhone({
      url: call.url,
      callSid: call.uuid,
      customParameters: call.headers,
      wire: carrierCPhoneWire,
    });
    await phone.connect();
    const attached = await waitFor(() => runtime.of(call.callId)[0]);
    const { send } = attached.connection;
    for (let i = 1; i <= 20; i++) {
      send.media(tone(100));
      send.mark(`a${i}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 350));
    send.clear();
    await waitFor(() => phone.clears.length === 1);
    await new Promise((resolve) => setTimeout(resolve, 800));
    const marks = () => attached.events.flatMap((event) => (event.type === 'mark' ? [event.name] : []));
    const echoed = marks();
    // What played before the clear came back in order; the rest was dropped with the audio — each
    // mark one or the other, whenever the clear arrived (a loaded machine delays it a little).
    expect(echoed.length).toBeGreaterThanOrEqual(1);
    expect(echoed).toEqual(echoed.map((_, i) => `a${i + 1}`));
    expect(phone.clears[0]!.marks.length).toBeGreaterThanOrEqual(10);
    expect(phone.clears[0]!.marks).toEqual(
      Array.from({ length: 20 - echoed.length }, (_, i) => `a${echoed.length + i + 1}`),
    );
    expect(phone.marks.filter((mark) => mark.cleared && mark.echoedAtMs !== undefined)).toEqual([]);

    send.media(tone(200));
    send.mark('after-clear');
    await waitFor(() => marks().includes('after-clear'), 3000);
    expect(marks()).toEqual([...echoed, 'after-clear']);
    expect(phone.errors).toEqual([]);
    await phone.hangUp();
  });

  describe('refuses, and nothing reaches the runtime', () => {
    const cases: Array<
      [
        string,
        (
          call: Awaited<ReturnType<typeof inboundCall>>,
        ) => Promise<Array<string | Buffer>> | Array<string | Buffer>,
        RegExp,
      ]
    > = [
      ['without a token', (call) => [connected({ call_uuid: call.uuid })], /without a token/],
      [
        'with a wrong token',
        (call) => [connected({ ...call.headers, token: 'not-a-token' })],
        /not this call's/,
      ],
      [
        "with another call's token",
        async (call) => [connected({ ...call.headers, token: (await inboundCall()).headers.token! })],
        /not this call's/,
      ],
      [
        "naming another call's uuid",
        (call) => [connected({ ...call.headers, call_uuid: randomUUID() })],
        /another carrier call/,
      ],
      [
        'for audio before websocket:connected',
        (call) => [Buffer.from(tone(20)), connected(call.headers)],
        /audio before websocket:connected/,
      ],
      ['for a malformed first message', () => ['{"event":"websocket:connected",'], /not JSON/],
      [
        'for another audio format',
        (call) => [connected(call.headers, 'audio/l16;rate=8000')],
        /content-type/,
      ],
    ];
    for (const [name, messages, why] of cases) {
      it(name, async () => {
        const call = await inboundCall();
        const toSend = await messages(call);
        const since = t.logs.length;
        const raw = await open(call.url);
        for (const message of toSend) raw.socket.send(message);
        raw.socket.send(Buffer.from(tone(20)));
        expect(await raw.closed).toEqual({ code: 1008, reason: REFUSED_REASON });
        expect(refusals(since)).toEqual([expect.stringMatching(why)]);
        expect(runtime.of(call.callId)).toEqual([]);
      });
    }

    it('with the token in the URL query only', async () => {
      const call = await inboundCall();
      const since = t.logs.length;
      const raw = await open(`${call.url}?token=${encodeURIComponent(call.headers.token!)}`);
      raw.socket.send(connected({ call_uuid: call.uuid }));
      expect(await raw.closed).toEqual({ code: 1008, reason: REFUSED_REASON });
      expect(refusals(since)).toEqual([expect.stringMatching(/without a token/)]);
      expect(runtime.of(call.callId)).toEqual([]);
    });
  });
});
