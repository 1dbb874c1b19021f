/**
 * The SIP transport layer over real sockets (RFC 3261 §18): UDP and TCP on one port, TLS on another,
 * every message parsed and handed up with where it came from, every message sent the way §18 says.
 * It implements `SipTransportPort`, the seam the user agent is tested through without sockets.
 *
 * Design choices:
 * - Receiving a request stamps its top Via as §18.2.1 and RFC 3581 §4 ask: `received=<source ip>`
 *   when the sent-by host is not the source address (and always with an empty `rport`), and
 *   `rport=<source port>` filling an empty `rport`; the rest of the Via and the header order are kept.
 *   Responses go to `responseDestination` (§18.2.2 with RFC 3581): `received`/`rport`, else sent-by.
 *   Those rules are pure, in transport-rules.ts; connections and their lives are transport-stream.ts's.
 * - Hostile input costs little: what fails to parse is counted and logged at most once a second per
 *   transport; a readable bad request (its first line a request line, its Via, From, To, Call-ID and
 *   CSeq readable) gets a stateless `400 Bad Request`, anything else is dropped. Over a stream, broken
 *   framing closes the connection. A datagram of bare CRLFs is a keep-alive, not an error.
 * - A handler that throws is caught and logged: one bad message never stops the listener.
 * - Sending over UDP never fragments silently: above 1300 bytes it warns (§18.1.1 says switch to TCP;
 *   the user agent decides). Asynchronous failures (an unreachable peer, a refused connection) reach
 *   `onTransportError`; what fails at once (a closed transport, too many connections) throws.
 */
import dgram from 'node:dgram';
import net from 'node:net';
import tls from 'node:tls';
import { isRequest, parseMessage, type SipMessage, serializeMessage } from './message.js';
import { SipParseError } from './syntax.js';
import type { Peer } from './transaction-common.js';
import { badRequestFor, responseDestination, stampVia } from './transport-rules.js';
import {
  DEFAULT_CONNECT_TIMEOUT_MS,
  plainAddress,
  type SipTransportLog,
  type StreamConnection,
  StreamPool,
  throttledWarn,
} from './transport-stream.js';
import type { SipMessageHandler, SipTransportName, SipTransportPort } from './transport-types.js';

export { badRequestFor, defaultPort, responseDestination, stampVia } from './transport-rules.js';
export type { SipTransportLog } from './transport-stream.js';

export interface SipTransportOptions {
  /** The address to bind (an IP address of this host, `0.0.0.0` for all). */
  host: string;
  /** UDP and TCP port; 0 takes a free port, the same number for both. */
  port: number;
  /** The address peers reach us at (behind NAT), for Via and Contact; the bound host by default. */
  publicHost?: string;
  /** TLS server on its own port (0 for any); `ca` and `rejectUnauthorized` apply to outbound TLS. */
  tls?: {
    port: number;
    cert: string | Buffer;
    key: string | Buffer;
    ca?: string | Buffer | (string | Buffer)[];
    rejectUnauthorized?: boolean;
  };
  onMessage: SipMessageHandler;
  /** A message that could not be delivered after `send` returned (connect refused, UDP error). */
  onTransportError?: (destination: Peer, error: Error, transport: SipTransportName) => void;
  log?: SipTransportLog;
  /** Open TCP/TLS connections, both directions (default 1000). */
  maxConnections?: number;
  /** A connection without traffic this long is closed (default 10 minutes). */
  idleMs?: number;
  /** An outbound TCP/TLS connection not established by then is a transport error (default 10 s). */
  connectTimeoutMs?: number;
  /** Monotonic ms, for log throttling (injectable for tests). */
  now?: () => number;
}

export interface SipTransportStats {
  /** Messages parsed and handed up. */
  received: number;
  /** Messages written to a socket (or queued on a connecting one). */
  sent: number;
  parseErrors: number;
  /** Open TCP and TLS connections. */
  connections: number;
}

/** Above this a UDP message risks fragmentation (RFC 3261 §18.1.1: 200 bytes under a 1500 MTU). */
export const UDP_WARN_BYTES = 1300;
const DEFAULT_IDLE_MS = 10 * 60 * 1000;
const DEFAULT_MAX_CONNECTIONS = 1000;
const BIND_ATTEMPTS = 5;

