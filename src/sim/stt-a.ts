/**
 * A simulator of stt_a's live streaming transcription: a real WebSocket server on loopback at
 * `/v1/listen` that speaks the vendor's protocol — the handshake's query parameters and
 * `Authorization: Token …` (refusals as HTTP answers with `dg-error`, for the parameters the vendor
 * refuses too: an encoding or rate it cannot decode, keyterms for an older model or keywords for
 * nova-3, `utterance_end_ms` without interim results, a boolean that is not one), binary audio in, `KeepAlive`,
 * `Finalize` and `CloseStream` in, `Results`, `SpeechStarted`, `UtteranceEnd` and `Metadata` out, and
 * the vendor's close 1011 `NET-0001` when no audio or KeepAlive came for `idleTimeoutMs`.
 * Recognition is scripted (stt-a-recognizer.ts): the words come from `setScript`, the timing from the
 * audio received. Tests inject refusals (`failNext`), a slow handshake, slow results (`latencyMs`),
 * a connection dropped mid-stream (`dropAfter`) or a vendor close (`disconnect`), and read what each
 * connection asked for and sent in `connections`.
 */

import { createHash, randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import WebSocket, { WebSocketServer } from 'ws';
import { closeServer, listenOnLoopback } from '../lib/net.js';
import { type AudioFormat, durationMs } from '../voice/audio.js';
import { ScriptedRecognizer } from './stt-a-recognizer.js';

type Json = Record<string, unknown>;

export interface SttAConnection {
  id: number;
  /** The API key the handshake carried. */
  key: string;
  /** The handshake's query parameters, as sent (repeated ones included). */
  query: URLSearchParams;
  bytesReceived: number;
  /** The control messages received (`KeepAlive`, `Finalize`, `CloseStream`…), by type, in order. */
  controls: string[];
  /** Every message the simulator sent, in order. */
  sent: Json[];
  /** How the connection ended: by the client, by the simulator (a close code), or cut. */
  closed?: { code: number; reason: string; by: 'client' | 'simulator' };
}

export interface SttAFailure {
  status: number;
  /** Seconds, sent as the `retry-after` header. */
  retryAfter?: number;
  /** The `dg-error` text (default: the status's own words). */
  message?: string;
}

export const DEFAULT_UTTERANCE = 'unscripted speech';
/** The raw encodings the simulator decodes: the carriers' (μ-law, A-law, 16-bit PCM), all of which the vendor takes. */
const ENCODINGS = new Set(['mulaw', 'alaw', 'linear16']);
/** Parameters the vendor takes as `true` or `false` only. */
const BOOLEANS = ['interim_results', 'punctuate', 'smart_format', 'vad_events'];

export class SttASimulator {
  readonly connections: SttAConnection[] = [];
  /** Audio time between two interim results of one speech segment, at least. */
  interimIntervalMs = 250;
  /** Wall-clock time without audio or KeepAlive after which a stream is closed (1011 NET-0001). */
  idleTimeoutMs = 10_000;
  /** Wall-clock delay before each message the simulator sends (a slow vendor). */
  latencyMs = 0;
  /** Wall-clock delay before the handshake is answered (a slow vendor to connect to). */
  handshakeDelayMs = 0;
  /** What a speech segment is heard as once the connection's script is used up. */
  defaultUtterance = DEFAULT_UTTERANCE;

  readonly #keys = new Set<string>();
  readonly #scripts = new Map<string, string[]>();
  readonly #failures = new Map<string, SttAFailure[]>();
  readonly #sockets = new Map<WebSocket, SttAConnection>();
  #dropAfterMs: number | undefined;
  #server: Server | undefined;
  #wss: WebSocketServer | undefined;
  #baseUrl = '';

  get baseUrl(): string {
    return this.#baseUrl;
  }

  async start(port = 0): Promise<string> {
    this.#wss = new WebSocketServer({ noServer: true, perMessageDeflate: false });
    this.#server = createServer((_req, res) => res.writeHead(426, { 'content-type': 'text/plain' }).end());
    this.#server.on('upgrade', (req, socket, head) => {
      socket.on('error', () => {});
      const answer = () => {
        if (!socket.destroyed) this.#upgrade(req, socket, head);
      };
      if (this.handshakeDelayMs > 0) setTimeout(answer, this.handshakeDelayMs);
      else answer();
    });
    const listening = await listenOnLoopback(this.#server, port);
    this.#baseUrl = `http://127.0.0.1:${listening}`;
    return this.#baseUrl;
  }

  async stop(): Promise<void> {
    for (const socket of this.#sockets.keys()) socket.terminate();
    this.#wss?.close();
    await closeServer(this.#server);
  }

  addKey(key: string): void {
    this.#keys.add(key);
  }

  /** The utterances speech segments of `key`'s connections are heard as, in order (`*`: any key's). */
  setScript(key: string, utterances: string[]): void {
    this.#scripts.set(key, [...utterances]);
  }

  /** The next handshake with `key` (`*`: any key) is refused with `failure`. */
  failNext(key: string, failure: SttAFailure): void {
    const queue = this.#failures.get(key) ?? [];
    queue.push(failure);
    this.#failures.set(key, queue);
  }

  /** Connections opened from now on are cut (no close frame) `ms` after they open; undefined: never. */
  dropAfter(ms: number | undefined): void {
    this.#dropAfterMs = ms;
  }

  /** Closes every open connection as the vendor would on a failure (e.g. 1011 `NET-0001`, 1008 `DATA-0000`). */
  disconnect(code: number, reason: string): void {
    for (const [socket, record] of this.#sockets) {
      record.closed ??= { code, reason, by: 'simulator' };
      socket.close(code, reason);
    }
  }

  connectionsOf(key: string): SttAConnection[] {
    return this.connections.filter((c) => c.key === key);
  }

  #upgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    const url = new URL(req.url ?? '/', 'http://simulator');
    if (url.pathname !== '/v1/listen') {
      refuse(socket, 404, 'Not found.');
      return;
    }
    const key = /^Token (.+)$/.exec(req.headers.authorization ?? '')?.[1] ?? '';
    if (!this.#keys.has(key)) {
      refuse(socket, 401, 'Invalid credentials.');
      return;
    }
    const failure = this.#takeFailure(key);
    if (failure) {
      refuse(socket, failure.status, failure.message, failure.retryAfter);
      return;
    }
    const problem = invalidQuery(url.searchParams);
    if (problem) {
      refuse(socket, 400, problem);
      return;
    }
    this.#wss!.handleUpgrade(req, socket, head, (ws) => this.#serve(ws, key, url.searchParams));
  }

  #takeFailure(key: string): SttAFailure | undefined {
    for (const which of [key, '*']) {
      const queue = this.#failures.get(which);
      if (queue?.length) return queue.shift();
    }
    return undefined;
  }

  #serve(ws: WebSocket, key: string, query: URLSearchParams): void {
    const record: SttAConnection = {
      id: this.connections.length + 1,
      key,
      query,
      bytesReceived: 0,
      controls: [],
      sent: [],
    };
    this.connections.push(record);
    this.#sockets.set(ws, record);
    const requestId = randomUUID();
    const audioHash = createHash('sha256');
    const script = [...(this.#scripts.get(key) ?? this.#scripts.get('*') ?? [])];
    const outbox = new Outbox(ws, record, () => this.latencyMs);
    const model = query.get('model') ?? 'base';
    const format: AudioFormat = {
      encoding: query.get('encoding') as AudioFormat['encoding'],
      sampleRate: Number(query.get('sample_rate')) as AudioFormat['sampleRate'],
    };
    const recognizer = new ScriptedRecognizer(
      {
        format,
        interimResults: query.get('interim_results') === 'true',
        vadEvents: query.get('vad_events') === 'true',
        endpointingMs: millis(query.get('endpointing'), 10),
        utteranceEndMs: millis(query.get('utterance_end_ms'), undefined),
        interimIntervalMs: this.interimIntervalMs,
        model,
        requestId,
      },
      () => script.shift() ?? this.defaultUtterance,
      (message) => outbox.send(message),
    );

    let closing = false;
    let idle: NodeJS.Timeout | undefined;
    const stillThere = () => {
      clearTimeout(idle);
      idle = setTimeout(() => {
        record.closed ??= { code: 1011, reason: 'NET-0001', by: 'simulator' };
        ws.close(1011, 'NET-0001');
      }, this.idleTimeoutMs);
    };
    stillThere();
    const drop =
      this.#dropAfterMs === undefined
        ? undefined
        : setTimeout(() => {
            record.closed ??= { code: 1006, reason: 'dropped', by: 'simulator' };
            ws.terminate();
          }, this.#dropAfterMs);

    ws.on('message', (data, isBinary) => {
      if (closing) return;
      const bytes = toBytes(data);
      if (isBinary) {
        record.bytesReceived += bytes.length;
        audioHash.update(bytes);
        stillThere();
        recognizer.audio(bytes);
        return;
      }
      const type = controlType(bytes);
      record.controls.push(type);
      if (type === 'KeepAlive') stillThere();
      else if (type === 'Finalize') recognizer.finalize();
      else if (type === 'CloseStream') {
        closing = true;
        recognizer.flush();
        outbox.send({
          type: 'Metadata',
          transaction_key: 'deprecated',
          request_id: requestId,
          sha256: audioHash.digest('hex'),
          created: new Date().toISOString(),
          duration: Math.round(durationMs(format, record.bytesReceived)) / 1000,
          channels: 1,
          models: ['00000000-0000-4000-8000-000000000000'],
          model_info: {
            '00000000-0000-4000-8000-000000000000': {
              name: `general-${model}`,
              version: 'simulated',
              arch: model,
            },
          },
        });
        void outbox.drained().then(() => {
          record.closed ??= { code: 1000, reason: '', by: 'simulator' };
          ws.close(1000);
        });
      }
    });
    ws.on('close', (code, reason) => {
      clearTimeout(idle);
      clearTimeout(drop);
      this.#sockets.delete(ws);
      record.closed ??= { code, reason: reason.toString(), by: 'client' };
    });
    ws.on('error', () => {});
  }
}

/** Sends each message after the simulator's latency, in order, and knows when all have gone. */
class Outbox {
  #pending = 0;
  #waiting: Array<() => void> = [];

  constructor(
    private readonly ws: WebSocket,
    private readonly record: SttAConnection,
    private readonly latencyMs: () => number,
  ) {}

  send(message: Json): void {
    this.record.sent.push(message);
    const delay = this.latencyMs();
    if (delay <= 0) {
      this.#write(message);
      return;
    }
    this.#pending++;
    setTimeout(() => {
      this.#pending--;
      this.#write(message);
      if (this.#pending === 0) for (const resolve of this.#waiting.splice(0)) resolve();
    }, delay);
  }

  drained(): Promise<void> {
    return this.#pending === 0 ? Promise.resolve() : new Promise((resolve) => this.#waiting.push(resolve));
  }

  #write(message: Json): void {
    if (this.ws.readyState === WebSocket.OPEN) this.ws.send(JSON.stringify(message));
  }
}

/** Why the vendor would refuse these parameters, or undefined. */
function invalidQuery(query: URLSearchParams): string | undefined {
  const encoding = query.get('encoding') ?? '';
  if (!ENCODINGS.has(encoding)) return `The simulator decodes mulaw, alaw and linear16, not '${encoding}'.`;
  for (const name of BOOLEANS) {
    const value = query.get(name);
    if (value !== null && value !== 'true' && value !== 'false') return `${name} must be true or false.`;
  }
  if (query.has('model') && query.get('model') === '') return 'model must name a model.';
  const rate = Number(query.get('sample_rate'));
  if (rate !== 8000 && rate !== 16000) return 'sample_rate must be given for raw audio (8000 or 16000).';
  if ((query.get('channels') ?? '1') !== '1') return 'The simulator transcribes one channel.';
  const nova3 = /^nova-3(-|$)/.test(query.get('model') ?? '');
  if (nova3 && query.has('keywords')) return 'Keywords are not supported for Nova-3; use keyterm.';
  if (!nova3 && query.has('keyterm')) return 'Keyterm prompting is only available for Nova-3.';
  const ue = query.get('utterance_end_ms');
  if (ue !== null && query.get('interim_results') !== 'true')
    return 'utterance_end_ms requires interim_results=true.';
  if (ue !== null && !/^\d+$/.test(ue)) return 'utterance_end_ms must be a whole number of milliseconds.';
  const endpointing = query.get('endpointing');
  if (endpointing !== null && endpointing !== 'false' && !/^\d+$/.test(endpointing))
    return 'endpointing must be a number of milliseconds or false.';
  return undefined;
}

/** A millisecond parameter: its number, `fallback` when absent, undefined when `false`. */
function millis(value: string | null, fallback: number | undefined): number | undefined {
  if (value === null) return fallback;
  if (value === 'false') return undefined;
  return Number(value);
}

function controlType(bytes: Uint8Array): string {
  try {
    const message = JSON.parse(Buffer.from(bytes).toString('utf8')) as { type?: unknown };
    return typeof message.type === 'string' ? message.type : 'unknown';
  } catch {
    return 'unknown';
  }
}

function toBytes(data: WebSocket.RawData): Uint8Array {
  if (Array.isArray(data)) return Buffer.concat(data);
  return data instanceof ArrayBuffer ? new Uint8Array(data) : data;
}

/** Answers a handshake with an HTTP refusal, as the vendor does (the reason in `dg-error`). */
function refuse(socket: Duplex, status: number, message?: string, retryAfter?: number): void {
  const text = message ?? STATUS_CODES[status] ?? 'Error';
  const body = JSON.stringify({ err_code: String(status), err_msg: text, request_id: randomUUID() });
  const headers = [
    `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? 'Error'}`,
    `dg-error: ${text}`,
    `dg-request-id: ${randomUUID()}`,
    ...(retryAfter === undefined ? [] : [`retry-after: ${retryAfter}`]),
    'content-type: application/json',
    `content-length: ${Buffer.byteLength(body)}`,
    'connection: close',
  ];
  socket.end(`${headers.join('\r\n')}\r\n\r\n${body}`);
}
