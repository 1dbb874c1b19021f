/**
 * Serves a carrier's media stream (`/media-stream/{call_id}`): proves that the stream is that very
 * call's, then hands it to the call runtime and feeds it the stream's events in order.
 *
 * A stream proves itself twice. Its WebSocket upgrade: the call exists, is on a carrier whose media
 * wire we speak, has not ended, and the carrier's signature on the upgrade verifies with the
 * credentials the call uses (the owner's, found platform-wide as carrier webhooks are). Its first
 * messages: an optional `connected`, then `start` within `startTimeoutMs`, carrying the single-call
 * media token of this call and this organization (carrier_a: a `<Parameter>`, since the carrier
 * drops a stream URL's query), and the carrier's id of the call when the call has one. Anything
 * else first — audio before `start`, a malformed message, a wrong, expired or other call's token, a
 * bad signature, a call that already has a live stream here — closes the socket with 1008 and one
 * short reason that tells the peer nothing, and is logged (without the token) as a warning. Nothing
 * of a refused stream reaches the runtime.
 *
 * A proven stream is attached (`CallRuntime.attach`) and every later event goes to its handlers in
 * arrival order; audio that came after `start` while the proof ran waits for it. `stop` ends the
 * stream (`ended('stop')`, then the socket closes), the socket closing ends it (`closed`), and a
 * protocol error closes it with 1008 (`error`). Handlers hear `ended` exactly once, last.
 */
import type { FastifyBaseLogger } from 'fastify';
import type { RawData, WebSocket } from 'ws';
import type { Db } from '../db/client.js';
import { FINAL_CALL_STATUSES } from '../db/schema/telephony.js';
import { Tenant } from '../db/tenant.js';
import { type CallRow, unscoped } from '../domains/calls/reads.js';
import type { ConfigResolver } from '../domains/runtime/resolve-config.js';
import { Channel } from '../lib/channel.js';
import type { MediaTokens } from '../lib/media-token.js';
import type { Carriers } from '../providers/carriers/index.js';
import {
  type CarrierMediaWire,
  type MediaEvent,
  type MediaHandshake,
  MediaProtocolError,
  type MediaStreamStart,
} from '../providers/carriers/media.js';
import type { MediaWires } from '../providers/carriers/media-wires.js';
import { isCarrierId } from '../providers/ids.js';
import { mediaSender, NORMAL_CLOSE } from './media-sender.js';
import type { CallRuntime, MediaHandlers } from './transport.js';

export const CLOSE_POLICY = 1008;
export const CLOSE_INTERNAL = 1011;
/** The one reason every refusal gives: which check failed is for our log, not for the peer. */
export const REFUSED_REASON = 'Media stream refused';

const DEFAULT_START_TIMEOUT_MS = 5000;
/**
 * Messages received but not handled yet. Handling is quick once the stream is attached; before,
 * only the proof (a few queries) holds them. A peer this far ahead is flooding, not streaming.
 */
const MAX_PENDING_MESSAGES = 500;
const MAX_CALL_ID = 2_147_483_647;

export interface MediaStreamDeps {
  db: Db;
  carriers: Carriers;
  wires: MediaWires;
  resolver: ConfigResolver;
  tokens: MediaTokens;
  runtime: CallRuntime;
  log: Pick<FastifyBaseLogger, 'warn' | 'error'>;
  startTimeoutMs?: number;
}

/** A failed check: the socket is closed with `code` and the generic reason; `why` goes to the log. */
class Refusal extends Error {
  constructor(readonly why: string) {
    super(why);
  }
}

interface Incoming {
  data: RawData;
  isBinary: boolean;
}

/** The call a stream's upgrade proved, and how its carrier speaks. */
interface ProvenCall {
  call: CallRow;
  tenant: Tenant;
  wire: CarrierMediaWire;
}

export class MediaStreams {
  /** Calls with a live stream in this process: a second stream for one of them is refused. */
  readonly #live = new Set<number>();

  constructor(private readonly deps: MediaStreamDeps) {}

  /** How many streams are attached to the runtime now. */
  get liveCount(): number {
    return this.#live.size;
  }

