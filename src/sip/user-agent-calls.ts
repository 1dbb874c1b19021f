/**
 * The two ways a call starts (RFC 3261 §13–§15, §9): `OutgoingCall` sends an INVITE — progress,
 * digest challenges answered, the ACK for a 2xx (again for each retransmission), CANCEL on a ring
 * timeout or on request (only after a provisional, §9.1), a 2xx that races our CANCEL acknowledged and
 * hung up — and `IncomingCall` answers one: 180, 200 with our SDP re-sent until the ACK, a rejection,
 * or the caller's CANCEL (200 to it, 487 to the INVITE). Once the dialog exists both are a `SipCall`.
 */
import { formatNameAddr, parseNameAddr } from './address.js';
import { SipCall } from './call.js';
import {
  cancelFor,
  type Dialog,
  dialogDestination,
  dialogFromAnswer,
  dialogFromInvite,
  dialogKeyOf,
  inDialogRequest,
  newCallId,
  newTag,
  tagOf,
} from './dialog.js';
import { header, headers, type SipHeader } from './headers.js';
import type { SipRequest, SipResponse } from './message.js';
import { buildResponse } from './response.js';
import type { Peer } from './transaction-common.js';
import type { ClientTransaction, ServerTransaction } from './transactions.js';
import type { SipTransportName } from './transport-types.js';
import {
  ALLOWED_METHODS,
  ChallengeAnswerer,
  type Credentials,
  retryRequest,
  TIMEOUT_STATUS,
  TRANSPORT_ERROR_STATUS,
  type UaCore,
} from './ua-core.js';

export interface InviteOptions {
  requestUri: string;
  from: { uri: string; displayName?: string };
  to: string;
  destination: Peer;
  transport: SipTransportName;
  /** Our SDP offer. */
  sdp: string;
  credentials?: Credentials;
  /** Give up ringing after this long: CANCEL, then `onFailed` with `timedOut`. */
  ringTimeoutMs?: number;
  headers?: SipHeader[];
}

export interface CallFailure {
  status: number;
  reason: string;
  /** The ring timeout ended the attempt. */
  timedOut?: boolean;
}

type OutgoingPhase = 'calling' | 'answered' | 'failed';

export class OutgoingCall extends SipCall {
  /** 1xx: status, reason and the early SDP of a 183 (or any 1xx with a body). */
  onProgress?: (status: number, reason: string, sdp?: string) => void;
  onAnswered?: (sdp: string, dialog: Dialog) => void;
  onFailed?: (failure: CallFailure) => void;

  #invite: SipRequest;
  readonly #destination: Peer;
  readonly #transport: SipTransportName;
  #phase: OutgoingPhase = 'calling';
  #provisional = false;
  #cancel: { timedOut: boolean; sent: boolean } | undefined;
  #ringTimer: unknown;
  #cancelGuard: unknown;
  #transaction: ClientTransaction | undefined;
  #starting = true;
  /** The To tag of the 2xx we took, and the ACK we send for it (and its retransmissions). */
  #answeredTag: string | undefined;
  #ack: SipRequest | undefined;

