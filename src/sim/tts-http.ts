/**
 * What the simulators of the request-per-piece text-to-speech vendors (sim/tts-b.ts, sim/tts-c.ts)
 * share: a real HTTP server on loopback that checks keys, records every request, synthesizes a
 * speech-like tone for the text (sim/tts-a-voice.ts: its length follows the text, its level tells
 * speech from silence), paced by a first-byte delay and a real-time factor, and plays the failures
 * tests inject — a refused request (429 with retry-after, 5xx), a slow first byte, a connection cut
 * once some audio has been sent, a scripted answer of the vendor's documented bodies. Each vendor
 * fills in its path, how it reads a request, and how its answers and errors look.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { listenOnLoopback } from '../lib/net.js';
import { type AudioFormat, encodeAudio, l16ToPcm16 } from '../voice/audio.js';
import { ToneVoice } from './tts-a-voice.js';

export interface TtsHttpSimulatorOptions {
  /** Delay before the first audio of each request (the vendor's time to first byte). */
  ttfbMs: number;
  /** How much faster than its own duration audio is generated (5 → one second of audio in 200 ms). */
  realtimeFactor: number;
  /** Audio per character of text: 65 ms is about natural speech rate. */
  msPerCharacter: number;
  /** About how much audio each streamed chunk carries. */
  chunkMs: number;
}

export const TTS_HTTP_SIMULATOR_DEFAULTS: TtsHttpSimulatorOptions = {
  ttfbMs: 75,
  realtimeFactor: 5,
  msPerCharacter: 65,
  chunkMs: 160,
};

/** One request as the vendor saw it. */
export interface TtsHttpRequestRecord {
  /** When it arrived (`performance.now()`). */
  at: number;
  /** The parsed JSON body, as sent. */
  body: Record<string, unknown>;
  text: string;
  voiceId: string;
  modelId?: string;
  /** The vendor's own name of the audio format asked for. */
  outputFormat: string;
  /** The voice settings, as the request named them. */
  settings: Record<string, unknown>;
  status: number;
  /** Audio sent, in ms. */
  audioMs: number;
  /** The answer is over: complete, refused, cut by the simulator, or abandoned by the client. */
  closed: boolean;
  closedBy?: 'complete' | 'server' | 'client';
}

/** A refusal the next request meets (after `skip` requests that are answered normally). */
export interface TtsHttpFailure {
  status: number;
  retryAfterSeconds?: number;
  skip?: number;
}

/** The next request is answered with these body parts (strings or bytes, written one by one). */
export interface ScriptedAnswer {
  status?: number;
  headers?: Record<string, string>;
  parts: Array<string | Uint8Array>;
}

/** What a vendor's request says, once read. */
export interface ParsedSpeechRequest {
  text: string;
  voiceId: string;
  modelId?: string;
  outputFormat: string;
  /** The samples' rate, and the encoding of the audio to answer with. */
  rate: number;
  encode(samples: Int16Array): Uint8Array;
  settings: Record<string, unknown>;
}

export interface VendorError {
  status: number;
  body: string;
  headers?: Record<string, string>;
}

