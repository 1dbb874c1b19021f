/**
 * Serves a web call's stream (`/web-call/{call_id}`): a browser talking to an assistant, carried into
 * the same call runtime as phone calls. The protocol is docs/voice.md's "Talking from a browser (web
 * calls)"; in short: text JSON messages both ways, binary frames of 16-bit PCM at 16 kHz both ways.
 *
 * The stream proves itself as a carrier's does, since a browser cannot set headers: its first
 * message, within `startTimeoutMs`, is `{"type":"start","token":…}` with the call's single-call
 * token (POST /api/v1/calls/web gave it). The call must be a web call not yet started: a token is
 * good for one stream, cluster-wide, because the start is the call's move from `queued` to
 * `in-progress` and only one stream can make it. Anything else first — audio, another message, a
 * wrong, expired or other call's token — closes the socket with 1008 and one reason that tells the
 * peer nothing; nothing of a refused stream reaches the runtime.
 *
 * Once started, the runtime gets a `MediaConnection` like any carrier's (the runtime never learns it
 * is a browser) with a watcher (`CallWatcher`) whose transcript segments, turns and events go to the
 * browser as they are recorded. The stream ends when the browser says `hangup` or goes away, when the
 * assistant ends the call (end_call, the idle goodbye: `LiveCalls.hangUp` reaches `end` here), or on a
 * protocol error; then the call is completed with its duration through the calls domain.
 */
import type { FastifyBaseLogger } from 'fastify';
import type { RawData, WebSocket } from 'ws';
import type { Db } from '../db/client.js';
import { Tenant } from '../db/tenant.js';
import { WEB_PROVIDER } from '../domains/calls/live.js';
import { unscoped } from '../domains/calls/reads.js';
import { turnRecordView } from '../domains/calls/views.js';
import { WEB_CALL_AUDIO } from '../domains/calls/web-calls.js';
import { Channel } from '../lib/channel.js';
import type { MediaTokens } from '../lib/media-token.js';
import { LINEAR16_16K } from './audio.js';
import { CLOSE_INTERNAL, CLOSE_POLICY } from './media-stream.js';
import type { CallRuntime, CallWatcher, MediaHandlers, MediaSender } from './transport.js';

/** The one reason every refusal and protocol error gives: which check failed is for our log. */
export const WEB_CALL_REFUSED = 'Web call refused';
/** A message larger than the protocol allows (RFC 6455: too big to process). */
export const CLOSE_TOO_BIG = 1009;
const NORMAL_CLOSE = 1000;
const OPEN = 1;