  constructor(core: UaCore, options: InviteOptions) {
    super(core, new ChallengeAnswerer(options.credentials));
    this.#destination = options.destination;
    this.#transport = options.transport;
    const local = core.transport.localAddress(options.transport);
    const from: { uri: string; displayName?: string } = { uri: options.from.uri };
    if (options.from.displayName !== undefined) from.displayName = options.from.displayName;
    this.#invite = {
      method: 'INVITE',
      uri: options.requestUri,
      version: 'SIP/2.0',
      headers: [
        { name: 'Via', value: core.via(options.transport) },
        { name: 'Max-Forwards', value: '70' },
        { name: 'From', value: `${formatNameAddr({ ...from, params: new Map() })};tag=${newTag()}` },
        { name: 'To', value: `<${options.to}>` },
        { name: 'Call-ID', value: newCallId(local.host) },
        { name: 'CSeq', value: '1 INVITE' },
        { name: 'Contact', value: `<${core.contactUri(options.transport)}>` },
        { name: 'Allow', value: ALLOWED_METHODS },
        { name: 'User-Agent', value: core.userAgent },
        ...(options.headers ?? []),
        { name: 'Content-Type', value: 'application/sdp' },
      ],
      body: Buffer.from(options.sdp),
    };
    core.track(this);
    if (options.ringTimeoutMs !== undefined) {
      this.#ringTimer = core.timers.setTimeout(() => this.#requestCancel(true), options.ringTimeoutMs);
    }
    this.#send(this.#invite);
    this.#starting = false;
  }

  get callId(): string {
    return header(this.#invite, 'Call-ID') ?? '';
  }

  /** The INVITE as last sent (after challenges, the one with credentials). */
  get request(): SipRequest {
    return this.#invite;
  }

  /** Stops ringing: CANCEL now if the far end sent a provisional, else as soon as it does. */
  cancel(): void {
    this.#requestCancel(false);
  }

  /** For `UserAgent.close()`: CANCEL while ringing, BYE once answered. */
  async close(): Promise<void> {
    if (this.#phase === 'calling') this.cancel();
    else if (this.active) await this.bye();
  }

  /** A 2xx that came after its transaction ended (the UA found us by dialog): ACK it again. */
  answerRetransmitted(response: SipResponse): void {
    if (this.#ack && tagOf(header(response, 'To')) === this.#answeredTag) this.#sendAck(this.#ack);
  }

  #send(request: SipRequest): void {
    this.#invite = request;
    try {
      this.#transaction = this.core.layer.sendRequest(request, this.#destination, this.#transport, {
        provisional: (response) => this.#onProvisional(response),
        final: (response) => this.#onFinal(response),
        timeout: () => this.#fail(TIMEOUT_STATUS, 'Request Timeout'),
        transportError: () => this.#fail(TRANSPORT_ERROR_STATUS, 'Service Unavailable'),
      });
    } catch (error) {
      this.core.log.warn({ error: String(error) }, 'SIP INVITE not sent');
      this.#fail(TRANSPORT_ERROR_STATUS, 'Service Unavailable');
    }
  }

  #onProvisional(response: SipResponse): void {
    if (this.#phase !== 'calling') return;
    this.#provisional = true;
    if (this.#cancel && !this.#cancel.sent) this.#sendCancel();
    const sdp = response.body.length > 0 ? response.body.toString() : undefined;
    this.onProgress?.(response.status, response.reason, sdp);
  }

  #onFinal(response: SipResponse): void {
    const status = response.status;
    if (status >= 200 && status < 300) {
      this.#on2xx(response);
      return;
    }
    if (this.#phase !== 'calling') return;
    const answer = this.#cancel ? undefined : this.answerer?.answer(response, this.#invite);
    if (answer) {
      this.#provisional = false;
      this.#send(retryRequest(this.#invite, this.core.via(this.#transport), answer));
      return;
    }
    this.#fail(status, response.reason);
  }

  #on2xx(response: SipResponse): void {
    const tag = tagOf(header(response, 'To'));
    if (this.#answeredTag !== undefined && tag === this.#answeredTag) {
      if (this.#ack) this.#sendAck(this.#ack);
      return;
    }
    const dialog = dialogFromAnswer(this.#invite, response, this.#transport);
    const ack = this.#ackFor(dialog);
    this.#sendAck(ack, dialog);
    if (this.#answeredTag !== undefined || this.#phase !== 'calling' || this.#cancel) {
      // Another fork's answer, or one that raced our CANCEL: acknowledge it, then hang it up (§15).
      this.#byeWithout(dialog);
      if (this.#phase === 'calling') this.#fail(487, 'Request Terminated');
      return;
    }
    this.#answeredTag = tag;
    this.#ack = ack;
    this.#phase = 'answered';
    this.#stopTimers();
    this.core.untrack(this);
    this.setDialog(dialog);
    this.onAnswered?.(response.body.toString(), dialog);
  }

  /** The ACK for a 2xx (§13.2.2.4): in the dialog, the INVITE's CSeq number and credentials. */
  #ackFor(dialog: Dialog): SipRequest {
    const credentials = ['Authorization', 'Proxy-Authorization'].flatMap((name) =>
      headers(this.#invite, name).map((value) => ({ name, value })),
    );
    return inDialogRequest(dialog, 'ACK', {
      via: this.core.via(this.#transport),
      cseq: dialog.localSeq,
      headers: credentials,
      userAgent: this.core.userAgent,
    });
  }

  #sendAck(ack: SipRequest, dialog: Dialog | undefined = this.dialog): void {
    if (dialog) this.core.sendDirect(ack, dialogDestination(dialog), this.#transport);
  }

  /** A BYE for a dialog we do not keep (a raced or forked answer). */
  #byeWithout(dialog: Dialog): void {
    const bye = inDialogRequest(dialog, 'BYE', {
      via: this.core.via(this.#transport),
      userAgent: this.core.userAgent,
    });
    try {
      this.core.layer.sendRequest(bye, dialogDestination(dialog), this.#transport, {});
    } catch (error) {
      this.core.log.warn({ error: String(error), key: dialogKeyOf(dialog) }, 'SIP BYE not sent');
    }
  }

  #requestCancel(timedOut: boolean): void {
    if (this.#phase !== 'calling' || this.#cancel) return;
    this.#cancel = { timedOut, sent: false };
    if (this.#provisional) this.#sendCancel();
  }

  /**
   * CANCEL (§9.1): the INVITE's Request-URI, top Via, Route, From, To, Call-ID and CSeq number. If the
   * INVITE still has no final 64·T1 later, the attempt fails with 408.
   */
  #sendCancel(): void {
    if (!this.#cancel) return;
    this.#cancel.sent = true;
    const cancel = cancelFor(this.#invite, this.core.userAgent);
    try {
      this.core.layer.sendRequest(cancel, this.#destination, this.#transport, {});
    } catch (error) {
      this.core.log.warn({ error: String(error) }, 'SIP CANCEL not sent');
    }
    this.#cancelGuard = this.core.timers.setTimeout(() => {
      // §9.1: no final 64·T1 after the CANCEL — the INVITE transaction is given up as terminated.
      this.#transaction?.abandon();
      this.#fail(TIMEOUT_STATUS, 'Request Timeout');
    }, 64 * this.core.T1);
  }

  #fail(status: number, reason: string): void {
    if (this.#phase !== 'calling') return;
    this.#phase = 'failed';
    this.#stopTimers();
    this.core.untrack(this);
    const failure: CallFailure = { status, reason };
    if (this.#cancel?.timedOut) failure.timedOut = true;
    const report = () => this.onFailed?.(failure);
    // A send that failed inside the constructor is reported once the caller could set `onFailed`.
    if (this.#starting) this.core.timers.setTimeout(report, 0);
    else report();
  }

  #stopTimers(): void {
    this.core.timers.clearTimeout(this.#ringTimer);
    this.core.timers.clearTimeout(this.#cancelGuard);
  }
}

type IncomingPhase = 'pending' | 'accepted' | 'confirmed' | 'rejected' | 'cancelled';

export class IncomingCall extends SipCall {
  /** The caller CANCELled before we answered (the INVITE was answered 487). */
  onCancelled?: () => void;
  /** The caller's ACK came: the call is confirmed. */
  onConfirmed?: () => void;

  /** The caller's and the called URIs (From and To), and the caller's display name if any. */
  readonly from: string;
  readonly to: string;
  readonly fromDisplayName: string | undefined;
  readonly callId: string;
  /** The caller's SDP offer ('' when the INVITE carried none). */
  readonly sdp: string;
  readonly localTag = newTag();
  #phase: IncomingPhase = 'pending';

  constructor(
    core: UaCore,
    readonly transaction: ServerTransaction,
    readonly source: Peer,
    readonly transport: SipTransportName,
  ) {
    super(core);
    const request = transaction.request;
    const from = parseNameAddr(header(request, 'From') ?? '');
    this.from = from.uri;
    this.fromDisplayName = from.displayName;
    this.to = parseNameAddr(header(request, 'To') ?? '').uri;
    this.callId = header(request, 'Call-ID') ?? '';
    this.sdp = request.body.toString();
    core.track(this);
  }

  get request(): SipRequest {
    return this.transaction.request;
  }

  get phase(): IncomingPhase {
    return this.#phase;
  }

  /** 180 Ringing (with our tag and Contact). */
  ringing(): void {
    if (this.#phase !== 'pending') return;
    this.#respond(180, [{ name: 'Contact', value: `<${this.core.contactUri(this.transport)}>` }]);
  }

  /** 200 with our SDP answer, re-sent until the ACK; returns the dialog. */
  accept(sdpAnswer: string): Dialog {
    if (this.#phase !== 'pending') throw new Error(`the call is ${this.#phase}`);
    this.#phase = 'accepted';
    this.core.untrack(this);
    const dialog = dialogFromInvite(this.request, this.localTag, this.transport);
    this.setDialog(dialog);
    const response = buildResponse(this.request, 200, {
      toTag: this.localTag,
      headers: [
        ...headers(this.request, 'Record-Route').map((value) => ({ name: 'Record-Route', value })),
        { name: 'Contact', value: `<${this.core.contactUri(this.transport)}>` },
        { name: 'Allow', value: ALLOWED_METHODS },
        { name: 'User-Agent', value: this.core.userAgent },
        { name: 'Content-Type', value: 'application/sdp' },
      ],
      body: Buffer.from(sdpAnswer),
    });
    this.sendAnswer(this.transaction, response);
    return dialog;
  }

  /** A final refusal: 401 with WWW-Authenticate, 403, 404, 486, 488, 503… */
  reject(status: number, extraHeaders: SipHeader[] = []): void {
    if (this.#phase !== 'pending') return;
    if (status < 300) throw new RangeError('reject() takes a status of 300 or more');
    this.#phase = 'rejected';
    this.core.untrack(this);
    this.#respond(status, extraHeaders);
  }

  /** The caller's CANCEL for this INVITE (the user agent matched it). */
  cancelled(cancel: ServerTransaction): void {
    cancel.respond(buildResponse(cancel.request, 200, { toTag: this.localTag }));
    if (this.#phase !== 'pending') return;
    this.#phase = 'cancelled';
    this.core.untrack(this);
    this.#respond(487);
    this.onCancelled?.();
  }

  /** For `UserAgent.close()`: 480 while ringing, BYE once answered. */
  async close(): Promise<void> {
    if (this.#phase === 'pending') this.reject(480);
    else if (this.active) await this.bye();
  }

  protected override acknowledged(): void {
    if (this.#phase !== 'accepted') return;
    this.#phase = 'confirmed';
    this.onConfirmed?.();
  }

  #respond(status: number, extra: SipHeader[] = []): void {
    try {
      this.transaction.respond(buildResponse(this.request, status, { toTag: this.localTag, headers: extra }));
    } catch (error) {
      this.core.log.warn({ error: String(error), status }, 'SIP response not sent');
    }
  }
}
