/**
 * What the SIP transaction layer's client and server halves share (RFC 3261 §17): the injected
 * context (how to send, what time it is, which transports are reliable, T1/T2/T4), the key a message
 * is matched by (§17.1.3, §17.2.3) and a small named-timer holder so a transaction can cancel all of
 * its timers when it ends and leaves nothing behind.
 */
import { randomBytes } from 'node:crypto';
import { parseCSeq, parseVia, type Via } from './address.js';
import { header, headers } from './headers.js';
import type { SipMessage } from './message.js';
import type { PacerTimers } from './rtp-pacer.js';

/** Where a message goes or came from; the transport layer owns its meaning beyond host and port. */
export interface Peer {
  host: string;
  port: number;
}

export interface TransactionContext {
  /** Hands a message to the transport; a throw is a transport error (RFC 3261 §17.1.4, §17.2.4). */
  send(message: SipMessage, destination: Peer, transport: string): void;
  timers: PacerTimers;
  /** TCP, TLS, SCTP, WS: no retransmissions and no waiting for retransmissions (§17). */
  reliable(transport: string): boolean;
  /** RTT estimate, 500 ms by default (§17.1.1.1). */
  T1: number;
  /** The longest retransmit interval for non-INVITE requests and INVITE responses, 4 s. */
  T2: number;
  /** How long a message may stay in the network, 5 s. */
  T4: number;
}

/** The magic cookie that says a branch is RFC 3261-unique (§8.1.1.7). */
export const MAGIC_COOKIE = 'z9hG4bK';

/** A new branch: the magic cookie and 96 random bits. */
export function newBranch(): string {
  return `${MAGIC_COOKIE}${randomBytes(12).toString('base64url')}`;
}

/** The top Via of a message (parseMessage has checked that every message has a valid one). */
export function topVia(message: SipMessage): Via {
  const first = headers(message, 'Via')[0];
  if (first === undefined) throw new RangeError('the message has no Via');
  return parseVia(first);
}

export function cseqMethod(message: SipMessage): string {
  const cseq = header(message, 'CSeq');
  if (cseq === undefined) throw new RangeError('the message has no CSeq');
  return parseCSeq(cseq).method;
}

export function branchOf(via: Via): string | undefined {
  return via.params.get('branch') ?? undefined;
}

/** The key a client transaction's responses match (§17.1.3): top Via branch and CSeq method. */
export function clientKey(branch: string, method: string): string {
  return `${branch}\n${method}`;
}

/**
 * The key a server transaction's requests match (§17.2.3): branch, sent-by and method, with ACK
 * standing for the INVITE it acknowledges. The branch compares case-sensitively (it is a token the
 * sender chose); host case-insensitively.
 */
export function serverKey(via: Via, method: string): string {
  const branch = branchOf(via) ?? '';
  const sentBy = `${via.host.toLowerCase()}:${via.port ?? ''}`;
  return `${branch}\n${sentBy}\n${method === 'ACK' ? 'INVITE' : method}`;
}

/** Named one-shot timers on injected time; `clearAll` when the transaction ends. */
export class TimerSet {
  readonly #handles = new Map<string, unknown>();

  constructor(private readonly timers: PacerTimers) {}

  start(name: string, ms: number, fire: () => void): void {
    this.stop(name);
    const handle = this.timers.setTimeout(() => {
      this.#handles.delete(name);
      fire();
    }, ms);
    this.#handles.set(name, handle);
  }

  stop(name: string): void {
    const handle = this.#handles.get(name);
    if (handle === undefined) return;
    this.timers.clearTimeout(handle);
    this.#handles.delete(name);
  }

  clearAll(): void {
    for (const name of [...this.#handles.keys()]) this.stop(name);
  }
}
