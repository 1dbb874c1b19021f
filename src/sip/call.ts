/**
 * What a call does once its dialog exists, whichever side placed it (RFC 3261 §12–§15, RFC 3515):
 * hang up (BYE), transfer (REFER, then the far end's NOTIFY sipfrag progress), answer the far end's
 * BYE, re-INVITE, OPTIONS, INFO and NOTIFY, and keep re-sending a 2xx to an INVITE until its ACK comes
 * (§13.3.1.4: T1 doubling up to T2; no ACK in 64·T1 ends the call with a BYE). `OutgoingCall` and
 * `IncomingCall` (user-agent-calls.ts) add how the dialog is made.
 */
import {
  acceptRemoteSeq,
  cseqOf,
  type Dialog,
  dialogDestination,
  dialogKeyOf,
  inDialogRequest,
} from './dialog.js';
import { header, type SipHeader } from './headers.js';
import type { SipRequest, SipResponse } from './message.js';
import { buildResponse } from './response.js';
import type { ServerTransaction } from './transactions.js';
import {
  ALLOWED_METHODS,
  type ChallengeAnswerer,
  type DialogOwner,
  retryRequest,
  TIMEOUT_STATUS,
  TRANSPORT_ERROR_STATUS,
  type UaCore,
} from './ua-core.js';

export interface CallEnd {
  /** Who hung up: `local` also for our BYE after a missing ACK. */
  by: 'local' | 'remote';
  reason?: 'bye' | 'no-ack' | 'closed';
}

/** The status line of a `message/sipfrag` body (RFC 3420), e.g. `SIP/2.0 180 Ringing` → 180. */
export function sipfragStatus(body: Buffer): number | undefined {
  const match = /^SIP\/2\.0 ([1-6][0-9][0-9])\b/i.exec(body.toString('utf8').trimStart());
  return match ? Number(match[1]) : undefined;
}

export abstract class SipCall implements DialogOwner {
  /** The far end hung up, or we did (after `bye()` or a missing ACK). */
  onEnded?: (end: CallEnd) => void;
  /** A re-INVITE's offer: return our answer SDP, or undefined to refuse it with 488. */
  onReoffer?: (sdp: string) => string | undefined;
  /** The status of each NOTIFY sipfrag after our REFER (100 Trying, 180, 200…). */
  onReferProgress?: (status: number) => void;

  #dialog: Dialog | undefined;
  #ended = false;
  /** The 2xx we re-send until its ACK: by the INVITE's CSeq number. */
  readonly #awaitingAck = new Map<number, { timer: unknown; giveUp: unknown }>();

  constructor(
    protected readonly core: UaCore,
    protected readonly answerer?: ChallengeAnswerer,
  ) {}

  get dialog(): Dialog | undefined {
    return this.#dialog;
  }

  /** True between the dialog's creation and its end. */
  get active(): boolean {
    return this.#dialog !== undefined && !this.#ended;
  }

  get ended(): boolean {
    return this.#ended;
  }

  protected setDialog(dialog: Dialog): void {
    this.#dialog = dialog;
    this.core.addDialog(dialogKeyOf(dialog), this);
  }

