/**
 * The connections of SIP's stream transports, TCP and TLS (RFC 3261 §18): one pool, keyed by the
 * peer's address, whose sockets both sides may have opened. `transport.ts` owns the listening sockets
 * and what happens to a parsed message; this file owns the connections' lives.
 *
 * Design choices:
 * - A connection is found by `transport|ip:port` of its far end, whoever opened it, so a response or
 *   a later request to a peer that connected to us goes back over its connection (§18.2.2, and what
 *   trunks behind NAT need). A request that came over a connection also registers the address its
 *   response will be sent to (the top Via's `received`/`rport` or sent-by, see `responseDestination`)
 *   as an alias of the connection, so the response finds it even when that is not the socket's port.
 * - Sending to a peer without a connection opens one and queues the bytes on it: connecting is
 *   asynchronous, so a failure to connect (refused, unverified certificate, not established within
 *   `connectTimeoutMs`) is reported through `transportError`, not thrown. Only what is known at once
 *   (the connection limit reached, the pool closed) throws.
 * - Each connection frames its input with `StreamFramer`: a keep-alive ping is answered with the pong,
 *   a malformed message is reported and skipped, broken framing closes the connection.
 * - Bounded: at most `maxConnections` (inbound beyond it are closed at once), each closed after
 *   `idleMs` without traffic; socket errors are logged (at most once a second), never thrown.
 */
import net from 'node:net';
import tls from 'node:tls';
import type { SipMessage } from './message.js';
import { KEEPALIVE_PONG, StreamFramer } from './stream-framer.js';
import type { SipParseError } from './syntax.js';
import type { Peer } from './transaction-common.js';
import { formatHost } from './uri.js';

export type StreamTransportName = 'tcp' | 'tls';

export interface SipTransportLog {
  warn(obj: object, msg: string): void;
}

/** One open connection (inbound or outbound) and what it has read so far. */
export interface StreamConnection {
  readonly transport: StreamTransportName;
  /** The far end as the socket reports it (outbound: the destination it was opened to). */
  readonly peer: Peer;
  readonly socket: net.Socket;
  readonly framer: StreamFramer;
  /** The keys it is found by: its own and the aliases requests over it registered. */
  readonly keys: Set<string>;
  /** False for an outbound connection until it is established. */
  connected: boolean;
}

export interface StreamEvents {
  message(message: SipMessage, connection: StreamConnection): void;
  parseError(error: SipParseError, connection: StreamConnection): void;
  transportError(destination: Peer, error: Error, transport: StreamTransportName): void;
}

export interface StreamPoolOptions {
  maxConnections: number;
  idleMs: number;
  log: SipTransportLog;
  events: StreamEvents;
  /** Options for outbound TLS connections (a `ca` to trust, `rejectUnauthorized`…). */
  tlsClient?: tls.ConnectionOptions;
  /** An outbound connection not established by then is dropped as a transport error. */
  connectTimeoutMs: number;
  now: () => number;
}

/** How many aliases one connection may register (each distinct Via sent-by port is one). */
const MAX_ALIASES = 8;

/** How long an outbound connection may take to be established (TCP, and TLS's handshake). */
export const DEFAULT_CONNECT_TIMEOUT_MS = 10_000;

/** An address as peers know it: `::ffff:192.0.2.1` (IPv4 on a dual-stack socket) as `192.0.2.1`. */
export function plainAddress(address: string): string {
  const mapped = /^::ffff:([0-9]+\.[0-9]+\.[0-9]+\.[0-9]+)$/i.exec(address);
  return mapped?.[1] ?? address;
}

export function connectionKey(transport: StreamTransportName, peer: Peer): string {
  return `${transport}|${formatHost(peer.host.toLowerCase())}:${peer.port}`;
}

/** Calls `log` at most once per `intervalMs`, telling how many calls it swallowed since the last. */
export function throttledWarn(
  log: SipTransportLog,
  now: () => number,
  intervalMs = 1000,
): (obj: object, msg: string) => void {
  let last = Number.NEGATIVE_INFINITY;
  let suppressed = 0;
  return (obj, msg) => {
    const at = now();
    if (at - last < intervalMs) {
      suppressed++;
      return;
    }
    last = at;
    log.warn(suppressed > 0 ? { ...obj, suppressed } : obj, msg);
    suppressed = 0;
  };
}

export class StreamPool {
  readonly #options: StreamPoolOptions;
  readonly #byKey = new Map<string, StreamConnection>();
  readonly #all = new Set<StreamConnection>();
  readonly #warnSocket: (obj: object, msg: string) => void;
  readonly #warnRefused: (obj: object, msg: string) => void;
  #closed = false;

  constructor(options: StreamPoolOptions) {
    this.#options = options;
    this.#warnSocket = throttledWarn(options.log, options.now);
    this.#warnRefused = throttledWarn(options.log, options.now);
  }

