/**
 * Client transactions (RFC 3261 §17.1 with RFC 6026's Accepted state): the retransmission and timeout
 * machinery between the user agent that sends a request and the transport.
 *
 * - INVITE: Calling (timer A retransmits on unreliable transports at T1, 2·T1, 4·T1… until timer B,
 *   64·T1) → Proceeding on a 1xx (no more retransmissions) → Completed on 300-699, where this
 *   transaction sends the ACK itself with the INVITE's branch (§17.1.1.3) and re-sends it for every
 *   retransmitted final until timer D (32 s, 0 on reliable transports); or → Accepted on a 2xx (RFC
 *   6026 §7.2), where every 2xx — the first and the retransmissions of each fork — goes up to the
 *   caller until timer M (64·T1), because the ACK for a 2xx is the dialog's.
 * - Non-INVITE: Trying (timer E from T1 doubling, capped at T2) → Proceeding on a 1xx (E continues at
 *   T2) → Completed on a final, absorbing retransmitted finals until timer K (T4, 0 reliable); timer
 *   F (64·T1) times out Trying and Proceeding.
 * A send that throws ends the transaction with a transport error (§17.1.4).
 */
import { formatVia } from './address.js';
import { header, headers, type SipHeader } from './headers.js';
import type { SipRequest, SipResponse } from './message.js';
import { type Peer, type TimerSet, type TransactionContext, topVia } from './transaction-common.js';

export type ClientState = 'calling' | 'trying' | 'proceeding' | 'completed' | 'accepted' | 'terminated';

/**
 * What a client transaction tells the caller. `provisional` may come many times; `final` once, except
 * that every 2xx in Accepted (retransmissions, other forks) comes up too; `timeout` and
 * `transportError` end the transaction.
 */
export interface ClientTransactionEvents {
  provisional?(response: SipResponse): void;
  final?(response: SipResponse): void;
  /** Timer B or F: no final response came. */
  timeout?(): void;
  transportError?(error: unknown): void;
}

export class ClientTransaction {
  #state: ClientState;
  readonly #isInvite: boolean;
  readonly #reliable: boolean;
  #interval: number;

  constructor(
    readonly request: SipRequest,
    readonly destination: Peer,
    readonly transport: string,
    private readonly context: TransactionContext,
    private readonly timers: TimerSet,
    private readonly events: ClientTransactionEvents,
    private readonly onTerminated: () => void,
  ) {
    this.#isInvite = request.method === 'INVITE';
    this.#reliable = context.reliable(transport);
    this.#state = this.#isInvite ? 'calling' : 'trying';
    this.#interval = context.T1;
  }

  get state(): ClientState {
    return this.#state;
  }

  /** Sends the request and starts the timers; called once by the layer. */
  start(): void {
    if (!this.#send(this.request)) return;
    const { T1 } = this.context;
    if (!this.#reliable) this.timers.start('retransmit', T1, () => this.#retransmit());
    this.timers.start('timeout', 64 * T1, () => {
      this.#terminate();
      this.events.timeout?.();
    });
  }

  /** A response matched to this transaction by the layer. */
  receive(response: SipResponse): void {
    const status = response.status;
    if (this.#state === 'terminated') return;
    if (this.#state === 'completed') {
      if (this.#isInvite && status >= 300) this.#send(this.#ackFor(response));
      return;
    }
    if (this.#state === 'accepted') {
      if (status >= 200 && status < 300) this.events.final?.(response);
      return;
    }
    if (status < 200) {
      this.#provisional(response);
      return;
    }
    this.timers.stop('retransmit');
    this.timers.stop('timeout');
    if (this.#isInvite && status < 300) {
      this.#state = 'accepted';
      this.timers.start('wait', 64 * this.context.T1, () => this.#terminate());
      this.events.final?.(response);
      return;
    }
    if (this.#isInvite && !this.#send(this.#ackFor(response))) return;
    this.#state = 'completed';
    this.events.final?.(response);
    const wait = this.#reliable ? 0 : this.#isInvite ? 32_000 : this.context.T4;
    this.#wait(wait);
  }

  #provisional(response: SipResponse): void {
    if (this.#isInvite) {
      this.timers.stop('retransmit');
      // Timer B only guards Calling (§17.1.1.2): once a 1xx came, the TU decides when to give up.
      this.timers.stop('timeout');
    }
    this.#state = 'proceeding';
    this.events.provisional?.(response);
  }

  #retransmit(): void {
    if (!this.#send(this.request)) return;
    const { T2 } = this.context;
    if (this.#isInvite) this.#interval *= 2;
    else this.#interval = this.#state === 'proceeding' ? T2 : Math.min(2 * this.#interval, T2);
    this.timers.start('retransmit', this.#interval, () => this.#retransmit());
  }

  #wait(ms: number): void {
    if (ms === 0) this.#terminate();
    else this.timers.start('wait', ms, () => this.#terminate());
  }

  /** The ACK for a non-2xx final (§17.1.1.3): same Request-URI, branch, Call-ID, From, CSeq number. */
  #ackFor(response: SipResponse): SipRequest {
    const request = this.request;
    const copy = (name: string): SipHeader[] => {
      const value = header(request, name);
      return value === undefined ? [] : [{ name, value }];
    };
    const cseq = header(request, 'CSeq')?.trim().split(/\s+/)[0] ?? '1';
    return {
      method: 'ACK',
      uri: request.uri,
      version: 'SIP/2.0',
      headers: [
        { name: 'Via', value: formatVia(topVia(request)) },
        ...headers(request, 'Route').map((value) => ({ name: 'Route', value })),
        { name: 'Max-Forwards', value: '70' },
        ...copy('From'),
        { name: 'To', value: header(response, 'To') ?? header(request, 'To') ?? '' },
        ...copy('Call-ID'),
        { name: 'CSeq', value: `${cseq} ACK` },
      ],
      body: Buffer.alloc(0),
    };
  }

  /** Sends; on a throw ends the transaction with a transport error and says false. */
  #send(message: SipRequest): boolean {
    try {
      this.context.send(message, this.destination, this.transport);
      return true;
    } catch (error) {
      this.#terminate();
      this.events.transportError?.(error);
      return false;
    }
  }

  /**
   * The TU gives up on a transaction that no timer will end: an INVITE in Proceeding whose CANCEL got
   * no final within 64·T1 (RFC 3261 §9.1). Nothing is sent and no event follows.
   */
  abandon(): void {
    this.#terminate();
  }

  #terminate(): void {
    if (this.#state === 'terminated') return;
    this.#state = 'terminated';
    this.timers.clearAll();
    this.onTerminated();
  }
}
