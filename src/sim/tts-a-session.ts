/**
 * One stream of the tts_a simulator (sim/tts-a.ts): reads the client's messages, decides when text is
 * spoken (per sentence or phrase in auto mode, by the character schedule otherwise, on a flush, on
 * the end of stream), and sends the audio of each generation in order, paced by the first-byte delay
 * and the real-time factor. Injected failures and scripted replies are played here too.
 */
import WebSocket, { type RawData } from 'ws';
import type { AudioFormat } from '../voice/audio.js';
import { ToneVoice } from './tts-a-voice.js';

export interface TtsASimulatorOptions {
  /** Delay before the first audio of each generation (the vendor's time to first byte). */
  ttfbMs: number;
  /** How much faster than its own duration audio is generated (5 → one second of audio in 200 ms). */
  realtimeFactor: number;
  /** Audio per character of text: 65 ms is about natural speech rate. */
  msPerCharacter: number;
  /** About how much audio each message carries. */
  chunkMs: number;
  /** Client silence after which the stream fails (the vendor's default is 20 s). */
  inactivityTimeoutMs: number;
}

/** What one connection carried, for tests to read. */
export interface TtsAConnectionRecord {
  voiceId: string;
  /** The handshake's query parameters (model_id, output_format, auto_mode…). */
  query: Record<string, string>;
  /** The first message's `voice_settings`, when it had any. */
  voiceSettings?: Record<string, unknown>;
  /** The first message's `generation_config`, when it had any. */
  generationConfig?: Record<string, unknown>;
  /** Every client message after the first, as parsed JSON, in order. */
  messages: Record<string, unknown>[];
  /** The non-blank texts received, in order. */
  texts: string[];
  flushes: number;
  /** The client sent the end of stream (`{"text":""}`). */
  eos: boolean;
  /** The texts the simulator spoke, one per generation, in order. */
  generations: string[];
  /** Audio sent so far, in ms. */
  audioMs: number;
  closed: boolean;
  /** Who closed the socket first. */
  closedBy?: 'client' | 'server';
}

/** A failure the next connection meets once it has sent `afterMs` of audio. */
export interface MidStreamFailure {
  afterMs: number;
  /** An error frame to send before closing with 1008; without it the socket is cut abruptly. */
  error?: string;
}

/** What the next connection does instead of speaking. */
export type ScriptedReply =
  | { kind: 'error'; error: string; message: string }
  | { kind: 'frames'; frames: string[] };

export interface TtsASessionOptions extends TtsASimulatorOptions {
  format: AudioFormat;
  autoMode: boolean;
  /** True when the handshake's key was accepted; otherwise how to check the first message's key. */
  keyAccepted: true | ((key: string) => boolean);
  midStreamFailure?: MidStreamFailure;
  scripted?: ScriptedReply;
}

/** The vendor's default `chunk_length_schedule`: characters buffered before each generation. */
const DEFAULT_SCHEDULE = [120, 160, 250, 290];
/** Where a sentence or phrase ends: auto mode speaks up to there. */
const PHRASE_END = /[.!?;:,](?=\s)/g;

type Json = Record<string, unknown>;

export class TtsASession {
  readonly #voice: ToneVoice;
  #started = false;
  #buffer = '';
  #schedule = DEFAULT_SCHEDULE;
  #scheduleStep = 0;
  /** The generations, spoken one after another. */
  #speaking: Promise<void> = Promise.resolve();
  #stopped = false;
  readonly #timers = new Set<{ timer: NodeJS.Timeout; resolve: () => void }>();
  #inactivity: NodeJS.Timeout | undefined;

