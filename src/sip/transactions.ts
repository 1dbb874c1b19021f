/**
 * The SIP transaction layer (RFC 3261 §17, RFC 6026): pure and transport-agnostic. The transport
 * hands every parsed message to `receive`; the layer routes a response to its client transaction and
 * a request to its server transaction (§17.1.3, §17.2.3), or tells the transaction user (TU) about a
 * new request, an ACK for a 2xx, or a stray response. Time, sending and which transports are
 * reliable are injected, so every timer is testable on a fake clock.
 *
 * Requests whose top Via branch lacks the magic cookie (RFC 2543 senders) are refused — reported to
 * the TU as `refused`, no transaction made: every trunk we target speaks RFC 3261, and RFC 2543's
 * matching on Request-URI, tags, Call-ID and CSeq would be a second rule set for no user. Likewise a
 * response whose branch is unknown is a stray one (§17.1.3: a UA drops it; the TU may log it).
 * Transactions remove themselves when their last timer fires; `size` counts the live ones.
 */
import type { SipMessage, SipRequest, SipResponse } from './message.js';
import { isRequest } from './message.js';
import { ClientTransaction, type ClientTransactionEvents } from './transaction-client.js';
import {
  branchOf,
  clientKey,
  cseqMethod,
  MAGIC_COOKIE,
  type Peer,
  serverKey,
  TimerSet,
  type TransactionContext,
  topVia,
} from './transaction-common.js';
import { ServerTransaction } from './transaction-server.js';

export type { ClientState, ClientTransactionEvents } from './transaction-client.js';
export { ClientTransaction } from './transaction-client.js';
export { MAGIC_COOKIE, newBranch, type Peer } from './transaction-common.js';
export type { ServerState } from './transaction-server.js';
export { ServerTransaction, TRYING_DELAY_MS } from './transaction-server.js';

/** What the layer tells the user agent core. */
export interface TransactionUser {
  /** A new request (not ACK), with the server transaction that will answer it. */
  request(transaction: ServerTransaction, source: Peer): void;
  /** An ACK that matches no transaction in Completed: the end-to-end ACK for a 2xx (§17.2.3). */
  ack(request: SipRequest, source: Peer): void;
  /** A response that matches no client transaction. */
  strayResponse(response: SipResponse, source: Peer): void;
  /** A request the layer will not handle (no magic cookie in its branch). */
  refused(request: SipRequest, source: Peer, reason: 'no-magic-cookie'): void;
  /** Timer H fired: the ACK for our non-2xx final never came. */
  serverTimeout?(transaction: ServerTransaction): void;
  serverTransportError?(transaction: ServerTransaction, error: unknown): void;
}

export interface TransactionLayerOptions extends Omit<TransactionContext, 'T1' | 'T2' | 'T4'> {
  T1?: number;
  T2?: number;
  T4?: number;
}

export class TransactionLayer {
  readonly #context: TransactionContext;
  readonly #clients = new Map<string, ClientTransaction>();
  readonly #servers = new Map<string, ServerTransaction>();

  constructor(
    options: TransactionLayerOptions,
    private readonly user: TransactionUser,
  ) {
    this.#context = { T1: 500, T2: 4000, T4: 5000, ...options };
  }

  /** Live transactions, client and server (what is not removed after its timers is a leak). */
  get size(): number {
    return this.#clients.size + this.#servers.size;
  }

  /**
   * Starts a client transaction: the request must carry its top Via with a fresh `newBranch()`.
   * ACK is not a transaction (§17.1): send an ACK for a 2xx with the transport directly.
   */
  sendRequest(
    request: SipRequest,
    destination: Peer,
    transport: string,
    events: ClientTransactionEvents,
  ): ClientTransaction {
    if (request.method === 'ACK') throw new RangeError('an ACK is not sent in a transaction');
    const branch = branchOf(topVia(request));
    if (branch === undefined || !branch.startsWith(MAGIC_COOKIE)) {
      throw new RangeError('the top Via needs a branch starting with z9hG4bK');
    }
    const key = clientKey(branch, request.method);
    if (this.#clients.has(key)) throw new RangeError(`a transaction with branch ${branch} is live`);
    const transaction = new ClientTransaction(
      request,
      destination,
      transport,
      this.#context,
      new TimerSet(this.#context.timers),
      events,
      () => this.#clients.delete(key),
    );
    this.#clients.set(key, transaction);
    transaction.start();
    return transaction;
  }

  /** A message from the transport, already parsed. */
  receive(message: SipMessage, source: Peer): void {
    if (isRequest(message)) this.#receiveRequest(message, source);
    else this.#receiveResponse(message, source);
  }

  /** The INVITE server transaction a CANCEL targets (§9.2: same branch and sent-by), if still live. */
  cancelTarget(cancel: SipRequest): ServerTransaction | undefined {
    return this.#servers.get(serverKey(topVia(cancel), 'INVITE'));
  }

  #receiveResponse(response: SipResponse, source: Peer): void {
    const branch = branchOf(topVia(response));
    const transaction = branch && this.#clients.get(clientKey(branch, cseqMethod(response)));
    if (transaction) transaction.receive(response);
    else this.user.strayResponse(response, source);
  }

  #receiveRequest(request: SipRequest, source: Peer): void {
    const via = topVia(request);
    if (!branchOf(via)?.startsWith(MAGIC_COOKIE)) {
      this.user.refused(request, source, 'no-magic-cookie');
      return;
    }
    const key = serverKey(via, request.method);
    const existing = this.#servers.get(key);
    if (request.method === 'ACK') {
      // Only an INVITE transaction that sent a non-2xx final takes the ACK; in Accepted (or gone)
      // the ACK acknowledges a 2xx and belongs to the dialog (RFC 6026 §8.7).
      if (existing && (existing.state === 'completed' || existing.state === 'confirmed')) {
        existing.receive(request);
      } else {
        this.user.ack(request, source);
      }
      return;
    }
    if (existing) {
      existing.receive(request);
      return;
    }
    const transaction = new ServerTransaction(
      request,
      source,
      this.#context,
      new TimerSet(this.#context.timers),
      {
        timeout: (tx) => this.user.serverTimeout?.(tx),
        transportError: (tx, error) => this.user.serverTransportError?.(tx, error),
      },
      () => this.#servers.delete(key),
    );
    this.#servers.set(key, transaction);
    this.user.request(transaction, source);
  }
}