  /**
   * Serves one stream until it ends. `rawCallId` is the path's text; `handshake.url` the public URL
   * the carrier connected to (rebuilt from PUBLIC_URL and the path), without a query.
   */
  async serve(socket: WebSocket, rawCallId: string | undefined, handshake: MediaHandshake): Promise<void> {
    const inbox = new Channel<Incoming>();
    let pending = 0;
    socket.on('message', (data, isBinary) => {
      pending += 1;
      if (pending > MAX_PENDING_MESSAGES) inbox.fail(new Refusal('too many messages waiting to be handled'));
      else inbox.push({ data, isBinary });
    });
    socket.on('close', () => inbox.end());
    const timer = setTimeout(
      () => inbox.fail(new Refusal('no proven start in time')),
      this.deps.startTimeoutMs ?? DEFAULT_START_TIMEOUT_MS,
    );
    timer.unref();

    const callId = parseCallId(rawCallId);
    let attached: { callId: number; handlers: MediaHandlers } | undefined;
    let ended = false;
    const end = (reason: 'stop' | 'closed' | 'error') => {
      if (!attached || ended) return;
      ended = true;
      this.#live.delete(attached.callId);
      try {
        attached.handlers.ended(reason);
      } catch (error) {
        this.deps.log.error(
          { err: error, callId: attached.callId },
          'media stream: the runtime failed on end',
        );
      }
    };

    try {
      if (callId === undefined) throw new Refusal('the path names no call id');
      const proven = await this.#proveHandshake(callId, handshake);
      const reader = proven.wire.reader(handshake);
      messages: for await (const message of inbox) {
        pending -= 1;
        for (const event of reader.read(toBuffer(message.data), message.isBinary)) {
          if (!attached) {
            if (event.type === 'connected') continue;
            if (event.type !== 'start') throw new Refusal(`${event.type} before a proven start`);
            await this.#proveStart(proven, event.start, handshake);
            clearTimeout(timer);
            attached = { callId, handlers: await this.#attach(socket, proven, event.start) };
            continue;
          }
          if (event.type === 'stop') {
            end('stop');
            socket.close(NORMAL_CLOSE, 'Stream stopped');
            break messages;
          }
          deliver(attached.handlers, event);
        }
      }
      end('closed');
    } catch (error) {
      this.#fail(socket, error, callId, attached !== undefined);
      end('error');
    } finally {
      clearTimeout(timer);
    }
  }

  /** The upgrade: an existing, unfinished call on a carrier we stream, signed with its credentials. */
  async #proveHandshake(callId: number, handshake: MediaHandshake): Promise<ProvenCall> {
    const call = await unscoped.callById(this.deps.db, callId);
    if (!call) throw new Refusal('no such call');
    const carrier = call.provider;
    const wire = isCarrierId(carrier) ? this.deps.wires[carrier] : undefined;
    if (!wire || !isCarrierId(carrier)) throw new Refusal("the call's carrier streams no media here");
    if (FINAL_CALL_STATUSES.includes(call.status)) throw new Refusal('the call has ended');
    const tenant = new Tenant(call.organizationId);
    const adapter = this.deps.carriers[carrier];
    // A carrier that signs its upgrades must have signed this one; the token is checked on `start`.
    if (adapter.verifyMediaHandshake) {
      const { credentials } = await this.deps.resolver.telephonyCredentials(tenant, {
        provider: carrier,
        assistantId: call.assistantId,
      });
      if (!credentials || !adapter.verifyMediaHandshake(credentials, handshake))
        throw new Refusal('the handshake signature does not verify');
    }
    return { call, tenant, wire };
  }

  /** The `start`: this call's token for its organization, and the carrier's id of this call. */
  async #proveStart(
    { call, wire }: ProvenCall,
    start: MediaStreamStart,
    handshake: MediaHandshake,
  ): Promise<void> {
    const token = wire.tokenOf(start, handshake);
    if (!token) throw new Refusal('start without a token');
    const claims = await this.deps.tokens.verify(token, call.id);
    if (!claims || claims.organizationId !== call.organizationId)
      throw new Refusal("start with a token that is not this call's");
    if (call.callSid !== null && start.callSid !== call.callSid)
      throw new Refusal('start names another carrier call');
    if (this.#live.has(call.id)) throw new Refusal('the call already has a live stream');
    this.#live.add(call.id);
  }

  async #attach(socket: WebSocket, { call, tenant, wire }: ProvenCall, start: MediaStreamStart) {
    try {
      return await this.deps.runtime.attach({
        callId: call.id,
        tenant,
        carrier: wire.carrier,
        start,
        send: mediaSender(socket, wire, start),
      });
    } catch (error) {
      this.#live.delete(call.id);
      throw error;
    }
  }

  /** Closes the socket for a refusal (1008) or a fault of ours (1011), and says which in the log. */
  #fail(socket: WebSocket, error: unknown, callId: number | undefined, attached: boolean): void {
    const refusal =
      error instanceof Refusal
        ? error
        : error instanceof MediaProtocolError
          ? new Refusal(`protocol error: ${error.message}`)
          : undefined;
    if (refusal) {
      this.deps.log.warn({ callId, attached, reason: refusal.why }, 'media stream refused');
      close(socket, CLOSE_POLICY, REFUSED_REASON);
    } else {
      this.deps.log.error({ err: error, callId, attached }, 'media stream failed');
      close(socket, CLOSE_INTERNAL, 'Internal error');
    }
  }
}

function toBuffer(data: RawData): Buffer {
  return Array.isArray(data) ? Buffer.concat(data) : Buffer.isBuffer(data) ? data : Buffer.from(data);
}

function deliver(handlers: MediaHandlers, event: Exclude<MediaEvent, { type: 'stop' }>): void {
  switch (event.type) {
    case 'media':
      handlers.media(event.audio, event.timestampMs);
      return;
    case 'mark':
      handlers.mark(event.name);
      return;
    case 'dtmf':
      handlers.dtmf(event.digit);
      return;
    // A repeated `connected` or `start` is not the protocol's: the stream was proven once.
    default:
      throw new MediaProtocolError(`${event.type} after the stream started`);
  }
}

function close(socket: WebSocket, code: number, reason: string): void {
  if (socket.readyState === 0 || socket.readyState === 1) socket.close(code, reason);
}

function parseCallId(raw: string | undefined): number | undefined {
  if (!raw || !/^[1-9][0-9]{0,9}$/.test(raw)) return undefined;
  const id = Number(raw);
  return id <= MAX_CALL_ID ? id : undefined;
}