  get size(): number {
    return this.#all.size;
  }

  /** Takes an accepted socket (a TCP `connection`, a TLS `secureConnection`). */
  accept(socket: net.Socket, transport: StreamTransportName): void {
    const host = socket.remoteAddress === undefined ? undefined : plainAddress(socket.remoteAddress);
    const port = socket.remotePort;
    if (this.#closed || host === undefined || port === undefined) {
      socket.destroy();
      return;
    }
    if (this.#all.size >= this.#options.maxConnections) {
      this.#warnRefused(
        { transport, peer: { host, port }, maxConnections: this.#options.maxConnections },
        'SIP: connection refused, too many connections',
      );
      socket.destroy();
      return;
    }
    this.#adopt(socket, transport, { host, port }, true);
  }

  /** Writes a serialized message to the peer, over its connection or a new one. */
  send(bytes: Buffer, destination: Peer, transport: StreamTransportName): void {
    const connection =
      this.#find(connectionKey(transport, destination)) ?? this.#connect(destination, transport);
    connection.socket.write(bytes);
  }

  /** Lets `peer` find `connection` too (the address a response to a request over it goes to). */
  alias(connection: StreamConnection, peer: Peer): void {
    const key = connectionKey(connection.transport, peer);
    if (connection.keys.has(key) || connection.keys.size > MAX_ALIASES) return;
    if (this.#find(key) !== undefined) return;
    connection.keys.add(key);
    this.#byKey.set(key, connection);
  }

  /** Destroys every connection; resolves when all are closed. Later sends throw. */
  async close(): Promise<void> {
    this.#closed = true;
    const closing = [...this.#all].map(
      (connection) =>
        new Promise<void>((resolve) => {
          if (connection.socket.closed) resolve();
          else connection.socket.once('close', () => resolve());
          connection.socket.destroy();
        }),
    );
    await Promise.all(closing);
  }

  #find(key: string): StreamConnection | undefined {
    const connection = this.#byKey.get(key);
    if (connection === undefined || !connection.socket.destroyed) return connection;
    this.#forget(connection);
    return undefined;
  }

  #connect(destination: Peer, transport: StreamTransportName): StreamConnection {
    if (this.#closed) throw new Error('the SIP transport is closed');
    if (this.#all.size >= this.#options.maxConnections) {
      throw new Error(`too many SIP connections (${this.#options.maxConnections})`);
    }
    const { host, port } = destination;
    const socket =
      transport === 'tls'
        ? tls.connect({
            ...this.#options.tlsClient,
            host,
            port,
            ...(net.isIP(host) === 0 ? { servername: host } : {}),
          })
        : net.connect({ host, port });
    const connection = this.#adopt(socket, transport, { host, port }, false);
    const timer = setTimeout(() => {
      if (!connection.connected)
        socket.destroy(new Error(`no ${transport} connection within ${this.#options.connectTimeoutMs} ms`));
    }, this.#options.connectTimeoutMs);
    socket.once('close', () => clearTimeout(timer));
    socket.once(transport === 'tls' ? 'secureConnect' : 'connect', () => {
      connection.connected = true;
      clearTimeout(timer);
    });
    return connection;
  }

  #adopt(
    socket: net.Socket,
    transport: StreamTransportName,
    peer: Peer,
    connected: boolean,
  ): StreamConnection {
    const key = connectionKey(transport, peer);
    const connection: StreamConnection = {
      transport,
      peer,
      socket,
      framer: new StreamFramer(),
      keys: new Set([key]),
      connected,
    };
    this.#all.add(connection);
    this.#byKey.set(key, connection);
    socket.setNoDelay(true);
    socket.setTimeout(this.#options.idleMs, () => socket.destroy());
    socket.on('data', (chunk: Buffer) => this.#onData(connection, chunk));
    socket.on('error', (error: Error) => {
      if (!connection.connected) {
        this.#options.events.transportError(peer, error, transport);
      }
      this.#warnSocket({ transport, peer, error: error.message }, 'SIP: connection error');
    });
    socket.on('close', () => this.#forget(connection));
    return connection;
  }

  #onData(connection: StreamConnection, chunk: Buffer): void {
    for (const event of connection.framer.push(chunk)) {
      if (connection.socket.destroyed) return;
      if (event.type === 'ping') {
        connection.socket.write(KEEPALIVE_PONG);
      } else if (event.type === 'message') {
        this.#options.events.message(event.message, connection);
      } else {
        this.#options.events.parseError(event.error, connection);
        if (event.fatal) connection.socket.destroy();
      }
    }
  }

  #forget(connection: StreamConnection): void {
    this.#all.delete(connection);
    for (const key of connection.keys) {
      if (this.#byKey.get(key) === connection) this.#byKey.delete(key);
    }
  }
}