/** Two seconds of audio, or a JSON message far larger than any the protocol has. */
export const MAX_MESSAGE_BYTES = 64 * 1024;
const DEFAULT_START_TIMEOUT_MS = 10_000;
/** Messages received but not handled yet: a browser this far ahead is flooding, not talking. */
const MAX_PENDING_MESSAGES = 500;
const MAX_CALL_ID = 2_147_483_647;
const DIGIT = /^[0-9*#A-D]$/;
const MAX_MARK_NAME = 200;

/** What a web call's stream does to its call record (domains/calls/web-calls.ts). */
export interface WebCallLifecycle {
  /** The stream started; false when another stream started the call first. */
  started(organizationId: number, callId: number, callSid: string): Promise<boolean>;
  ended(organizationId: number, callId: number, callSid: string, seconds: number): Promise<void>;
}

export interface WebCallStreamsDeps {
  db: Db;
  tokens: MediaTokens;
  runtime: CallRuntime;
  calls: WebCallLifecycle;
  log: Pick<FastifyBaseLogger, 'warn' | 'error'>;
  startTimeoutMs?: number;
}

class Refusal extends Error {
  constructor(
    readonly why: string,
    readonly code = CLOSE_POLICY,
  ) {
    super(why);
  }
}

interface Incoming {
  data: Buffer;
  isBinary: boolean;
}

/** Why a stream ended, as its `ended` message says. */
export type WebCallEnd =
  | 'hangup'
  | 'hung_up'
  | 'assistant_ended'
  | 'transfer_unavailable'
  | 'closed'
  | 'error'
  | (string & {});

/** A started stream: its handlers and how it ends (once). */
interface LiveStream {
  handlers: MediaHandlers;
  finish(reason: WebCallEnd): void;
}

export class WebCallStreams {
  /** Started streams in this process, by call id: how to end each. */
  readonly #live = new Map<number, (reason: WebCallEnd) => void>();
  /** Calls whose start is being proven here: a second start for one of them is refused at once. */
  readonly #starting = new Set<number>();

  constructor(private readonly deps: WebCallStreamsDeps) {}

  get liveCount(): number {
    return this.#live.size;
  }

  /** Ends a call's stream from here (the assistant hung up); false when no stream of it is here. */
  end(callId: number, reason: string): boolean {
    const finish = this.#live.get(callId);
    finish?.(reason);
    return finish !== undefined;
  }

  /** Serves one browser's stream until it ends; `rawCallId` is the path's text. */
  async serve(socket: WebSocket, rawCallId: string | undefined): Promise<void> {
    const inbox = new Channel<Incoming>();
    let pending = 0;
    socket.on('message', (data, isBinary) => {
      const buffer = toBuffer(data);
      pending += 1;
      if (buffer.length > MAX_MESSAGE_BYTES)
        inbox.fail(new Refusal(`a message of ${buffer.length} bytes`, CLOSE_TOO_BIG));
      else if (pending > MAX_PENDING_MESSAGES) inbox.fail(new Refusal('too many messages waiting'));
      else inbox.push({ data: buffer, isBinary });
    });
    socket.on('close', () => inbox.end());
    const timer = setTimeout(
      () => inbox.fail(new Refusal('no start in time')),
      this.deps.startTimeoutMs ?? DEFAULT_START_TIMEOUT_MS,
    );
    timer.unref();
    const callId = parseCallId(rawCallId);
    let stream: LiveStream | undefined;
    try {
      if (callId === undefined) throw new Refusal('the path names no call id');
      for await (const message of inbox) {
        pending -= 1;
        if (!stream) {
          stream = await this.#start(socket, callId, message);
          clearTimeout(timer);
        } else if (deliver(stream, message) === 'hangup') {
          stream.finish('hangup');
          break;
        }
      }
      stream?.finish('closed');
    } catch (error) {
      this.#fail(socket, error, callId, stream !== undefined);
      stream?.finish('error');
    } finally {
      clearTimeout(timer);
    }
  }

  /** The first message: this call's token, for a web call not started yet; then the runtime attaches. */
  async #start(socket: WebSocket, callId: number, first: Incoming): Promise<LiveStream> {
    const token = startToken(first);
    if (this.#starting.has(callId) || this.#live.has(callId))
      throw new Refusal('the call already has a stream here');
    this.#starting.add(callId);
    try {
      const call = await unscoped.callById(this.deps.db, callId);
      if (call?.provider !== WEB_PROVIDER || !call.callSid) throw new Refusal('no such web call');
      if (call.status !== 'queued') throw new Refusal(`the call is ${call.status}`);
      const claims = await this.deps.tokens.verify(token, callId);
      if (!claims || claims.organizationId !== call.organizationId)
        throw new Refusal("a token that is not this call's");
      // Only one stream moves the call from `queued`: the token is spent, in every process.
      if (!(await this.deps.calls.started(call.organizationId, callId, call.callSid)))
        throw new Refusal('another stream started the call');
      return await this.#attach(socket, new Tenant(call.organizationId), callId, call.callSid);
    } finally {
      this.#starting.delete(callId);
    }
  }

  async #attach(socket: WebSocket, tenant: Tenant, callId: number, callSid: string): Promise<LiveStream> {
    const startedAt = performance.now();
    const send = (message: object | Buffer) => {
      if (socket.readyState !== OPEN) return;
      socket.send(Buffer.isBuffer(message) ? message : JSON.stringify(message));
    };
    let handlers: MediaHandlers | undefined;
    let finished = false;
    const finish = (reason: WebCallEnd) => {
      if (finished) return;
      finished = true;
      this.#live.delete(callId);
      try {
        handlers?.ended(reason === 'hangup' ? 'stop' : reason === 'error' ? 'error' : 'closed');
      } catch (error) {
        this.deps.log.error({ err: error, callId }, 'web call: the runtime failed on end');
      }
      if (reason !== 'error' && socket.readyState === OPEN) {
        send({ type: 'ended', reason });
        socket.close(NORMAL_CLOSE, 'Call ended');
      }
      const seconds = (performance.now() - startedAt) / 1000;
      void this.deps.calls.ended(tenant.organizationId, callId, callSid, seconds).catch((error: unknown) => {
        this.deps.log.error({ err: error, callId }, 'web call: completing the call failed');
      });
    };
    this.#live.set(callId, finish);
    send({ type: 'started', call_id: callId, audio: WEB_CALL_AUDIO });
    const sender: MediaSender = {
      media: (audio) => send(Buffer.from(audio.buffer, audio.byteOffset, audio.byteLength)),
      mark: (name) => send({ type: 'mark', name }),
      clear: () => send({ type: 'clear' }),
      close: () => finish('assistant_ended'),
    };
    const watch: CallWatcher = {
      transcript: (segment) => send({ type: 'transcript', ...segment, final: true }),
      turn: (turn) => send({ type: 'turn', ...turnRecordView(turn) }),
      event: (type, data) => send({ type: 'event', name: eventName(type), data }),
    };
    try {
      handlers = await this.deps.runtime.attach({
        callId,
        tenant,
        carrier: 'web',
        start: { streamId: callSid, callSid, parameters: {}, format: LINEAR16_16K },
        send: sender,
        watch,
      });
    } catch (error) {
      finish('error');
      throw error;
    }
    // The runtime may have ended the call while it attached (no voice): then it is over already.
    if (finished) handlers.ended('closed');
    return { handlers, finish };
  }

  /** Closes the socket for a refusal (1008, 1009) or a fault of ours (1011), and says which in the log. */
  #fail(socket: WebSocket, error: unknown, callId: number | undefined, started: boolean): void {
    if (error instanceof Refusal) {
      this.deps.log.warn({ callId, started, reason: error.why }, 'web call stream refused');
      close(socket, error.code, WEB_CALL_REFUSED);
    } else {
      this.deps.log.error({ err: error, callId, started }, 'web call stream failed');
      close(socket, CLOSE_INTERNAL, 'Internal error');
    }
  }
}

