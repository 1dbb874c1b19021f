/**
 * A local tts_a: a real WebSocket server speaking the vendor's stream-input protocol
 * (providers/tts/tts-a-wire.ts) on loopback. It checks the `xi-api-key` header at the handshake
 * (401 for a key it does not know), takes the first message's voice settings, buffers text and speaks
 * it as the vendor does — per sentence or phrase with `auto_mode=true`, by its character schedule
 * otherwise, at once on a flush, everything left on the end of stream, then `{"isFinal":true}` and a
 * normal close. The audio is a tone whose length follows the text (tts-a-voice.ts), generated faster
 * than real time after a first-byte delay. Silence from the client for the inactivity time-out ends
 * the stream with the vendor's `input_timeout_exceeded` error frame and close code 1008.
 *
 * Tests inject failures (a refused handshake, a broken stream after some audio, an error frame, a
 * scripted reply of the vendor's documented frames) and read what each connection received.
 */
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { Duplex } from 'node:stream';
import type WebSocket from 'ws';
import { WebSocketServer } from 'ws';
import { listenOnLoopback } from '../lib/net.js';
import { ttsAAudioFormat } from '../providers/tts/tts-a-wire.js';
import {
  type MidStreamFailure,
  type ScriptedReply,
  type TtsAConnectionRecord,
  TtsASession,
  type TtsASimulatorOptions,
} from './tts-a-session.js';

export type { MidStreamFailure, ScriptedReply, TtsAConnectionRecord, TtsASimulatorOptions };

export const TTS_A_SIMULATOR_DEFAULTS: TtsASimulatorOptions = {
  ttfbMs: 75,
  realtimeFactor: 5,
  msPerCharacter: 65,
  chunkMs: 160,
  inactivityTimeoutMs: 20_000,
};

export interface HandshakeFailure {
  status: number;
  retryAfterSeconds?: number;
  /** The vendor's error code in the body (`detail.status`). */
  code?: string;
}

const STREAM_PATH = /^\/v1\/text-to-speech\/(?<voice>[^/]+)\/stream-input$/;

export class TtsASimulator {
  readonly options: TtsASimulatorOptions;
  readonly connections: TtsAConnectionRecord[] = [];
  readonly #keys = new Set<string>();
  readonly #handshakeFailures = new Map<string, HandshakeFailure>();
  #midStreamFailure: MidStreamFailure | undefined;
  #scripted: ScriptedReply | undefined;
  readonly #sessions = new Set<TtsASession>();
  readonly #wss = new WebSocketServer({ noServer: true });
  #server: Server | undefined;

  constructor(options: Partial<TtsASimulatorOptions> = {}) {
    this.options = { ...TTS_A_SIMULATOR_DEFAULTS, ...options };
  }

  addKey(key: string): void {
    this.#keys.add(key);
  }

  /** The next handshake with `key` (or any key, `'*'`) is refused with `failure.status`. */
  failNext(key: string, failure: HandshakeFailure): void {
    this.#handshakeFailures.set(key, failure);
  }

  /** The next connection breaks once it has sent `afterMs` of audio (abruptly, or with an error frame). */
  failAfterAudio(afterMs: number, error?: string): void {
    this.#midStreamFailure = { afterMs, error };
  }

  /** The next connection answers its first message with this error frame, then closes with 1008. */
  errorFrame(error: string, message = `Simulated failure: ${error}`): void {
    this.#scripted = { kind: 'error', error, message };
  }

  /** The next connection answers its first message with these raw frames, then closes normally. */
  replyNext(frames: string[]): void {
    this.#scripted = { kind: 'frames', frames };
  }

