/**
 * The simulated phone against a small platform of the test's own (a real HTTP and WebSocket server on
 * loopback that sends media, marks and clears), then hooked into the carrier_a simulator: the phone
 * connects from answer markup with a valid signature, and the call lasts as long as its media does.
 */
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type WebSocket from 'ws';
import { WebSocketServer } from 'ws';
import { CarrierAAdapter, carrierASignature } from '../src/providers/carriers/carrier-a.js';
import { carrierAMedia } from '../src/providers/carriers/carrier-a-media.js';
import { CarrierASimulator } from '../src/sim/carrier-a.js';
import { streamOfMarkup } from '../src/sim/carrier-a-phone.js';
import { SimulatedPhone } from '../src/sim/phone.js';
import { voiceFixture } from '../src/sim/phone-voice.js';
import { pcm16ToUlaw } from '../src/voice/audio.js';

/** A message the phone sent, loosely typed: each test reads the fields of its event. */
interface Json {
  event: string;
  sequenceNumber?: string;
  streamSid: string;
  media: { track: string; chunk: string; timestamp: string; payload: string };
  mark: { name: string };
  start: Record<string, unknown>;
  stop: Record<string, string>;
}

/** One media stream as the platform side sees it. */
class Stream {
  readonly messages: Array<{ at: number; message: Json }> = [];
  readonly #listeners = new Set<() => void>();
  closed = false;