/** The token of a `start` message, the only first message there is. */
function startToken(message: Incoming): string {
  const parsed = message.isBinary ? undefined : parseObject(message.data);
  if (parsed?.type !== 'start') throw new Refusal('something else than start first');
  if (typeof parsed.token !== 'string' || parsed.token.length === 0 || parsed.token.length > 4096)
    throw new Refusal('start without a token');
  return parsed.token;
}

/** One message of a started stream to the runtime; `hangup` when the browser hangs up. */
function deliver(stream: LiveStream, message: Incoming): 'hangup' | undefined {
  const { handlers } = stream;
  if (message.isBinary) {
    if (message.data.length % 2 !== 0) throw new Refusal('audio of an odd number of bytes');
    if (message.data.length > 0) handlers.media(new Uint8Array(message.data));
    return undefined;
  }
  const parsed = parseObject(message.data);
  switch (parsed?.type) {
    case 'mark':
      if (typeof parsed.name !== 'string' || parsed.name.length > MAX_MARK_NAME)
        throw new Refusal('a mark without a name');
      handlers.mark(parsed.name);
      return undefined;
    case 'interrupt':
      handlers.interrupt?.();
      return undefined;
    case 'dtmf':
      if (typeof parsed.digit !== 'string' || !DIGIT.test(parsed.digit)) throw new Refusal('not a key');
      handlers.dtmf(parsed.digit);
      return undefined;
    case 'hangup':
      return 'hangup';
    default:
      throw new Refusal(`a ${String(parsed?.type ?? 'malformed')} message on a started stream`);
  }
}

/** A call event's name for the browser: `call.interrupted` is an `interruption`, others lose `call.`. */
function eventName(type: string): string {
  return type === 'call.interrupted' ? 'interruption' : type.replace(/^call\./, '');
}

function parseObject(data: Buffer): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(data.toString('utf8'));
    return typeof value === 'object' && value !== null && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}

function toBuffer(data: RawData): Buffer {
  return Array.isArray(data) ? Buffer.concat(data) : Buffer.isBuffer(data) ? data : Buffer.from(data);
}

function close(socket: WebSocket, code: number, reason: string): void {
  if (socket.readyState === 0 || socket.readyState === OPEN) socket.close(code, reason);
}

function parseCallId(raw: string | undefined): number | undefined {
  if (!raw || !/^[1-9][0-9]{0,9}$/.test(raw)) return undefined;
  const id = Number(raw);
  return id <= MAX_CALL_ID ? id : undefined;
}