  constructor(
    private readonly ws: WebSocket,
    private readonly record: TtsAConnectionRecord,
    private readonly options: TtsASessionOptions,
  ) {
    this.#voice = new ToneVoice(options.format, options.msPerCharacter, options.chunkMs);
    ws.on('message', (data, isBinary) => this.#onMessage(data, isBinary));
    ws.on('close', () => {
      if (!this.record.closed) this.record.closedBy ??= 'client';
      this.record.closed = true;
      this.stop();
    });
    ws.on('error', () => this.stop());
    this.#armInactivity();
  }

  /** Stops everything at once: timers, generations, the socket. */
  stop(): void {
    if (this.#stopped) return;
    this.#stopped = true;
    clearTimeout(this.#inactivity);
    for (const pending of this.#timers) {
      clearTimeout(pending.timer);
      pending.resolve();
    }
    this.#timers.clear();
    if (this.ws.readyState === WebSocket.OPEN || this.ws.readyState === WebSocket.CONNECTING)
      this.ws.terminate();
  }

  #onMessage(data: RawData, isBinary: boolean): void {
    if (this.#stopped || this.record.eos) return;
    let message: Json;
    try {
      const parsed: unknown = JSON.parse(data.toString());
      if (isBinary || typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
        throw new Error();
      message = parsed as Json;
    } catch {
      this.#fail('invalid_message', 'Messages must be JSON objects');
      return;
    }
    const text = typeof message.text === 'string' ? message.text : undefined;
    if (text === undefined) {
      this.#fail('invalid_message', 'A message needs its text');
      return;
    }
    this.#armInactivity();
    if (!this.#started) this.#begin(message, text);
    else this.#onText(message, text);
  }

  /** The first message: the stream's settings (and the key, when the handshake had none). */
  #begin(message: Json, text: string): void {
    this.#started = true;
    const check = this.options.keyAccepted;
    if (check !== true && !(typeof message.xi_api_key === 'string' && check(message.xi_api_key))) {
      this.#fail('invalid_api_key', 'Invalid API key');
      return;
    }
    if (text !== ' ') {
      this.#fail('invalid_message', 'The first message must have a single space as its text');
      return;
    }
    const settings = message.voice_settings;
    if (settings && typeof settings === 'object') this.record.voiceSettings = settings as Json;
    const generation = message.generation_config as Json | undefined;
    if (generation && typeof generation === 'object') {
      this.record.generationConfig = generation;
      const schedule = generation.chunk_length_schedule;
      if (Array.isArray(schedule) && schedule.length > 0 && schedule.every((n) => typeof n === 'number')) {
        this.#schedule = schedule as number[];
      }
    }
    const scripted = this.options.scripted;
    if (scripted?.kind === 'error') this.#fail(scripted.error, scripted.message);
    else if (scripted?.kind === 'frames') {
      for (const frame of scripted.frames) this.ws.send(frame);
      // The vendor closes with 1008 after an error frame, normally otherwise.
      this.#closeByServer(scripted.frames.at(-1)?.includes('"error"') ? 1008 : 1000);
    }
  }

  #onText(message: Json, text: string): void {
    this.record.messages.push(message);
    if (text === '') {
      // End of stream: speak what is left, then the final message and a normal close.
      this.record.eos = true;
      clearTimeout(this.#inactivity);
      this.#generate(this.#take(this.#buffer.length));
      this.#speaking = this.#speaking.then(() => {
        if (this.#stopped) return;
        this.ws.send(JSON.stringify({ isFinal: true }));
        this.#closeByServer(1000);
      });
      return;
    }
    if (text.trim() !== '') this.record.texts.push(text);
    this.#buffer += text;
    if (message.flush === true) {
      this.record.flushes++;
      this.#generate(this.#take(this.#buffer.length));
    } else if (this.options.autoMode) {
      let end = -1;
      for (const match of this.#buffer.matchAll(PHRASE_END)) end = match.index + 1;
      if (end > 0) this.#generate(this.#take(end));
    } else {
      const threshold = this.#schedule[Math.min(this.#scheduleStep, this.#schedule.length - 1)]!;
      if (this.#buffer.length >= threshold) {
        this.#scheduleStep++;
        this.#generate(this.#take(this.#buffer.length));
      }
    }
  }

  #take(length: number): string {
    const text = this.#buffer.slice(0, length);
    this.#buffer = this.#buffer.slice(length);
    return text;
  }

  #generate(text: string): void {
    const spoken = text.trim();
    if (spoken === '') return;
    this.#speaking = this.#speaking.then(() => this.#speak(`${spoken} `));
  }

  async #speak(text: string): Promise<void> {
    if (this.#stopped) return;
    this.record.generations.push(text.trim());
    await this.#sleep(this.options.ttfbMs);
    for (const chunk of this.#voice.speak(text)) {
      if (this.#stopped) return;
      const alignment = {
        chars: chunk.chars,
        charStartTimesMs: chunk.startMs,
        charsDurationsMs: chunk.durationMs,
      };
      this.ws.send(
        JSON.stringify({
          audio: Buffer.from(chunk.audio).toString('base64'),
          isFinal: null,
          normalizedAlignment: alignment,
          alignment,
        }),
      );
      this.record.audioMs += chunk.ms;
      const failure = this.options.midStreamFailure;
      if (failure && this.record.audioMs >= failure.afterMs) {
        if (failure.error) this.#fail(failure.error, `Simulated failure: ${failure.error}`);
        else this.#cut();
        return;
      }
      await this.#sleep(chunk.ms / this.options.realtimeFactor);
    }
  }

  /** The vendor's error frame, then close code 1008. */
  #fail(error: string, message: string): void {
    if (this.#stopped) return;
    this.ws.send(JSON.stringify({ message, error, code: 1008 }));
    this.#closeByServer(1008, error);
  }

  #closeByServer(code: number, reason?: string): void {
    if (this.record.closed) return;
    this.record.closed = true;
    this.record.closedBy = 'server';
    clearTimeout(this.#inactivity);
    this.ws.close(code, reason);
  }

  /** A broken connection: no close frame, the TCP socket just goes. */
  #cut(): void {
    this.record.closed = true;
    this.record.closedBy = 'server';
    this.stop();
  }

  #armInactivity(): void {
    clearTimeout(this.#inactivity);
    if (this.record.eos) return;
    const seconds = (this.options.inactivityTimeoutMs / 1000).toFixed(1);
    this.#inactivity = setTimeout(
      () =>
        this.#fail(
          'input_timeout_exceeded',
          `Have not received a new text input within the timeout of ${seconds} seconds. Streaming input terminated.`,
        ),
      this.options.inactivityTimeoutMs,
    );
  }

  #sleep(ms: number): Promise<void> {
    if (ms <= 0 || !Number.isFinite(ms)) return Promise.resolve();
    return new Promise((resolve) => {
      const pending = {
        timer: setTimeout(() => {
          this.#timers.delete(pending);
          resolve();
        }, ms),
        resolve,
      };
      this.#timers.add(pending);
    });
  }
}