/** A datagram of nothing but CR/LF: an RFC 5626 keep-alive over UDP, not a malformed message. */
const isLineEndsOnly = (bytes: Buffer) => bytes.every((byte) => byte === 0x0d || byte === 0x0a);

export class SipTransport implements SipTransportPort {
  readonly #options: SipTransportOptions;
  readonly #log: SipTransportLog;
  readonly #udp: dgram.Socket;
  readonly #tcp: net.Server;
  readonly #tls: tls.Server | undefined;
  readonly #pool: StreamPool;
  readonly #warnParse: Record<SipTransportName, (obj: object, msg: string) => void>;
  readonly #warnOther: (obj: object, msg: string) => void;
  #port = 0;
  #tlsPort: number | undefined;
  #received = 0;
  #sent = 0;
  #parseErrors = 0;
  #closing: Promise<void> | undefined;

  private constructor(options: SipTransportOptions) {
    this.#options = options;
    const log = options.log ?? { warn: () => {} };
    const now = options.now ?? (() => performance.now());
    this.#log = log;
    this.#warnParse = {
      udp: throttledWarn(log, now),
      tcp: throttledWarn(log, now),
      tls: throttledWarn(log, now),
    };
    this.#warnOther = throttledWarn(log, now);
    this.#pool = new StreamPool({
      maxConnections: options.maxConnections ?? DEFAULT_MAX_CONNECTIONS,
      idleMs: options.idleMs ?? DEFAULT_IDLE_MS,
      connectTimeoutMs: options.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS,
      log,
      now,
      tlsClient: {
        ...(options.tls?.ca === undefined ? {} : { ca: options.tls.ca }),
        ...(options.tls?.rejectUnauthorized === undefined
          ? {}
          : { rejectUnauthorized: options.tls.rejectUnauthorized }),
      },
      events: {
        message: (message, connection) => this.#streamMessage(message, connection),
        parseError: (error, connection) =>
          this.#parseError(error, connection.transport, connection.peer, undefined),
        transportError: (destination, error, transport) =>
          this.#transportError(destination, error, transport),
      },
    });
    this.#udp = dgram.createSocket({ type: net.isIPv6(options.host) ? 'udp6' : 'udp4' });
    this.#udp.on('message', (bytes, info) =>
      this.#datagram(bytes, { host: plainAddress(info.address), port: info.port }),
    );
    this.#udp.on('error', (error) => this.#warnOther({ error: error.message }, 'SIP: UDP socket error'));
    this.#tcp = net.createServer((socket) => this.#pool.accept(socket, 'tcp'));
    this.#tcp.on('error', (error) => this.#warnOther({ error: error.message }, 'SIP: TCP server error'));
    if (options.tls) {
      this.#tls = tls.createServer({ cert: options.tls.cert, key: options.tls.key }, (socket) =>
        this.#pool.accept(socket, 'tls'),
      );
      this.#tls.on('tlsClientError', (error, socket) =>
        this.#warnOther({ error: error.message, host: socket.remoteAddress }, 'SIP: TLS handshake failed'),
      );
    }
  }

  /** Binds UDP and TCP on `host:port` and TLS on `tls.port`; resolves once all listen. */
  static async listen(options: SipTransportOptions): Promise<SipTransport> {
    for (let attempt = 1; ; attempt++) {
      const transport = new SipTransport(options);
      try {
        await transport.#bind();
        return transport;
      } catch (error) {
        await transport.close();
        const taken = (error as NodeJS.ErrnoException).code === 'EADDRINUSE';
        if (options.port !== 0 || !taken || attempt >= BIND_ATTEMPTS) throw error;
      }
    }
  }

  async #bind(): Promise<void> {
    const { host, port } = this.#options;
    await new Promise<void>((resolve, reject) => {
      this.#udp.once('error', reject);
      this.#udp.bind({ address: host, port, exclusive: true }, () => {
        this.#udp.off('error', reject);
        resolve();
      });
    });
    this.#port = this.#udp.address().port;
    await listenOn(this.#tcp, host, this.#port);
    if (this.#tls && this.#options.tls) {
      await listenOn(this.#tls, host, this.#options.tls.port);
      this.#tlsPort = (this.#tls.address() as net.AddressInfo).port;
    }
  }

  get stats(): SipTransportStats {
    return {
      received: this.#received,
      sent: this.#sent,
      parseErrors: this.#parseErrors,
      connections: this.#pool.size,
    };
  }

  localAddress(transport: SipTransportName): Peer {
    const host = this.#options.publicHost ?? this.#options.host;
    if (transport !== 'tls') return { host, port: this.#port };
    if (this.#tlsPort === undefined) throw new RangeError('this SIP transport does not listen on TLS');
    return { host, port: this.#tlsPort };
  }

  reliable(transport: string): boolean {
    return transport.toLowerCase() !== 'udp';
  }

  send(message: SipMessage, destination: Peer, transport: SipTransportName): void {
    if (this.#closing) throw new Error('the SIP transport is closed');
    const bytes = serializeMessage(message);
    if (transport === 'udp') {
      if (bytes.length > UDP_WARN_BYTES) {
        this.#log.warn(
          { bytes: bytes.length, destination },
          'SIP: message over 1300 bytes sent over UDP (RFC 3261 §18.1.1 asks for TCP)',
        );
      }
      this.#udp.send(bytes, destination.port, destination.host, (error) => {
        if (error) this.#transportError(destination, error, 'udp');
      });
    } else {
      this.#pool.send(bytes, destination, transport);
    }
    this.#sent++;
  }

  /** Closes every socket and connection; resolves when all are closed. */
  close(): Promise<void> {
    this.#closing ??= Promise.all([
      closeUdp(this.#udp),
      closeServer(this.#tcp),
      this.#tls ? closeServer(this.#tls) : undefined,
      this.#pool.close(),
    ]).then(() => undefined);
    return this.#closing;
  }

  #datagram(bytes: Buffer, source: Peer): void {
    if (isLineEndsOnly(bytes)) return;
    let message: SipMessage;
    try {
      message = parseMessage(bytes);
    } catch (error) {
      const parseError =
        error instanceof SipParseError ? error : new SipParseError('no-message', String(error));
      this.#parseError(parseError, 'udp', source, bytes);
      return;
    }
    this.#deliver(message, source, 'udp');
  }

  #streamMessage(message: SipMessage, connection: StreamConnection): void {
    const delivered = this.#deliver(message, connection.peer, connection.transport);
    if (isRequest(delivered)) {
      this.#pool.alias(connection, responseDestination(delivered, connection.transport));
    }
  }

  #deliver(message: SipMessage, source: Peer, transport: SipTransportName): SipMessage {
    this.#received++;
    const stamped = isRequest(message) ? stampVia(message, source) : message;
    try {
      this.#options.onMessage(stamped, source, transport);
    } catch (error) {
      this.#warnOther(
        { transport, source, error: error instanceof Error ? error.message : String(error) },
        'SIP: message handler threw',
      );
    }
    return stamped;
  }

  #parseError(
    error: SipParseError,
    transport: SipTransportName,
    source: Peer,
    bytes: Buffer | undefined,
  ): void {
    this.#parseErrors++;
    this.#warnParse[transport](
      { transport, source, reason: error.reason, error: error.message },
      'SIP: unparseable message dropped',
    );
    const answer = bytes && !this.#closing ? badRequestFor(bytes, source) : undefined;
    if (answer === undefined) return;
    try {
      this.send(answer, responseDestination(answer, transport), transport);
    } catch (sendError) {
      this.#warnOther({ transport, source, error: (sendError as Error).message }, 'SIP: 400 not sent');
    }
  }

  #transportError(destination: Peer, error: Error, transport: SipTransportName): void {
    this.#warnOther({ transport, destination, error: error.message }, 'SIP: message not delivered');
    try {
      this.#options.onTransportError?.(destination, error, transport);
    } catch (handlerError) {
      this.#warnOther({ error: (handlerError as Error).message }, 'SIP: transport error handler threw');
    }
  }
}

function listenOn(server: net.Server, host: string, port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen({ host, port, exclusive: true }, () => {
      server.off('error', reject);
      resolve();
    });
  });
}

function closeServer(server: net.Server): Promise<void> {
  return new Promise((resolve) => {
    if (!server.listening) resolve();
    else server.close(() => resolve());
  });
}

function closeUdp(socket: dgram.Socket): Promise<void> {
  return new Promise((resolve) => {
    try {
      socket.close(() => resolve());
    } catch {
      resolve(); // never bound, or closed already
    }
  });
}
