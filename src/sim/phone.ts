/**
 * A simulated phone: a carrier's side of a call's media stream and the caller's voice, for the
 * end-to-end tests, the demo and the voice benchmark. It connects to the platform's stream URL (with
 * the handshake headers the carrier sends, e.g. `x-twilio-signature`), sends what the carrier sends
 * first (carrier_a: `connected` and `start`), then a media frame every 20 ms in real time for as long as the call lasts — silence (0xff) when the
 * caller says nothing, as real carriers stream continuously, the caller's utterances when `say` queued
 * some. Frames are paced against the stream's start on the shared frame clock (phone-clock.ts), so
 * they never drift, and a hundred phones cost one timer.
 *
 * The carrier's message formats are its wire's (phone-wire.ts; carrier_a's by default): the phone
 * works in μ-law 8 kHz and the wire converts where a carrier streams another format.
 *
 * What the platform sends is played at real time (phone-playout.ts): marks are echoed once the audio
 * before them has played, `clear` drops the rest and echoes the pending marks at once. Everything is
 * recorded with its time in milliseconds since the phone began to connect (`origin`, on the monotonic
 * clock of `performance.now()`): messages received (without their audio), heard segments, marks,
 * clears, utterances, the close. Played audio is kept only with `recordAudio: true`.
 *
 * Key tones in the played audio are heard (a Goertzel detector, dtmf-detector.ts) and recorded in
 * `dtmfHeard`, beside the keys the carrier's simulator says it played into the call by command.
 */
import { randomBytes } from 'node:crypto';
import WebSocket from 'ws';
import { FRAME_MS, MULAW_8K } from '../voice/audio.js';
import { DtmfDetector } from './dtmf-detector.js';
import { type FrameClock, sharedFrameClock } from './phone-clock.js';
import { type HeardSegment, type MarkRecord, Playout } from './phone-playout.js';
import { CallerVoice, type SpokenUtterance } from './phone-voice.js';
import { carrierAPhoneWire, type PhoneMessage, type PhoneWire, type PhoneWireFactory } from './phone-wire.js';

export type { ClearRecord, HeardSegment, MarkRecord, PlayedAudio } from './phone-playout.js';
export type { SpokenUtterance } from './phone-voice.js';

/** Timers may wake a little before the millisecond they were set for; a frame that close is due. */
const EARLY_MS = 1;

export interface SimulatedPhoneOptions {
  /** The stream URL, as the carrier connects to it. */
  url: string;
  /** Handshake headers (`x-twilio-signature`). */
  headers?: Record<string, string>;
  callSid?: string;
  accountSid?: string;
  streamSid?: string;
  /** The `<Parameter>`s of the answer markup (the media `token`). */
  customParameters?: Record<string, string>;
  /** Keep the played audio (`playedAudio()`); off by default so memory stays bounded. */
  recordAudio?: boolean;
  /** The level (RMS of decoded samples, 0…32767) from which played audio counts as heard; default 150. */
  speechLevel?: number;
  /** Pauses up to this long stay inside one heard segment; default 200 ms. */
  heardGapMs?: number;
  /** Where `say(name)` finds `<name>.ulaw`; default test/fixtures/voice. */
  fixturesDir?: string;
  clock?: FrameClock;
  /** The carrier's message formats; carrier_a's by default. */
  wire?: PhoneWireFactory;
}

export interface ReceivedMessage {
  atMs: number;
  event: string;
  /** Audio bytes of a `media`. */
  bytes?: number;
  /** Name of a `mark`. */
  name?: string;
}

/** A key the phone heard: as tones in the audio, or played by the carrier's own command. */
export interface HeardDtmf {
  digit: string;
  atMs: number;
  via: 'tone' | 'command';
}

export interface CloseRecord {
  atMs: number;
  code: number;
  reason: string;
  /** Who closed: the phone (`hangUp`) or the platform. */
  by: 'phone' | 'platform';
}

interface Waiter {
  /** Checked every frame; true once settled. */
  check(nowMs: number): boolean;
  fail(error: Error): void;
}

const sid = (prefix: string) => `${prefix}${randomBytes(16).toString('hex')}`;

