/**
 * An in-memory SIP network on fake timers for user-agent tests: every endpoint is a `SipTransportPort`
 * at its own address; a message is serialized and parsed again on the way (so what travels is what
 * the wire would carry), arrives after `latencyMs`, and may be lost (`drop`) to prove retransmissions.
 * Messages to an address nobody holds vanish, as UDP datagrams do. `log` keeps everything sent.
 */
import { isRequest, parseMessage, type SipMessage, serializeMessage } from '../../src/sip/message.js';
import type { Peer } from '../../src/sip/transaction-common.js';
import type { SipMessageHandler, SipTransportName, SipTransportPort } from '../../src/sip/transport-types.js';
import type { FakeTimers } from './fake-timers.js';

export interface Sent {
  at: number;
  from: Peer;
  to: Peer;
  transport: SipTransportName;
  message: SipMessage;
  dropped: boolean;
}

const key = (peer: Peer) => `${peer.host}:${peer.port}`;

export class MemoryNetwork {
  readonly log: Sent[] = [];
  readonly #ports = new Map<string, MemoryPort>();
  /** Return true to lose this message. */
  drop: (sent: Sent) => boolean = () => false;
  /** Return true to make the sender's `send` throw (a refused TCP connection). */
  refuse: (sent: Sent) => boolean = () => false;

  constructor(
    readonly timers: FakeTimers,
    readonly latencyMs = 5,
  ) {}

  port(address: Peer, handler?: SipMessageHandler): MemoryPort {
    const port = new MemoryPort(this, address);
    if (handler) port.handler = handler;
    this.#ports.set(key(address), port);
    return port;
  }

  deliver(from: Peer, to: Peer, transport: SipTransportName, message: SipMessage): void {
    const bytes = serializeMessage(message);
    const sent: Sent = {
      at: this.timers.now(),
      from,
      to,
      transport,
      message: parseMessage(bytes),
      dropped: false,
    };
    if (this.refuse(sent)) throw new Error('ECONNREFUSED');
    sent.dropped = this.drop(sent);
    this.log.push(sent);
    if (sent.dropped) return;
    this.timers.setTimeout(() => {
      this.#ports.get(key(to))?.handler?.(parseMessage(bytes), from, transport);
    }, this.latencyMs);
  }

  /** Requests of one method sent so far (optionally only those not lost). */
  requests(method: string): Sent[] {
    return this.log.filter((s) => isRequest(s.message) && s.message.method === method);
  }

  /** Responses with this CSeq method, as `status` numbers in order. */
  statuses(cseqMethod: string): number[] {
    return this.log
      .filter(
        (s) =>
          !isRequest(s.message) &&
          s.message.headers.some((h) => h.name === 'CSeq' && h.value.endsWith(` ${cseqMethod}`)),
      )
      .map((s) => ('status' in s.message ? s.message.status : 0));
  }
}

export class MemoryPort implements SipTransportPort {
  handler: SipMessageHandler | undefined;

  constructor(
    private readonly network: MemoryNetwork,
    readonly address: Peer,
  ) {}

  send(message: SipMessage, destination: Peer, transport: SipTransportName): void {
    this.network.deliver(this.address, destination, transport, message);
  }

  localAddress(): Peer {
    return this.address;
  }

  reliable(transport: string): boolean {
    return transport !== 'udp';
  }
}