  /** Starts listening on loopback; resolves to the base URL (`http://127.0.0.1:PORT`). */
  async start(port = 0): Promise<string> {
    const server = createServer((_request, response) => {
      response.writeHead(426, { 'content-type': 'application/json' });
      response.end(JSON.stringify({ detail: { status: 'upgrade_required', message: 'Use a WebSocket' } }));
    });
    server.on('upgrade', (request, socket, head) => this.#upgrade(request, socket, head));
    this.#server = server;
    return `http://127.0.0.1:${await listenOnLoopback(server, port)}`;
  }

  async stop(): Promise<void> {
    for (const session of this.#sessions) session.stop();
    this.#sessions.clear();
    for (const client of this.#wss.clients) client.terminate();
    this.#wss.close();
    const server = this.#server;
    this.#server = undefined;
    if (!server) return;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  #upgrade(request: IncomingMessage, socket: Duplex, head: Buffer): void {
    const url = new URL(request.url ?? '/', 'http://sim');
    const voice = STREAM_PATH.exec(url.pathname)?.groups?.voice;
    const header = request.headers['xi-api-key'];
    const key = typeof header === 'string' ? header : undefined;
    const format = ttsAAudioFormat(url.searchParams.get('output_format') ?? 'mp3_44100_128');
    const refusal: Refusal | undefined = !voice
      ? { status: 404, code: 'not_found', message: 'No such endpoint' }
      : key !== undefined && !this.#keys.has(key)
        ? { status: 401, code: 'invalid_api_key', message: 'Invalid API key' }
        : this.#takeHandshakeFailure(key);
    if (refusal) {
      refuse(socket, refusal);
      return;
    }
    if (!voice || !format || format.encoding === 'alaw') {
      refuse(socket, {
        status: 400,
        code: 'invalid_output_format',
        message: 'The simulator speaks ulaw_8000, pcm_8000 and pcm_16000',
      });
      return;
    }
    const record: TtsAConnectionRecord = {
      voiceId: decodeURIComponent(voice),
      query: Object.fromEntries(url.searchParams),
      messages: [],
      texts: [],
      flushes: 0,
      eos: false,
      generations: [],
      audioMs: 0,
      closed: false,
    };
    this.connections.push(record);
    const midStreamFailure = this.#midStreamFailure;
    const scripted = this.#scripted;
    this.#midStreamFailure = undefined;
    this.#scripted = undefined;
    this.#wss.handleUpgrade(request, socket, head, (ws: WebSocket) => {
      const session = new TtsASession(ws, record, {
        ...this.options,
        format,
        autoMode: url.searchParams.get('auto_mode') === 'true',
        inactivityTimeoutMs: inactivityTimeout(url, this.options.inactivityTimeoutMs),
        // Without the header, the key must come in the first message (`xi_api_key`).
        keyAccepted: key !== undefined ? true : (candidate) => this.#keys.has(candidate),
        midStreamFailure,
        scripted,
      });
      this.#sessions.add(session);
      ws.once('close', () => this.#sessions.delete(session));
    });
  }

  #takeHandshakeFailure(key: string | undefined): Refusal | undefined {
    for (const which of [key, '*']) {
      if (which === undefined) continue;
      const failure = this.#handshakeFailures.get(which);
      if (failure) {
        this.#handshakeFailures.delete(which);
        return { code: 'simulated_failure', message: 'Simulated failure', ...failure };
      }
    }
    return undefined;
  }
}

/** The `inactivity_timeout` query parameter (seconds, at most 180), or the simulator's default. */
function inactivityTimeout(url: URL, fallbackMs: number): number {
  const seconds = Number(url.searchParams.get('inactivity_timeout'));
  return Number.isFinite(seconds) && seconds > 0 ? Math.min(seconds, 180) * 1000 : fallbackMs;
}

const REASONS: Record<number, string> = {
  400: 'Bad Request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not Found',
  429: 'Too Many Requests',
  500: 'Internal Server Error',
  503: 'Service Unavailable',
};

interface Refusal {
  status: number;
  code: string;
  message: string;
  retryAfterSeconds?: number;
}

/** Answers a handshake with an HTTP error in the vendor's body shape, and hangs up. */
function refuse(socket: Duplex, { status, code, message, retryAfterSeconds }: Refusal): void {
  const body = JSON.stringify({ detail: { status: code, message } });
  const headers = [
    `HTTP/1.1 ${status} ${REASONS[status] ?? 'Error'}`,
    'Content-Type: application/json',
    `Content-Length: ${Buffer.byteLength(body)}`,
    'Connection: close',
  ];
  if (retryAfterSeconds !== undefined) headers.push(`Retry-After: ${retryAfterSeconds}`);
  socket.end(`${headers.join('\r\n')}\r\n\r\n${body}`);
}