  /** Sends BYE; resolves with its final status (408/503 when none came). */
  bye(): Promise<number> {
    const dialog = this.#dialog;
    if (!dialog || this.#ended) return Promise.resolve(481);
    this.end({ by: 'local', reason: 'bye' });
    return this.sendInDialog(dialog, 'BYE');
  }

  /** Sends REFER (RFC 3515) to `targetUri`; resolves with its final status (202 when accepted). */
  refer(targetUri: string): Promise<number> {
    const dialog = this.#dialog;
    if (!dialog || this.#ended) return Promise.resolve(481);
    return this.sendInDialog(dialog, 'REFER', [
      { name: 'Refer-To', value: `<${targetUri}>` },
      { name: 'Contact', value: `<${this.core.contactUri(dialog.transport)}>` },
    ]);
  }

  /** An in-dialog request (not ACK) routed here by the user agent. */
  handleRequest(transaction: ServerTransaction): void {
    const request = transaction.request;
    const dialog = this.#dialog;
    if (!dialog || this.#ended) {
      this.respond(transaction, 481);
      return;
    }
    if (!acceptRemoteSeq(dialog, request)) {
      this.respond(transaction, 500);
      return;
    }
    switch (request.method) {
      case 'BYE':
        this.respond(transaction, 200);
        this.end({ by: 'remote', reason: 'bye' });
        return;
      case 'INVITE':
        this.#reoffer(transaction, dialog);
        return;
      case 'NOTIFY': {
        this.respond(transaction, 200);
        const status = sipfragStatus(request.body);
        if (status !== undefined) this.onReferProgress?.(status);
        return;
      }
      case 'OPTIONS':
      case 'INFO':
        this.respond(transaction, 200, [{ name: 'Allow', value: ALLOWED_METHODS }]);
        return;
      default:
        this.respond(transaction, 405, [{ name: 'Allow', value: ALLOWED_METHODS }]);
        return;
    }
  }

  /** The ACK for one of our 2xx: stops re-sending it. */
  handleAck(request: SipRequest): void {
    const seq = cseqOf(request).seq;
    const waiting = this.#awaitingAck.get(seq);
    if (!waiting) return;
    this.core.timers.clearTimeout(waiting.timer);
    this.core.timers.clearTimeout(waiting.giveUp);
    this.#awaitingAck.delete(seq);
    this.acknowledged();
  }

  /** Called when the ACK for our 2xx came (IncomingCall counts its call confirmed then). */
  protected acknowledged(): void {}

  protected respond(transaction: ServerTransaction, status: number, extra: SipHeader[] = []): void {
    const toTag = this.#dialog?.localTag;
    try {
      transaction.respond(
        buildResponse(transaction.request, status, { headers: extra, ...(toTag ? { toTag } : {}) }),
      );
    } catch (error) {
      this.core.log.warn({ error: String(error), status }, 'SIP response not sent');
    }
  }

  /**
   * Sends a 2xx to an INVITE and re-sends it (unreliable transports) at T1, 2·T1… capped at T2 until
   * the ACK; after 64·T1 without one the call ends with a BYE (§13.3.1.4).
   */
  protected sendAnswer(transaction: ServerTransaction, response: SipResponse): void {
    const seq = cseqOf(transaction.request).seq;
    const { timers, T1, T2 } = this.core;
    const send = () => {
      try {
        transaction.respond(response);
      } catch (error) {
        this.core.log.debug({ error: String(error) }, 'SIP 2xx not re-sent');
      }
    };
    send();
    const reliable = this.core.transport.reliable(this.#dialog?.transport ?? 'udp');
    let interval = T1;
    const entry = { timer: undefined as unknown, giveUp: undefined as unknown };
    const again = () => {
      send();
      interval = Math.min(2 * interval, T2);
      entry.timer = timers.setTimeout(again, interval);
    };
    if (!reliable) entry.timer = timers.setTimeout(again, interval);
    entry.giveUp = timers.setTimeout(() => {
      timers.clearTimeout(entry.timer);
      this.#awaitingAck.delete(seq);
      const dialog = this.#dialog;
      if (!dialog || this.#ended) return;
      this.end({ by: 'local', reason: 'no-ack' });
      void this.sendInDialog(dialog, 'BYE');
    }, 64 * T1);
    this.#awaitingAck.set(seq, entry);
  }

  /** Ends the call once: removes the dialog, stops re-sending, tells `onEnded`. */
  protected end(end: CallEnd): void {
    if (this.#ended) return;
    this.#ended = true;
    for (const entry of this.#awaitingAck.values()) {
      this.core.timers.clearTimeout(entry.timer);
      this.core.timers.clearTimeout(entry.giveUp);
    }
    this.#awaitingAck.clear();
    if (this.#dialog) this.core.removeDialog(dialogKeyOf(this.#dialog));
    this.onEnded?.(end);
  }

  /** An in-dialog request in its own transaction, answering one round of challenges per nonce. */
  protected sendInDialog(dialog: Dialog, method: string, extra: SipHeader[] = []): Promise<number> {
    const first = inDialogRequest(dialog, method, {
      via: this.core.via(dialog.transport),
      headers: extra,
      userAgent: this.core.userAgent,
    });
    this.answerer?.reset();
    return new Promise((resolve) => {
      const send = (request: SipRequest) => {
        try {
          this.core.layer.sendRequest(request, dialogDestination(dialog), dialog.transport, {
            final: (response) => {
              const answer = this.answerer?.answer(response, request);
              if (!answer) return resolve(response.status);
              dialog.localSeq += 1;
              send(retryRequest(request, this.core.via(dialog.transport), answer));
            },
            timeout: () => resolve(TIMEOUT_STATUS),
            transportError: () => resolve(TRANSPORT_ERROR_STATUS),
          });
        } catch (error) {
          this.core.log.warn({ error: String(error), method }, 'SIP request not sent');
          resolve(TRANSPORT_ERROR_STATUS);
        }
      };
      send(first);
    });
  }

  #reoffer(transaction: ServerTransaction, dialog: Dialog): void {
    const request = transaction.request;
    const type = header(request, 'Content-Type')?.toLowerCase() ?? '';
    const offer =
      request.body.length > 0 && type.startsWith('application/sdp') ? request.body.toString() : '';
    const answer = offer === '' ? undefined : this.onReoffer?.(offer);
    if (answer === undefined) {
      this.respond(transaction, 488);
      return;
    }
    const response = buildResponse(request, 200, {
      toTag: dialog.localTag,
      headers: [
        { name: 'Contact', value: `<${this.core.contactUri(dialog.transport)}>` },
        { name: 'Allow', value: ALLOWED_METHODS },
        { name: 'Content-Type', value: 'application/sdp' },
      ],
      body: Buffer.from(answer),
    });
    this.sendAnswer(transaction, response);
  }
}
