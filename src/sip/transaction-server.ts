/**
 * Server transactions (RFC 3261 §17.2 with RFC 6026's Accepted state): they answer retransmitted
 * requests from the last response so the user agent (TU) sees each request once.
 *
 * - INVITE: Proceeding — a 100 Trying goes out after 200 ms unless the TU answered first (§17.2.1);
 *   a retransmitted INVITE gets the last provisional again. A 2xx from the TU → Accepted (RFC 6026
 *   §7.1): retransmitted INVITEs are absorbed, further 2xx from the TU (its own retransmissions) are
 *   sent, until timer L (64·T1); the ACK for a 2xx is not ours (the layer hands it to the TU).
 *   A 300-699 → Completed: timer G re-sends it on unreliable transports (T1 doubling, capped at T2), a
 *   retransmitted INVITE gets it again, timer H (64·T1) gives up waiting for the ACK (reported as a
 *   timeout); the ACK → Confirmed, absorbing ACKs until timer I (T4, 0 reliable).
 * - Non-INVITE: Trying (retransmissions absorbed) → Proceeding on a 1xx (retransmissions get it
 *   again) → Completed on a final (retransmissions get it again) until timer J (64·T1, 0 reliable).
 * Responses go to the address the request came from (the transport applies §18.2.2 / RFC 3581).
 */
import type { SipRequest, SipResponse } from './message.js';
import { buildResponse } from './response.js';
import { type Peer, type TimerSet, type TransactionContext, topVia } from './transaction-common.js';

export type ServerState = 'trying' | 'proceeding' | 'completed' | 'confirmed' | 'accepted' | 'terminated';

export interface ServerTransactionEvents {
  /** Timer H: the ACK for our non-2xx final never came. */
  timeout(transaction: ServerTransaction): void;
  transportError(transaction: ServerTransaction, error: unknown): void;
}

/** How long an INVITE server transaction waits for the TU before sending 100 Trying itself. */
export const TRYING_DELAY_MS = 200;

export class ServerTransaction {
  #state: ServerState;
  #last: SipResponse | undefined;
  readonly #isInvite: boolean;
  readonly #reliable: boolean;
  readonly transport: string;
  #interval: number;

  constructor(
    readonly request: SipRequest,
    readonly source: Peer,
    private readonly context: TransactionContext,
    private readonly timers: TimerSet,
    private readonly events: ServerTransactionEvents,
    private readonly onTerminated: () => void,
  ) {
    this.#isInvite = request.method === 'INVITE';
    this.transport = topVia(request).transport;
    this.#reliable = context.reliable(this.transport);
    this.#state = this.#isInvite ? 'proceeding' : 'trying';
    this.#interval = context.T1;
    if (this.#isInvite) {
      this.timers.start('trying', TRYING_DELAY_MS, () => {
        if (this.#last === undefined) this.#send(buildResponse(this.request, 100));
      });
    }
  }

  get state(): ServerState {
    return this.#state;
  }

  /** The last response sent (what a retransmitted request gets). */
  get lastResponse(): SipResponse | undefined {
    return this.#last;
  }

  /** The TU's response. Refused (an Error) once a final was sent, but for 2xx again in Accepted. */
  respond(response: SipResponse): void {
    const status = response.status;
    const is2xx = status >= 200 && status < 300;
    if (this.#state === 'accepted' && is2xx) {
      this.#send(response);
      return;
    }
    if (this.#state !== 'trying' && this.#state !== 'proceeding') {
      throw new Error(`the transaction is ${this.#state}: no more responses`);
    }
    this.timers.stop('trying');
    if (!this.#send(response)) return;
    if (status < 200) {
      this.#state = 'proceeding';
      return;
    }
    const { T1 } = this.context;
    if (this.#isInvite && is2xx) {
      this.#state = 'accepted';
      this.timers.start('wait', 64 * T1, () => this.#terminate());
    } else if (this.#isInvite) {
      this.#state = 'completed';
      if (!this.#reliable) this.timers.start('retransmit', T1, () => this.#retransmit());
      this.timers.start('timeout', 64 * T1, () => {
        this.#terminate();
        this.events.timeout(this);
      });
    } else {
      this.#state = 'completed';
      this.#wait(this.#reliable ? 0 : 64 * T1);
    }
  }

  /** A retransmission of the request, or the ACK for an INVITE, matched here by the layer. */
  receive(request: SipRequest): void {
    if (request.method === 'ACK') {
      if (this.#state !== 'completed' || !this.#isInvite) return;
      this.#state = 'confirmed';
      this.timers.stop('retransmit');
      this.timers.stop('timeout');
      this.#wait(this.#reliable ? 0 : this.context.T4);
      return;
    }
    if (this.#state === 'proceeding' || this.#state === 'completed') {
      if (this.#last !== undefined) this.#send(this.#last);
    }
    // Trying (no response yet), Accepted (RFC 6026: the TU re-sends the 2xx) and Confirmed absorb.
  }

  #retransmit(): void {
    if (this.#last === undefined || !this.#send(this.#last)) return;
    this.#interval = Math.min(2 * this.#interval, this.context.T2);
    this.timers.start('retransmit', this.#interval, () => this.#retransmit());
  }

  #wait(ms: number): void {
    if (ms === 0) this.#terminate();
    else this.timers.start('wait', ms, () => this.#terminate());
  }

  #send(response: SipResponse): boolean {
    this.#last = response;
    try {
      this.context.send(response, this.source, this.transport);
      return true;
    } catch (error) {
      this.#terminate();
      this.events.transportError(this, error);
      return false;
    }
  }

  #terminate(): void {
    if (this.#state === 'terminated') return;
    this.#state = 'terminated';
    this.timers.clearAll();
    this.onTerminated();
  }
}