export class SimulatedPhone {
  readonly callSid: string;
  readonly accountSid: string;
  readonly streamSid: string;
  /** `performance.now()` when the phone began to connect: every `…Ms` is relative to it. */
  origin = performance.now();
  readonly received: ReceivedMessage[] = [];
  readonly dtmfSent: Array<{ digit: string; atMs: number }> = [];
  /** Keys the platform played to the phone, in order. */
  readonly dtmfHeard: HeardDtmf[] = [];
  /** Messages the phone could not accept (malformed, another stream's); carrier_a would drop them. */
  readonly errors: string[] = [];
  close: CloseRecord | undefined;
  framesSent = 0;
  readonly #options: SimulatedPhoneOptions;
  readonly #playout: Playout;
  readonly #clock: FrameClock;
  readonly #voice: CallerVoice;
  readonly #waiters = new Set<Waiter>();
  readonly #closeWaiters: Array<(close: CloseRecord) => void> = [];
  #socket: WebSocket | undefined;
  readonly #wire: PhoneWire;
  readonly #keys = new DtmfDetector(MULAW_8K);
  #frameEpoch = 0;
  #streaming = false;
  #hangingUp = false;

  constructor(options: SimulatedPhoneOptions) {
    this.#options = options;
    this.callSid = options.callSid ?? sid('CA');
    this.accountSid = options.accountSid ?? sid('AC');
    this.streamSid = options.streamSid ?? sid('MZ');
    this.#wire = (options.wire ?? carrierAPhoneWire)({
      callSid: this.callSid,
      accountSid: this.accountSid,
      streamSid: this.streamSid,
      parameters: options.customParameters ?? {},
    });
    this.#clock = options.clock ?? sharedFrameClock;
    this.#voice = new CallerVoice({
      speechLevel: options.speechLevel ?? 150,
      ...(options.fixturesDir ? { fixturesDir: options.fixturesDir } : {}),
    });
    this.#playout = new Playout({
      speechLevel: options.speechLevel ?? 150,
      gapMs: options.heardGapMs ?? 200,
      recordAudio: options.recordAudio ?? false,
      onSpeechStart: () => this.#checkWaiters(this.now()),
      onPlayed: (window, startMs) => {
        for (const heard of this.#keys.push(window))
          this.dtmfHeard.push({ digit: heard.key, atMs: startMs, via: 'tone' });
      },
    });
  }

  /** Milliseconds since the phone's origin. */
  now(): number {
    return performance.now() - this.origin;
  }

  /** What the caller said, in order. */
  get utterances(): readonly SpokenUtterance[] {
    return this.#voice.utterances;
  }
  get heardSegments(): readonly HeardSegment[] {
    return this.#playout.heardSegments;
  }
  get marks(): readonly MarkRecord[] {
    return this.#playout.marks;
  }
  get clears() {
    return this.#playout.clears;
  }
  /** Bytes of the platform's audio played, and still waiting to play. */
  get playedBytes(): number {
    return this.#playout.playedBytes;
  }
  get bufferedBytes(): number {
    return this.#playout.bufferedBytes;
  }
  /** The played audio, in order (only with `recordAudio`). */
  playedAudio() {
    return this.#playout.played;
  }

  /**
   * Opens the stream and sends `connected` and `start`; frames follow from the next tick. Rejects
   * when the handshake fails (the platform's HTTP status in the message).
   */
  connect(): Promise<void> {
    this.origin = performance.now();
    const socket = new WebSocket(this.#options.url, { headers: this.#options.headers ?? {} });
    this.#socket = socket;
    return new Promise<void>((resolve, reject) => {
      let refused: number | undefined;
      socket.once('unexpected-response', (_request, response) => {
        refused = response.statusCode;
        response.resume();
        socket.terminate();
      });
      socket.once('error', (error) => {
        if (socket.readyState !== WebSocket.OPEN)
          reject(new Error(refused ? `stream handshake refused: ${refused}` : error.message));
        else this.errors.push(`socket error: ${error.message}`);
      });
      socket.once('open', () => {
        for (const message of this.#wire.opening()) socket.send(message);
        this.#streaming = true;
        this.#frameEpoch = this.#clock.join(this);
        resolve();
      });
      socket.on('message', (data, isBinary) => this.#receive(data as Buffer, isBinary));
      socket.once('close', (code, reason) => this.#closed(code, reason.toString('utf8')));
    });
  }

  /**
   * Queues an utterance (μ-law 8 kHz, or the name of a fixture) to be spoken after those queued
   * before it; resolves once its last frame is sent, rejects if the call ends first. `name` names
   * audio given as bytes in `utterances` (an answering machine's `beep`).
   */
  say(audio: Uint8Array | string, name?: string): Promise<SpokenUtterance> {
    const spoken = this.close
      ? Promise.reject(new Error('the call has ended'))
      : this.#voice.say(audio, name);
    // A script may say something without waiting for it: its end with the call is no unhandled error.
    spoken.catch(() => undefined);
    return spoken;
  }

  /** Sends a key press. */
  dtmf(digit: string): void {
    if (!/^[0-9*#A-D]$/.test(digit)) throw new Error(`not a DTMF digit: ${digit}`);
    if (!this.#streaming) throw new Error('the stream is not open');
    this.#send(this.#wire.dtmf(digit));
    this.dtmfSent.push({ digit, atMs: this.now() });
  }

  /**
   * The carrier played `digits` into the call by its own command (carrier_b's `send_dtmf`, carrier_c's
   * DTMF request): its simulator tells the phone, which records them as heard (pauses left out).
   */
  hearCarrierDigits(digits: string): void {
    const atMs = this.now();
    for (const digit of digits)
      if (/^[0-9*#A-D]$/i.test(digit))
        this.dtmfHeard.push({ digit: digit.toUpperCase(), atMs, via: 'command' });
  }

  /** Sends `stop` and closes the stream, as a caller hanging up; resolves with the close. */
  async hangUp(): Promise<CloseRecord> {
    if (this.close) return this.close;
    const socket = this.#socket;
    if (socket?.readyState === WebSocket.OPEN && !this.#hangingUp) {
      this.#hangingUp = true;
      this.#stopStreaming();
      const stop = this.#wire.stop();
      if (stop !== undefined) socket.send(stop);
      socket.close(1000, 'call ended');
    } else if (!socket || socket.readyState === WebSocket.CONNECTING) {
      this.#hangingUp = true;
      socket?.terminate();
      if (!socket) this.#closed(1000, 'never connected');
    }
    return this.waitForClose();
  }

  /** Resolves when the stream has closed (either side). */
  waitForClose(options: { timeoutMs?: number } = {}): Promise<CloseRecord> {
    if (this.close) return Promise.resolve(this.close);
    return new Promise((resolve, reject) => {
      const timer = options.timeoutMs
        ? setTimeout(
            () => reject(new Error(`the stream stayed open ${options.timeoutMs} ms`)),
            options.timeoutMs,
          )
        : undefined;
      this.#closeWaiters.push((close) => {
        clearTimeout(timer);
        resolve(close);
      });
    });
  }

  /**
   * Resolves when the platform's audio is heard: at once with the current segment if it is playing
   * now, otherwise with the next one to start.
   */
  waitForSpeech(options: { timeoutMs?: number } = {}): Promise<HeardSegment> {
    const gapMs = this.#options.heardGapMs ?? 200;
    const since = this.now();
    return this.#wait(options.timeoutMs ?? 10_000, 'no speech heard', (nowMs) => {
      const last = this.heardSegments.at(-1);
      if (!last) return undefined;
      return last.startMs >= since || nowMs - last.endMs <= gapMs ? last : undefined;
    });
  }

  /**
   * Resolves with the first audio heard that began after `utterance`'s last audible frame was sent:
   * the platform's answer to it. Unlike `waitForSpeech`, a greeting still playing (a loaded machine
   * may pause between its sentences longer than a listener's silence) is never taken for the answer.
   */
  waitForReplyTo(utterance: SpokenUtterance, options: { timeoutMs?: number } = {}): Promise<HeardSegment> {
    const after = utterance.speechEndMs ?? utterance.endMs;
    return this.#wait(options.timeoutMs ?? 10_000, 'no answer heard', () =>
      this.heardSegments.find((segment) => segment.startMs >= after),
    );
  }

  /** Resolves when nothing audible has played for `ms` (counted from the origin if nothing ever did). */
  waitForSilence(options: { ms?: number; timeoutMs?: number } = {}): Promise<{ atMs: number }> {
    const ms = options.ms ?? 700;
    return this.#wait(options.timeoutMs ?? 10_000, `no ${ms} ms of silence`, (nowMs) =>
      nowMs - (this.#playout.lastSpeechEndMs ?? 0) >= ms ? { atMs: nowMs } : undefined,
    );
  }

  /** The frame clock's call: sends the frames due, plays what is due, echoes reached marks. */
  tick(nowPerf: number): void {
    if (!this.#streaming) return;
    while (this.#streaming && this.#frameEpoch + this.framesSent * FRAME_MS <= nowPerf + EARLY_MS)
      this.#sendFrame(nowPerf - this.origin);
    this.#echo(this.#playout.advance(nowPerf - this.origin));
    this.#checkWaiters(nowPerf - this.origin);
  }

  #wait<T>(timeoutMs: number, what: string, ready: (nowMs: number) => T | undefined): Promise<T> {
    return new Promise((resolve, reject) => {
      let timer: NodeJS.Timeout | undefined;
      const waiter: Waiter = {
        check: (nowMs) => {
          const value = ready(nowMs);
          if (value === undefined) return false;
          clearTimeout(timer);
          resolve(value);
          return true;
        },
        fail: (error) => {
          clearTimeout(timer);
          reject(error);
        },
      };
      if (waiter.check(this.now())) return;
      if (this.close) return reject(new Error(`${what}: the call has ended`));
      timer = setTimeout(() => {
        this.#waiters.delete(waiter);
        reject(new Error(`${what} within ${timeoutMs} ms`));
      }, timeoutMs);
      this.#waiters.add(waiter);
    });
  }

  #checkWaiters(nowMs: number): void {
    for (const waiter of [...this.#waiters]) if (waiter.check(nowMs)) this.#waiters.delete(waiter);
  }

  #sendFrame(nowMs: number): void {
    const index = this.framesSent;
    const audio = this.#voice.nextFrame();
    this.framesSent += 1;
    for (const message of this.#wire.media(index, index * FRAME_MS, audio)) this.#send(message);
    this.#voice.frameSent(nowMs);
  }

  #receive(data: Buffer, isBinary: boolean): void {
    const nowMs = this.now();
    const message = this.#wire.read(data, isBinary);
    if (message.event === 'invalid') {
      this.errors.push(message.reason);
      return;
    }
    if (message.event === 'ignored') return;
    // Play what was due before this message arrived, so it queues behind the right audio.
    this.#echo(this.#playout.advance(nowMs));
    if (message.event === 'media') {
      this.received.push({ atMs: nowMs, event: 'media', bytes: message.audio.length });
      this.#playout.addAudio(message.audio, nowMs);
    } else if (message.event === 'mark') {
      this.received.push({ atMs: nowMs, event: 'mark', name: message.name });
      this.#playout.addMark(message.name, nowMs);
      this.#echo(this.#playout.advance(nowMs));
    } else {
      this.received.push({ atMs: nowMs, event: 'clear' });
      this.#echo(this.#playout.clear(nowMs));
      const cleared = this.#wire.cleared?.();
      if (cleared !== undefined) this.#send(cleared);
    }
  }

  #echo(marks: MarkRecord[]): void {
    for (const mark of marks) {
      if (!this.#streaming) return;
      const echo = this.#wire.markEcho(mark.name);
      if (echo === undefined) continue;
      this.#send(echo);
      mark.echoedAtMs = this.now();
    }
  }

  #send(message: PhoneMessage): void {
    if (this.#socket?.readyState === WebSocket.OPEN) this.#socket.send(message);
  }

  #stopStreaming(): void {
    this.#streaming = false;
    this.#clock.leave(this);
  }

  #closed(code: number, reason: string): void {
    if (this.close) return;
    this.#stopStreaming();
    this.close = { atMs: this.now(), code, reason, by: this.#hangingUp ? 'phone' : 'platform' };
    const ended = new Error('the call ended before the utterance was spoken');
    this.#voice.silence(ended);
    for (const waiter of this.#waiters) waiter.fail(new Error('the call has ended'));
    this.#waiters.clear();
    for (const resolve of this.#closeWaiters.splice(0)) resolve(this.close);
  }
}
