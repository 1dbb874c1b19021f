/**
 * A local tts_d: a real HTTP server on loopback speaking the vendor's streaming synthesis
 * (`POST /stream`, providers/tts/tts-d-wire.ts). It checks the `Authorization: Bearer` key (401), the
 * body as the vendor documents it (400: no voice or text, text over 2,000 characters, a precision or
 * rate it does not offer), the project (404 for one it does not know), then answers a streamed WAV
 * (sim/tts-d-voice.ts): a first-byte delay, the header with grapheme cues, and the audio paced faster
 * than real time. Failures are `{"success":false,"message":"…"}`.
 *
 * Tests script failures — a refusal (429 with retry-after, 500…), a body cut mid-audio, a slow first
 * byte (`options.ttfbMs`), a raw reply (golden bodies from the vendor's documentation) — and read
 * every request it received in `requests`.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { listenOnLoopback } from '../lib/net.js';
import {
  TTS_D_MAX_CHARACTERS,
  TTS_D_PRECISIONS,
  TTS_D_SAMPLE_RATES,
  TTS_D_STREAM_PATH,
  type TtsDPrecision,
  ttsDWavFormat,
} from '../providers/tts/tts-d-wire.js';
import { speakWav } from './tts-d-voice.js';

export interface TtsDSimulatorOptions {
  /** Delay before each answer begins (the vendor's time to first byte). */
  ttfbMs: number;
  /** How much faster than its own duration audio is sent (5 → one second of audio in 200 ms). */
  realtimeFactor: number;
  msPerCharacter: number;
  /** About how much audio each write carries. */
  chunkMs: number;
  /** Sizes in the header as 0xFFFFFFFF, as the vendor's older models send them. */
  unknownSizes: boolean;
}

export const TTS_D_SIMULATOR_DEFAULTS: TtsDSimulatorOptions = {
  ttfbMs: 120,
  realtimeFactor: 5,
  msPerCharacter: 65,
  chunkMs: 160,
  unknownSizes: false,
};

/** One request, as the simulator received and answered it. */
export interface TtsDRequestRecord {
  key?: string;
  /** The JSON body as sent (unknown fields included). */
  body: Record<string, unknown>;
  status: number;
  /** Audio sent, in ms. */
  audioMs: number;
  /** The whole answer was sent. */
  completed: boolean;
  /** The connection of the answer is gone (finished, cut, or dropped by the client). */
  closed: boolean;
}

export interface TtsDFailure {
  status: number;
  retryAfterSeconds?: number;
  message?: string;
}

export class TtsDSimulator {
  readonly options: TtsDSimulatorOptions;
  readonly requests: TtsDRequestRecord[] = [];
  readonly #keys = new Set<string>();
  readonly #projects = new Set<string>();
  readonly #failures = new Map<string, TtsDFailure[]>();
  #cutAfterMs: number | undefined;
  #scripted: Uint8Array[] | undefined;
  #server: Server | undefined;

  constructor(options: Partial<TtsDSimulatorOptions> = {}) {
    this.options = { ...TTS_D_SIMULATOR_DEFAULTS, ...options };
  }

  addKey(key: string): void {
    this.#keys.add(key);
  }

  /** A project the vendor knows; a request naming any other is answered 404. */
  addProject(uuid: string): void {
    this.#projects.add(uuid);
  }

  /** The next request with `key` (or any key, `'*'`) is refused with `failure.status`. */
  failNext(key: string, failure: TtsDFailure): void {
    this.#failures.set(key, [...(this.#failures.get(key) ?? []), failure]);
  }

  /** The next answer's connection is cut (no end of body) once it has sent `ms` of audio. */
  cutAfterAudio(ms: number): void {
    this.#cutAfterMs = ms;
  }

  /** The next accepted request is answered 200 with exactly these body pieces (a golden reply). */
  replyNext(pieces: Uint8Array[]): void {
    this.#scripted = pieces;
  }

