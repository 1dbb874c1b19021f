/**
 * What the SIP user agent needs of the transport layer, and what the transport hands up: the seam
 * between `transport.ts` (sockets: UDP, TCP, TLS) and `user-agent.ts` (dialogs over the transaction
 * layer). Kept apart so the user agent is tested over an in-memory transport and the transport over
 * real sockets, each without the other.
 */
import type { SipMessage } from './message.js';
import type { Peer } from './transaction-common.js';

/** The transports a SIP message travels over (RFC 3261 §18; TLS is `sips:` or `;transport=tls`). */
export type SipTransportName = 'udp' | 'tcp' | 'tls';

/** Every message the transport parsed, with where it came from and over what. */
export type SipMessageHandler = (message: SipMessage, source: Peer, transport: SipTransportName) => void;

export interface SipTransportPort {
  /**
   * Sends a message. Over TCP/TLS a connection to `destination` is reused (one the peer opened
   * counts) or opened; a throw is a transport error (RFC 3261 §17.1.4).
   */
  send(message: SipMessage, destination: Peer, transport: SipTransportName): void;
  /** Our address as peers reach us over `transport`: the Via sent-by and the Contact host and port. */
  localAddress(transport: SipTransportName): Peer;
  /** TCP and TLS are reliable (no retransmissions, RFC 3261 §17). */
  reliable(transport: string): boolean;
}

export function isSipTransportName(value: string): value is SipTransportName {
  return value === 'udp' || value === 'tcp' || value === 'tls';
}
