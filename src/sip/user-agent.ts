/**
 * The SIP user agent core (RFC 3261 §8, §12): the one object the transport hands every message to.
 * It owns the transaction layer and the table of dialogs, and decides who answers a new request: a
 * call's dialog (BYE, re-INVITE, REFER's NOTIFY…), a new `IncomingCall` for an INVITE without a To
 * tag, the core itself for OUT-of-dialog OPTIONS (200), CANCEL (matched to its INVITE), and a refusal
 * for the rest (481 for a dialog we do not know, 405 for methods we do not serve, REGISTER included).
 * It also places calls (`invite`), pings (`ping`, OPTIONS keep-alive) and registers (`register`).
 *
 * Responses go where RFC 3261 §18.2.2 / RFC 3581 say (`responseDestination`, dialog.ts): the layer
 * hands us the source address and we correct it from the top Via before the transport sends.
 */
import { formatVia } from './address.js';
import type { SipCall } from './call.js';
import { dialogKey, incomingDialogKey, newCallId, newTag, responseDestination, tagOf } from './dialog.js';
import { header } from './headers.js';
import { isRequest, type SipMessage, type SipRequest, type SipResponse } from './message.js';
import { type RegisterOptions, Registration } from './registration.js';
import { buildResponse } from './response.js';
import type { PacerTimers } from './rtp-pacer.js';
import { newBranch, type Peer, topVia } from './transaction-common.js';
import { type ServerTransaction, TransactionLayer, type TransactionUser } from './transactions.js';
import type { SipTransportName, SipTransportPort } from './transport-types.js';
import {
  ALLOWED_METHODS,
  type Closable,
  type DialogOwner,
  silentLog,
  TIMEOUT_STATUS,
  TRANSPORT_ERROR_STATUS,
  type UaCore,
  type UaLog,
} from './ua-core.js';
import { formatHost } from './uri.js';
import { IncomingCall, type InviteOptions, OutgoingCall } from './user-agent-calls.js';

export type { CallEnd } from './call.js';
export type { RegisterOptions } from './registration.js';
export type { CallFailure, InviteOptions } from './user-agent-calls.js';
export { IncomingCall, OutgoingCall, Registration };

export interface UserAgentOptions {
  transport: SipTransportPort;
  timers: PacerTimers;
  /** Our User-Agent header (default `Switchboard`). */
  userAgent?: string;
  log?: UaLog;
  /** A new call: answer it with `ringing`, `accept` or `reject`. */
  onInvite(call: IncomingCall): void;
  /** The user part of our Contact (default `switchboard`). */
  contactUser?: string;
  T1?: number;
  T2?: number;
}

export class UserAgent implements TransactionUser {
  readonly #transport: SipTransportPort;
  readonly #layer: TransactionLayer;
  readonly #dialogs = new Map<string, DialogOwner>();
  readonly #tracked = new Set<Closable>();
  readonly #core: UaCore;
  readonly #onInvite: (call: IncomingCall) => void;
  /** The transport of the message being received (the layer's TU callbacks do not carry it). */
  #receiving: SipTransportName = 'udp';