  /** Starts listening on loopback; resolves to the base URL (`http://127.0.0.1:PORT`). */
  async start(port = 0): Promise<string> {
    const server = createServer((request, response) => void this.#handle(request, response));
    this.#server = server;
    return `http://127.0.0.1:${await listenOnLoopback(server, port)}`;
  }

  async stop(): Promise<void> {
    const server = this.#server;
    this.#server = undefined;
    if (!server) return;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  async #handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const raw = await readBody(request);
    const key = /^Bearer (.+)$/.exec(request.headers.authorization ?? '')?.[1];
    let body: Record<string, unknown> = {};
    try {
      const parsed: unknown = JSON.parse(raw);
      if (typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed))
        body = parsed as Record<string, unknown>;
    } catch {
      // An unreadable body is answered 400 below, as a body without its fields.
    }
    const record: TtsDRequestRecord = { key, body, status: 0, audioMs: 0, completed: false, closed: false };
    if (request.method !== 'POST' || request.url !== TTS_D_STREAM_PATH) {
      return this.#refuse(response, record, { status: 404, message: 'Not found' });
    }
    this.requests.push(record);
    response.on('close', () => {
      record.closed = true;
    });
    if (key === undefined || !this.#keys.has(key))
      return this.#refuse(response, record, { status: 401, message: 'Invalid API token' });
    const failure = this.#takeFailure(key);
    if (failure) return this.#refuse(response, record, failure);
    const problem = invalidBody(body);
    if (problem) return this.#refuse(response, record, { status: 400, message: problem });
    if (typeof body.project_uuid === 'string' && !this.#projects.has(body.project_uuid))
      return this.#refuse(response, record, { status: 404, message: 'Project not found' });
    const scripted = this.#scripted;
    const cutAfterMs = this.#cutAfterMs;
    this.#scripted = undefined;
    this.#cutAfterMs = undefined;
    await sleep(this.options.ttfbMs);
    if (record.closed) return;
    record.status = 200;
    response.writeHead(200, { 'content-type': 'audio/wav' });
    if (scripted) {
      for (const piece of scripted) response.write(piece);
      response.end(() => {
        record.completed = true;
      });
      return;
    }
    const precision = (body.precision ?? 'PCM_32') as TtsDPrecision;
    const wav = speakWav(String(body.data), ttsDWavFormat(precision, Number(body.sample_rate ?? 48000)), {
      msPerCharacter: this.options.msPerCharacter,
      chunkMs: this.options.chunkMs,
      unknownSizes: this.options.unknownSizes,
    });
    response.write(wav.header);
    for (const chunk of wav.chunks) {
      if (record.closed) return;
      record.audioMs += chunk.ms;
      if (cutAfterMs !== undefined && record.audioMs >= cutAfterMs) {
        // A broken connection: the socket goes, once what was written reached it, without the body's end.
        response.write(chunk.audio, () => response.socket?.destroy());
        return;
      }
      response.write(chunk.audio);
      await sleep(chunk.ms / this.options.realtimeFactor);
    }
    response.end(() => {
      record.completed = true;
    });
  }

  #takeFailure(key: string): TtsDFailure | undefined {
    for (const which of [key, '*']) {
      const queue = this.#failures.get(which);
      if (queue?.length) return queue.shift();
    }
    return undefined;
  }

  #refuse(response: ServerResponse, record: TtsDRequestRecord, failure: TtsDFailure): void {
    record.status = failure.status;
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    if (failure.retryAfterSeconds !== undefined) headers['retry-after'] = String(failure.retryAfterSeconds);
    response.writeHead(failure.status, headers);
    response.end(JSON.stringify({ success: false, message: failure.message ?? 'Simulated failure' }));
  }
}

/** Why the vendor would refuse this body (400), or undefined. */
function invalidBody(body: Record<string, unknown>): string | undefined {
  if (typeof body.voice_uuid !== 'string' || body.voice_uuid === '') return 'voice_uuid is required';
  if (typeof body.data !== 'string' || body.data.trim() === '') return 'data is required';
  if (body.data.length > TTS_D_MAX_CHARACTERS)
    return `data is longer than ${TTS_D_MAX_CHARACTERS} characters`;
  if (body.project_uuid !== undefined && typeof body.project_uuid !== 'string')
    return 'project_uuid must be a string';
  const precision = body.precision ?? 'PCM_32';
  if (!TTS_D_PRECISIONS.includes(precision as TtsDPrecision))
    return `precision must be one of ${TTS_D_PRECISIONS.join(', ')}`;
  const rate = body.sample_rate ?? 48000;
  if (!TTS_D_SAMPLE_RATES.includes(rate as (typeof TTS_D_SAMPLE_RATES)[number]))
    return `sample_rate must be one of ${TTS_D_SAMPLE_RATES.join(', ')}`;
  for (const flag of ['use_hd', 'apply_custom_pronunciations'])
    if (body[flag] !== undefined && typeof body[flag] !== 'boolean') return `${flag} must be a boolean`;
  if (body.model !== undefined && typeof body.model !== 'string') return 'model must be a string';
  // The tone voice is made at telephone rates; the vendor's others are real but not simulated.
  if ((rate !== 8000 && rate !== 16000) || (precision !== 'PCM_16' && precision !== 'MULAW'))
    return 'The simulator speaks MULAW and PCM_16 at 8000 or 16000 Hz';
  return undefined;
}

function readBody(request: IncomingMessage): Promise<string> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    request.on('error', () => resolve(''));
  });
}

function sleep(ms: number): Promise<void> {
  return ms > 0 && Number.isFinite(ms)
    ? new Promise((resolve) => setTimeout(resolve, ms))
    : Promise.resolve();
}