/** A cut shared by a stream's requests: audio is counted across them until it is due. */
export interface CutState {
  afterMs: number;
  sentMs: number;
  /** Set by the answer that cut its connection: the cut is then over. */
  fired?: boolean;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export abstract class TtsHttpSimulator {
  readonly options: TtsHttpSimulatorOptions;
  readonly requests: TtsHttpRequestRecord[] = [];
  protected readonly keys = new Set<string>();
  #failures: TtsHttpFailure[] = [];
  #scripted: ScriptedAnswer | undefined;
  #cut: CutState | undefined;
  readonly #delays = new Map<string, number>();
  #server: Server | undefined;
  readonly #open = new Set<ServerResponse>();

  constructor(options: Partial<TtsHttpSimulatorOptions> = {}) {
    this.options = { ...TTS_HTTP_SIMULATOR_DEFAULTS, ...options };
  }

  /** The path requests are posted to, below the server's root. */
  protected abstract readonly path: string;
  /** The prefix of the base URL clients are given (`/v1` when the vendor's base URL has it). */
  protected abstract readonly basePath: string;
  /** The key a request carries, if any. */
  protected abstract keyOf(request: IncomingMessage, url: URL): string | undefined;
  /** The vendor's answer to a missing or unknown key. */
  protected abstract keyRefusal(key: string | undefined): VendorError;
  /** Reads a request body; a VendorError for one the vendor would refuse. */
  protected abstract parse(body: Record<string, unknown>): ParsedSpeechRequest | VendorError;
  /** The vendor's error for an injected failure. */
  protected abstract failure(failure: TtsHttpFailure): VendorError;
  /** Answers with the audio, chunk by chunk as it is generated; the cut, when due, breaks it. */
  protected abstract answer(
    response: ServerResponse,
    record: TtsHttpRequestRecord,
    chunks: AsyncIterable<Uint8Array>,
    cut: CutState | undefined,
  ): Promise<void>;

  addKey(key: string): void {
    this.keys.add(key);
  }

  /** The next request (after `skip` answered ones) is refused with `failure.status`. */
  failNext(failure: TtsHttpFailure): void {
    this.#failures.push({ ...failure });
  }

  /** The next request is answered with these parts instead of speech. */
  replyNext(answer: ScriptedAnswer): void {
    this.#scripted = answer;
  }

  /** The connection carrying audio is cut once about `afterMs` more audio has been sent (once). */
  cutAfterAudio(afterMs: number): void {
    this.#cut = { afterMs, sentMs: 0 };
  }

  /** The next request for `text` waits this much longer before its first byte. */
  delayText(text: string, ms: number): void {
    this.#delays.set(text, ms);
  }

  /** Starts listening on loopback; resolves to the base URL clients are given. */
  async start(port = 0): Promise<string> {
    const server = createServer((request, response) => void this.#handle(request, response));
    this.#server = server;
    return `http://127.0.0.1:${await listenOnLoopback(server, port)}${this.basePath}`;
  }

  async stop(): Promise<void> {
    for (const response of this.#open) response.destroy();
    const server = this.#server;
    this.#server = undefined;
    if (!server) return;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  async #handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const url = new URL(request.url ?? '/', 'http://sim');
    if (request.method !== 'POST' || url.pathname !== `${this.basePath}${this.path}`) {
      send(response, { status: 404, body: JSON.stringify({ error: { message: 'Not found' } }) });
      return;
    }
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const key = this.keyOf(request, url);
    if (key === undefined || !this.keys.has(key)) {
      send(response, this.keyRefusal(key));
      return;
    }
    let body: Record<string, unknown>;
    try {
      body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown>;
    } catch {
      send(response, { status: 400, body: JSON.stringify({ error: { message: 'Body is not JSON' } }) });
      return;
    }
    const parsed = this.parse(body);
    if ('body' in parsed) {
      send(response, parsed);
      return;
    }
    const record: TtsHttpRequestRecord = {
      at: performance.now(),
      body,
      text: parsed.text,
      voiceId: parsed.voiceId,
      ...(parsed.modelId !== undefined ? { modelId: parsed.modelId } : {}),
      outputFormat: parsed.outputFormat,
      settings: parsed.settings,
      status: 200,
      audioMs: 0,
      closed: false,
    };
    this.requests.push(record);
    this.#open.add(response);
    response.once('close', () => {
      this.#open.delete(response);
      if (!record.closed) {
        record.closed = true;
        record.closedBy = response.writableFinished ? 'complete' : 'client';
      }
    });
    await this.#respond(response, record, parsed);
  }

  async #respond(response: ServerResponse, record: TtsHttpRequestRecord, parsed: ParsedSpeechRequest) {
    const failure = this.#takeFailure();
    const scripted = this.#scripted;
    this.#scripted = undefined;
    const delay = this.options.ttfbMs + (this.#delays.get(parsed.text) ?? 0);
    this.#delays.delete(parsed.text);
    if (failure) {
      record.status = failure.status;
      send(response, this.failure(failure));
      return;
    }
    if (scripted) {
      record.status = scripted.status ?? 200;
      response.writeHead(record.status, scripted.headers ?? {});
      for (const part of scripted.parts) {
        response.write(part);
        // Separate writes, so the client meets the parts as separate chunks.
        await sleep(5);
      }
      response.end();
      return;
    }
    await sleep(delay);
    if (response.destroyed) return;
    const cut = this.#cut;
    await this.answer(response, record, this.#speak(parsed, record), cut);
    if (cut?.fired && this.#cut === cut) this.#cut = undefined;
  }

  /** The text's audio in the request's format, generated at the simulator's pace. */
  async *#speak(parsed: ParsedSpeechRequest, record: TtsHttpRequestRecord): AsyncGenerator<Uint8Array> {
    const { msPerCharacter, chunkMs, realtimeFactor } = this.options;
    // The tone is made as 16-bit PCM at the request's rate (tts_b's 24 kHz is no carrier format,
    // hence the cast) and then encoded as the request asked.
    const pcm = { encoding: 'linear16', sampleRate: parsed.rate } as unknown as AudioFormat;
    for (const chunk of new ToneVoice(pcm, msPerCharacter, chunkMs).speak(parsed.text)) {
      await sleep(chunk.ms / realtimeFactor);
      record.audioMs += chunk.ms;
      yield parsed.encode(l16ToPcm16(chunk.audio));
    }
  }

  #takeFailure(): TtsHttpFailure | undefined {
    const next = this.#failures[0];
    if (!next) return undefined;
    if ((next.skip ?? 0) > 0) {
      next.skip = (next.skip ?? 0) - 1;
      return undefined;
    }
    this.#failures.shift();
    return next;
  }
}

/** Writes an error (or any whole) answer. */
export function send(response: ServerResponse, { status, body, headers }: VendorError): void {
  response.writeHead(status, { 'content-type': 'application/json', ...headers });
  response.end(body);
}

/** Encodes 16-bit samples as a carrier format (the simulators' answers). */
export function encoderFor(format: AudioFormat): (samples: Int16Array) => Uint8Array {
  return (samples) => encodeAudio(format, samples);
}