  constructor(options: UserAgentOptions) {
    const { transport, timers } = options;
    this.#transport = transport;
    this.#onInvite = options.onInvite;
    const reliable = (name: string) => transport.reliable(name.toLowerCase());
    this.#layer = new TransactionLayer(
      {
        send: (message, destination, name) => this.#send(message, destination, name),
        timers,
        reliable,
        ...(options.T1 === undefined ? {} : { T1: options.T1 }),
        ...(options.T2 === undefined ? {} : { T2: options.T2 }),
      },
      this,
    );
    const contactUser = options.contactUser ?? 'switchboard';
    this.#core = {
      layer: this.#layer,
      transport,
      timers,
      T1: options.T1 ?? 500,
      T2: options.T2 ?? 4000,
      userAgent: options.userAgent ?? 'Switchboard',
      log: options.log ?? silentLog,
      via: (name) => {
        const local = transport.localAddress(name);
        const params = new Map<string, string | null>([
          ['branch', newBranch()],
          ['rport', null],
        ]);
        return formatVia({ transport: name.toUpperCase(), host: local.host, port: local.port, params });
      },
      contactUri: (name, user = contactUser) => {
        const local = transport.localAddress(name);
        const suffix = name === 'udp' ? '' : `;transport=${name}`;
        return `sip:${user}@${formatHost(local.host)}:${local.port}${suffix}`;
      },
      sendDirect: (message, destination, name) => {
        try {
          transport.send(message, destination, name);
          return true;
        } catch (error) {
          this.#core.log.warn({ error: String(error) }, 'SIP message not sent');
          return false;
        }
      },
      addDialog: (key, owner) => this.#dialogs.set(key, owner),
      removeDialog: (key) => this.#dialogs.delete(key),
      track: (item) => this.#tracked.add(item),
      untrack: (item) => this.#tracked.delete(item),
    };
  }

  /** Live dialogs (confirmed calls, and answered ones waiting for their ACK). */
  get dialogs(): number {
    return this.#dialogs.size;
  }

  /** Live transactions, client and server. */
  get transactions(): number {
    return this.#layer.size;
  }

  /** Calls not answered yet and registrations: what `close()` still has to end. */
  get pending(): number {
    return this.#tracked.size;
  }

  /** What the transport calls with every parsed message. */
  receive(message: SipMessage, source: Peer, transport: SipTransportName): void {
    this.#receiving = transport;
    try {
      this.#layer.receive(message, source);
    } catch (error) {
      this.#core.log.warn({ error: String(error) }, 'SIP message dropped');
    }
  }

  invite(options: InviteOptions): OutgoingCall {
    return new OutgoingCall(this.#core, options);
  }

  register(options: RegisterOptions): Registration {
    return new Registration(this.#core, options);
  }

  /**
   * OPTIONS keep-alive: resolves with the final status (a 401/407 means the peer is alive too) and
   * the round-trip time; 408 when nothing answered within 64·T1, 503 on a transport error.
   */
  ping(
    destination: Peer,
    transport: SipTransportName,
    uri: string,
  ): Promise<{ status: number; rttMs: number }> {
    const timers = this.#core.timers;
    const local = this.#transport.localAddress(transport);
    const request: SipRequest = {
      method: 'OPTIONS',
      uri,
      version: 'SIP/2.0',
      headers: [
        { name: 'Via', value: this.#core.via(transport) },
        { name: 'Max-Forwards', value: '70' },
        { name: 'From', value: `<${this.#core.contactUri(transport)}>;tag=${newTag()}` },
        { name: 'To', value: `<${uri}>` },
        { name: 'Call-ID', value: newCallId(local.host) },
        { name: 'CSeq', value: '1 OPTIONS' },
        { name: 'Accept', value: 'application/sdp' },
        { name: 'User-Agent', value: this.#core.userAgent },
      ],
      body: Buffer.alloc(0),
    };
    const start = timers.now();
    return new Promise((resolve) => {
      const done = (status: number) => resolve({ status, rttMs: timers.now() - start });
      try {
        this.#layer.sendRequest(request, destination, transport, {
          final: (response) => done(response.status),
          timeout: () => done(TIMEOUT_STATUS),
          transportError: () => done(TRANSPORT_ERROR_STATUS),
        });
      } catch {
        done(TRANSPORT_ERROR_STATUS);
      }
    });
  }

  /** BYE every dialog, CANCEL unanswered calls (480 to unanswered incoming ones), unregister. */
  async close(): Promise<void> {
    const work: Promise<unknown>[] = [...this.#tracked].map((item) => item.close());
    for (const owner of new Set(this.#dialogs.values())) {
      work.push((owner as SipCall).bye());
    }
    await Promise.all(work);
  }

  // TransactionUser: what the layer tells us.

  request(transaction: ServerTransaction, source: Peer): void {
    const request = transaction.request;
    const key = incomingDialogKey(request);
    if (key !== undefined) {
      const owner = this.#dialogs.get(key);
      if (owner) owner.handleRequest(transaction);
      else this.#answer(transaction, 481);
      return;
    }
    switch (request.method) {
      case 'INVITE': {
        const call = new IncomingCall(this.#core, transaction, source, this.#receiving);
        this.#onInvite(call);
        return;
      }
      case 'CANCEL':
        this.#cancel(transaction);
        return;
      case 'OPTIONS':
        this.#answer(transaction, 200, [
          { name: 'Allow', value: ALLOWED_METHODS },
          { name: 'Accept', value: 'application/sdp' },
        ]);
        return;
      case 'BYE':
      case 'NOTIFY':
      case 'INFO':
      case 'REFER':
        this.#answer(transaction, 481);
        return;
      default:
        this.#answer(transaction, 405, [{ name: 'Allow', value: ALLOWED_METHODS }]);
        return;
    }
  }

  ack(request: SipRequest): void {
    const key = incomingDialogKey(request);
    if (key !== undefined) this.#dialogs.get(key)?.handleAck(request);
  }

  strayResponse(response: SipResponse): void {
    // A 2xx to our INVITE after its transaction ended: the dialog's ACK answers it again.
    if (response.status < 200 || response.status >= 300) return;
    const callId = header(response, 'Call-ID');
    const local = tagOf(header(response, 'From'));
    const remote = tagOf(header(response, 'To'));
    if (callId === undefined || local === undefined) return;
    const owner = this.#dialogs.get(dialogKey(callId, local, remote ?? ''));
    if (owner instanceof OutgoingCall) owner.answerRetransmitted(response);
  }

  refused(request: SipRequest, _source: Peer, reason: string): void {
    this.#core.log.debug({ method: request.method, reason }, 'SIP request refused');
  }

  serverTimeout(transaction: ServerTransaction): void {
    this.#core.log.debug({ method: transaction.request.method }, 'SIP ACK for a non-2xx never came');
  }

  #cancel(transaction: ServerTransaction): void {
    const target = this.#layer.cancelTarget(transaction.request);
    const call = [...this.#tracked].find(
      (item): item is IncomingCall => item instanceof IncomingCall && item.transaction === target,
    );
    if (call) call.cancelled(transaction);
    // An INVITE already answered: the CANCEL is answered and changes nothing (§9.2).
    else this.#answer(transaction, target ? 200 : 481);
  }

  #answer(
    transaction: ServerTransaction,
    status: number,
    extra: { name: string; value: string }[] = [],
  ): void {
    const toTag = tagOf(header(transaction.request, 'To')) === undefined ? newTag() : undefined;
    try {
      transaction.respond(
        buildResponse(transaction.request, status, { headers: extra, ...(toTag ? { toTag } : {}) }),
      );
    } catch (error) {
      this.#core.log.warn({ error: String(error), status }, 'SIP response not sent');
    }
  }

  /** The layer's sends: responses re-addressed per §18.2.2, transports named in lower case. */
  #send(message: SipMessage, destination: Peer, name: string): void {
    const transport = name.toLowerCase() as SipTransportName;
    const target = isRequest(message)
      ? destination
      : responseDestination(topVia(message), destination, this.#transport.reliable(transport));
    this.#transport.send(message, target, transport);
  }
}