  constructor(
    readonly socket: WebSocket,
    readonly path: string,
    readonly headers: IncomingHttpHeaders,
  ) {
    socket.on('message', (data) => {
      this.messages.push({ at: performance.now(), message: JSON.parse(data.toString()) });
      for (const listener of this.#listeners) listener();
    });
    socket.on('close', () => {
      this.closed = true;
      for (const listener of this.#listeners) listener();
    });
  }

  events(event: string): Array<{ at: number; message: Json }> {
    return this.messages.filter((entry) => entry.message.event === event);
  }

  /** Resolves when `ready` holds (checked on each message and on close). */
  until<T>(ready: () => T | undefined | false, timeoutMs = 5000): Promise<T> {
    return new Promise((resolve, reject) => {
      const check = () => {
        const value = ready();
        if (value === undefined || value === false) return;
        this.#listeners.delete(check);
        clearTimeout(timer);
        resolve(value);
      };
      const timer = setTimeout(() => {
        this.#listeners.delete(check);
        reject(new Error('stream condition not reached'));
      }, timeoutMs);
      this.#listeners.add(check);
      check();
    });
  }

  get streamSid(): string {
    return this.events('start')[0]!.message.streamSid;
  }

  media(audio: Uint8Array): void {
    this.socket.send(carrierAMedia.media(this.streamSid, audio));
  }
  mark(name: string): void {
    this.socket.send(carrierAMedia.mark(this.streamSid, name));
  }
  clear(): void {
    this.socket.send(carrierAMedia.clear(this.streamSid));
  }
}

/** The test's platform: answers voice webhooks with markup, records callbacks, accepts streams. */
class Platform {
  readonly streams: Stream[] = [];
  readonly callbacks: Array<{ path: string; form: Record<string, string>; headers: IncomingHttpHeaders }> =
    [];
  /** What a stream does once it has started (the platform closing it, say). */
  onStart: ((stream: Stream) => void) | undefined;
  readonly #server: Server;
  readonly #sockets = new WebSocketServer({ noServer: true });
  readonly #waiting: Array<(stream: Stream) => void> = [];
  port = 0;

  constructor() {
    this.#server = createServer(async (req, res) => {
      let raw = '';
      for await (const chunk of req) raw += chunk;
      const url = new URL(req.url ?? '/', 'http://platform');
      this.callbacks.push({
        path: url.pathname,
        form: Object.fromEntries(new URLSearchParams(raw)),
        headers: req.headers,
      });
      if (url.pathname === '/voice') {
        const call = url.searchParams.get('call') ?? '0';
        res
          .writeHead(200, { 'content-type': 'text/xml' })
          .end(
            '<?xml version="1.0" encoding="UTF-8"?><Response><Connect>' +
              `<Stream url="${this.wsBase}/media-stream/${call}?token=dropped">` +
              `<Parameter name="token" value="tok&amp;${call}"/><Parameter name='callId' value="${call}"/>` +
              '</Stream></Connect></Response>',
          );
      } else res.writeHead(204).end();
    });
    this.#server.on('upgrade', (request, socket, head) => {
      this.#sockets.handleUpgrade(request, socket, head, (ws) => {
        const stream = new Stream(ws, request.url ?? '', request.headers);
        this.streams.push(stream);
        void stream.until(() => stream.events('start').length > 0).then(() => this.onStart?.(stream));
        this.#waiting.shift()?.(stream);
      });
    });
  }

  get base(): string {
    return `http://127.0.0.1:${this.port}`;
  }
  get wsBase(): string {
    return `ws://127.0.0.1:${this.port}`;
  }

  nextStream(): Promise<Stream> {
    return new Promise((resolve) => this.#waiting.push(resolve));
  }

  status(callSid: string): Array<Record<string, string>> {
    return this.callbacks
      .filter((c) => c.path === '/status' && c.form.CallSid === callSid)
      .map((c) => c.form);
  }

  async start(): Promise<void> {
    await new Promise<void>((resolve) => this.#server.listen(0, '127.0.0.1', resolve));
    const address = this.#server.address();
    this.port = typeof address === 'object' && address ? address.port : 0;
  }

  async stop(): Promise<void> {
    for (const client of this.#sockets.clients) client.terminate();
    this.#server.closeAllConnections();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }
}

/** `ms` of a loud 440 Hz tone, μ-law. */
function tone(ms: number): Uint8Array {
  const samples = new Int16Array(ms * 8);
  for (let i = 0; i < samples.length; i++)
    samples[i] = Math.round(8000 * Math.sin((2 * Math.PI * 440 * i) / 8000));
  return pcm16ToUlaw(samples);
}

const silence = (ms: number) => new Uint8Array(ms * 8).fill(0xff);
const payload = (entry: { message: Json }) => Buffer.from(entry.message.media.payload, 'base64');
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const platform = new Platform();
beforeAll(() => platform.start());
afterAll(() => platform.stop());

/** A phone connected to the test platform, and the platform's side of its stream. */
async function connected(options: Partial<ConstructorParameters<typeof SimulatedPhone>[0]> = {}) {
  const next = platform.nextStream();
  const phone = new SimulatedPhone({ url: `${platform.wsBase}/media-stream/1`, ...options });
  await phone.connect();
  const stream = await next;
  await stream.until(() => stream.events('media').length > 0);
  return { phone, stream };
}

describe('the simulated phone', () => {
  it('sends connected, then start with the stream, call, account and custom parameters', async () => {
    const { phone, stream } = await connected({
      headers: { 'x-twilio-signature': 'sig' },
      callSid: 'CA1',
      accountSid: 'AC1',
      customParameters: { token: 'the-token' },
    });
    expect(stream.headers['x-twilio-signature']).toBe('sig');
    expect(stream.messages[0]!.message).toEqual({ event: 'connected', protocol: 'Call', version: '1.0.0' });
    const start = stream.messages[1]!.message;
    expect(start).toMatchObject({
      event: 'start',
      sequenceNumber: '1',
      streamSid: phone.streamSid,
      start: {
        callSid: 'CA1',
        accountSid: 'AC1',
        customParameters: { token: 'the-token' },
        mediaFormat: { encoding: 'audio/x-mulaw', sampleRate: 8000, channels: 1 },
      },
    });
    // What the platform's own parser makes of it.
    const handshake = { url: 'wss://example.test/media-stream/1', headers: {} };
    const [parsed] = carrierAMedia.reader(handshake).read(Buffer.from(JSON.stringify(start)), false);
    expect(parsed?.type === 'start' && carrierAMedia.tokenOf(parsed.start, handshake)).toBe('the-token');
    await phone.hangUp();
  });

  it('streams a silent 160-byte frame every 20 ms, chunk and timestamp counting up, in real time', async () => {
    const { phone, stream } = await connected();
    const frames = await stream.until(() => {
      const media = stream.events('media');
      return media.length >= 26 && media;
    });
    await phone.hangUp();
    frames.slice(0, 26).forEach((entry, i) => {
      expect(entry.message.media).toMatchObject({
        track: 'inbound',
        chunk: String(i + 1),
        timestamp: String(i * 20),
      });
      expect(payload(entry)).toEqual(Buffer.alloc(160, 0xff));
    });
    const sequences = stream.messages.slice(1).map((entry) => Number(entry.message.sequenceNumber));
    expect(sequences).toEqual(sequences.map((_, i) => i + 1));
    // 25 frame intervals are 500 ms of audio; loose bounds, for a shared machine.
    const elapsed = frames[25]!.at - frames[0]!.at;
    expect(elapsed).toBeGreaterThan(400);
    expect(elapsed).toBeLessThan(900);
  });

  it('says a fixture intact, frame-aligned, and resolves with when it was said', async () => {
    const { phone, stream } = await connected();
    const spoken = await phone.say('uh-huh');
    await phone.hangUp();
    const audio = Buffer.concat(stream.events('media').map(payload));
    const fixture = Buffer.from(voiceFixture('uh-huh'));
    const at = audio.indexOf(fixture);
    expect(at).toBeGreaterThan(0);
    expect(at % 160).toBe(0);
    // Silence before it; its last frame is padded with silence.
    const frames = Math.ceil(fixture.length / 160);
    expect(audio.subarray(at - 160, at)).toEqual(Buffer.alloc(160, 0xff));
    expect(audio.subarray(at + fixture.length, at + frames * 160)).toEqual(
      Buffer.alloc(frames * 160 - fixture.length, 0xff),
    );
    expect(spoken).toMatchObject({ name: 'uh-huh', bytes: fixture.length });
    expect(spoken.endMs - spoken.startMs).toBeGreaterThan((frames - 1) * 20 * 0.7);
    expect(spoken.speechStartMs).toBe(spoken.startMs);
    expect(spoken.speechEndMs!).toBeLessThan(spoken.endMs);
    expect(phone.utterances).toEqual([spoken]);
  });

  it('echoes a mark only once the audio before it has played; at once when nothing is queued', async () => {
    const { phone, stream } = await connected();
    stream.mark('empty');
    const sentAt = performance.now();
    stream.media(tone(400));
    stream.mark('after-tone');
    const echoes = await stream.until(() => {
      const marks = stream.events('mark');
      return marks.length === 2 && marks;
    });
    expect(echoes.map((entry) => entry.message.mark.name)).toEqual(['empty', 'after-tone']);
    expect(echoes[0]!.message).toMatchObject({ streamSid: phone.streamSid });
    expect(echoes[1]!.at - sentAt).toBeGreaterThanOrEqual(400);
    const [empty, afterTone] = phone.marks;
    expect(empty!.playedAtMs).toBe(empty!.receivedAtMs);
    // Played once the tone's 400 ms had, counted from the tone's arrival: from the mark's own
    // arrival it is less by however long the busy test process took between the two messages
    // (13 ms once under a full suite).
    const toneAt = phone.received.find((message) => message.event === 'media')!.atMs;
    expect(afterTone!.playedAtMs! - toneAt).toBeGreaterThan(399.9);
    expect(afterTone!.playedAtMs!).toBeGreaterThan(afterTone!.receivedAtMs);
    expect(afterTone!.echoedAtMs!).toBeGreaterThanOrEqual(afterTone!.playedAtMs!);
    expect(afterTone!.cleared).toBe(false);
    await phone.hangUp();
  });

  it('clear drops the unplayed audio and echoes every pending mark at once', async () => {
    const { phone, stream } = await connected();
    stream.media(tone(2000));
    stream.mark('a');
    stream.media(tone(1000));
    stream.mark('b');
    await phone.waitForSpeech({ timeoutMs: 2000 });
    await sleep(200);
    const clearedAt = performance.now();
    stream.clear();
    const echoes = await stream.until(() => {
      const marks = stream.events('mark');
      return marks.length === 2 && marks;
    });
    expect(echoes.map((entry) => entry.message.mark.name)).toEqual(['a', 'b']);
    expect(echoes[1]!.at - clearedAt).toBeLessThan(1000);
    expect(phone.marks.every((mark) => mark.cleared)).toBe(true);
    const [clear] = phone.clears;
    expect(clear!.marks).toEqual(['a', 'b']);
    expect(clear!.droppedBytes + phone.playedBytes).toBe(3000 * 8);
    expect(clear!.droppedBytes).toBeGreaterThan(1000 * 8);
    expect(phone.bufferedBytes).toBe(0);
    // What was heard stops where the clear cut it.
    await phone.waitForSilence({ ms: 100, timeoutMs: 2000 });
    expect(phone.heardSegments).toHaveLength(1);
    expect(phone.heardSegments[0]!.endMs).toBeCloseTo(clear!.atMs, 0);
    await phone.hangUp();
  });

  it('hears what the platform sent: segments by energy, with their lengths and the gap between', async () => {
    const { phone, stream } = await connected({ recordAudio: true });
    stream.media(tone(300));
    stream.media(silence(500));
    stream.media(tone(200));
    stream.media(silence(100)); // a pause shorter than the gap tolerance stays inside a segment
    stream.media(tone(100));
    const first = await phone.waitForSpeech({ timeoutMs: 2000 });
    await phone.waitForSilence({ ms: 600, timeoutMs: 3000 });
    const [one, two] = phone.heardSegments;
    expect(phone.heardSegments).toHaveLength(2);
    expect(first).toBe(one);
    expect(one!.endMs - one!.startMs).toBeCloseTo(300, 6);
    expect(two!.startMs - one!.endMs).toBeCloseTo(500, 6);
    expect(two!.endMs - two!.startMs).toBeCloseTo(400, 6);
    expect(phone.playedBytes).toBe(1200 * 8);
    const played = Buffer.concat(phone.playedAudio().map((piece) => piece.audio));
    expect(played).toEqual(Buffer.concat([tone(300), silence(500), tone(200), silence(100), tone(100)]));
    await phone.hangUp();
  });

  it('hangs up with stop naming the call, then closes; the platform closing is recorded as such', async () => {
    const { phone, stream } = await connected({ callSid: 'CA9', accountSid: 'AC9' });
    phone.dtmf('5');
    const close = await phone.hangUp();
    await stream.until(() => stream.closed);
    const events = stream.messages.map((entry) => entry.message.event);
    expect(events.at(-1)).toBe('stop');
    expect(events).toContain('dtmf');
    expect(stream.events('stop')[0]!.message).toMatchObject({
      streamSid: phone.streamSid,
      stop: { callSid: 'CA9', accountSid: 'AC9' },
    });
    expect(close).toMatchObject({ by: 'phone', code: 1000 });
    await expect(phone.say('uh-huh')).rejects.toThrow(/ended/);

    const other = await connected();
    other.stream.socket.close(4000, 'done');
    expect(await other.phone.waitForClose({ timeoutMs: 2000 })).toMatchObject({
      by: 'platform',
      code: 4000,
      reason: 'done',
    });
    expect(other.stream.events('stop')).toEqual([]);
  });
});

describe('the carrier_a simulator with a phone', () => {
  const ACCOUNT = { account_sid: 'AC00000000000000000000000000000077', auth_token: 'token-seven-0123456789' };
  const sim = new CarrierASimulator();
  let adapter: CarrierAAdapter;
  let callId = 100;

  beforeAll(async () => {
    await sim.start();
    sim.addAccount(ACCOUNT);
    adapter = new CarrierAAdapter({ baseUrl: sim.baseUrl });
  });
  afterAll(() => sim.stop());

  async function place(to: string) {
    callId += 1;
    const stream = platform.nextStream();
    const placed = await adapter.placeCall(ACCOUNT, {
      from: '+14155550100',
      to,
      callId,
      answerUrl: `${platform.base}/voice?call=${callId}`,
      statusCallbackUrl: `${platform.base}/status?call=${callId}`,
      stream: { url: 'wss://unused.invalid/media-stream/0', token: 'unused' },
    });
    return { callSid: placed.callSid, stream: await stream, id: callId };
  }

  it('reads the stream and its parameters from answer markup', () => {
    expect(
      streamOfMarkup(
        `<Response><Connect><Stream name="s" url='wss://h/m/1'><Parameter name="token" value="a&lt;b"/></Stream></Connect></Response>`,
      ),
    ).toEqual({ url: 'wss://h/m/1', parameters: { token: 'a<b' } });
    expect(streamOfMarkup('<Response><Connect><Stream url="wss://h/m/2"/></Connect></Response>')).toEqual({
      url: 'wss://h/m/2',
      parameters: {},
    });
    expect(streamOfMarkup('<Response><Hangup/></Response>')).toBeUndefined();
  });

  it('connects the phone with a valid signature, keeps the call in progress until the script ends', async () => {
    let release!: () => void;
    const released = new Promise<void>((resolve) => {
      release = resolve;
    });
    sim.setPhone('+14155550111', async (phone) => {
      await phone.say('uh-huh');
      await released;
    });
    const { callSid, stream, id } = await place('+14155550111');
    await stream.until(() => stream.events('start').length > 0);
    const url = `${platform.wsBase}/media-stream/${id}`;
    expect(stream.path).toBe(`/media-stream/${id}`); // the query string is dropped
    expect(stream.headers['x-twilio-signature']).toBe(carrierASignature(ACCOUNT.auth_token, url, {}));
    expect(stream.events('start')[0]!.message.start).toMatchObject({
      callSid,
      accountSid: ACCOUNT.account_sid,
      customParameters: { token: `tok&${id}`, callId: String(id) },
    });
    await sleep(1200);
    expect(sim.phoneCalls.get(callSid)!.phone.close).toBeUndefined();
    expect(sim.calls.get(callSid)!.status).toBe('in-progress');
    expect(platform.status(callSid).map((s) => s.CallStatus)).not.toContain('completed');
    release();
    const call = sim.phoneCalls.get(callSid)!;
    await call.done;
    await sim.settle();
    expect(call.endedBy).toBe('script');
    expect(call.scriptError).toBeUndefined();
    expect(call.phone.close?.by).toBe('phone');
    expect(stream.events('stop')).toHaveLength(1);
    const completed = platform.status(callSid).find((s) => s.CallStatus === 'completed')!;
    const seconds = Math.ceil((call.endedAt!.getTime() - call.answeredAt.getTime()) / 1000);
    expect(seconds).toBeGreaterThanOrEqual(2);
    expect(completed.CallDuration).toBe(String(seconds));
    expect(sim.calls.get(callSid)!.status).toBe('completed');
  });

  it('ends the call when the platform closes the stream', async () => {
    sim.setPhone('+14155550112', async (phone) => {
      await phone.waitForSpeech({ timeoutMs: 30_000 });
    });
    platform.onStart = (stream) => stream.socket.close(1000, 'bye');
    try {
      const { callSid } = await place('+14155550112');
      const call = sim.phoneCalls.get(callSid)!;
      await call.done;
      await sim.settle();
      expect(call.endedBy).toBe('platform');
      expect(call.scriptError).toBeUndefined();
      expect(platform.status(callSid).find((s) => s.CallStatus === 'completed')?.CallDuration).toBe('1');
    } finally {
      platform.onStart = undefined;
    }
  });

  it('ends the call on a REST hang-up, and on a transfer (recording the target)', async () => {
    sim.setPhone('*', async (phone) => {
      await phone.waitForSpeech({ timeoutMs: 30_000 });
    });
    const hangUp = await place('+14155550113');
    await hangUp.stream.until(() => hangUp.stream.events('start').length > 0);
    await adapter.hangUp(ACCOUNT, hangUp.callSid);
    await sim.phoneCalls.get(hangUp.callSid)!.done;
    expect(sim.phoneCalls.get(hangUp.callSid)!.endedBy).toBe('hang-up');
    await hangUp.stream.until(() => hangUp.stream.closed);
    expect(hangUp.stream.events('stop')).toHaveLength(1);

    const transfer = await place('+14155550114');
    await transfer.stream.until(() => transfer.stream.events('start').length > 0);
    await adapter.transfer(ACCOUNT, transfer.callSid, '+14155550199');
    await sim.phoneCalls.get(transfer.callSid)!.done;
    await sim.settle();
    expect(sim.phoneCalls.get(transfer.callSid)!.endedBy).toBe('transfer');
    expect(sim.calls.get(transfer.callSid)!.transferredTo).toBe('+14155550199');
    for (const callSid of [hangUp.callSid, transfer.callSid])
      expect(
        platform
          .status(callSid)
          .map((s) => s.CallStatus)
          .at(-1),
      ).toBe('completed');
  });

  it('places an inbound call whose caller is a phone, then reports it completed', async () => {
    const stream = platform.nextStream();
    const inbound = await sim.placeInboundCall({
      voiceUrl: `${platform.base}/voice?call=900`,
      accountSid: ACCOUNT.account_sid,
      from: '+14155550120',
      to: '+14155550100',
      statusCallbackUrl: `${platform.base}/status?call=900`,
      phone: async (phone) => {
        await phone.say('uh-huh');
      },
    });
    expect(inbound.phoneCall).toBeDefined();
    const media = await stream;
    expect(media.headers['x-twilio-signature']).toBe(
      carrierASignature(ACCOUNT.auth_token, `${platform.wsBase}/media-stream/900`, {}),
    );
    await inbound.phoneCall!.done;
    await sim.settle();
    expect(inbound.phoneCall!.endedBy).toBe('script');
    expect(platform.status(inbound.callSid)).toEqual([
      expect.objectContaining({ CallStatus: 'completed', Direction: 'inbound', CallDuration: '1' }),
    ]);
  });
});
