/**
 * What the user agent's parts share (user-agent.ts owns it; calls and registrations use it): the
 * transaction layer, the transport, the clock, how our Via and Contact are written, the dialog table,
 * and answering digest challenges (RFC 3261 §22.2) the same way for INVITE, REGISTER and in-dialog
 * requests. Kept apart so `user-agent-calls.ts` and `registration.ts` depend on this seam, not on the
 * `UserAgent` class.
 */
import {
  answerChallenge,
  authHeaderNames,
  chooseChallenge,
  type DigestCredentials,
  NonceCounter,
} from './digest.js';
import { header, headers, type SipHeader } from './headers.js';
import type { SipMessage, SipRequest, SipResponse } from './message.js';
import type { PacerTimers } from './rtp-pacer.js';
import type { Peer } from './transaction-common.js';
import type { TransactionLayer } from './transactions.js';
import type { SipTransportName, SipTransportPort } from './transport-types.js';

export interface UaLog {
  debug(details: object, message: string): void;
  warn(details: object, message: string): void;
}

export const silentLog: UaLog = { debug: () => {}, warn: () => {} };

/** The methods we answer (our Allow header). */
export const ALLOWED_METHODS = 'INVITE, ACK, CANCEL, BYE, OPTIONS, INFO, REFER, NOTIFY';

/** Something a dialog's requests are routed to: a call once it has a dialog. */
export interface DialogOwner {
  handleRequest(transaction: import('./transactions.js').ServerTransaction): void;
  handleAck(request: SipRequest): void;
}

export interface UaCore {
  readonly layer: TransactionLayer;
  readonly transport: SipTransportPort;
  readonly timers: PacerTimers;
  readonly T1: number;
  readonly T2: number;
  readonly userAgent: string;
  readonly log: UaLog;
  /** A top Via with a fresh branch, our sent-by for `transport`, and `rport` (RFC 3581). */
  via(transport: SipTransportName): string;
  /** Our Contact URI over `transport`, e.g. `sip:switchboard@203.0.113.10:5060;transport=tcp`. */
  contactUri(transport: SipTransportName, user?: string): string;
  /** Sends outside any transaction (ACK for a 2xx); says false after a transport error. */
  sendDirect(message: SipMessage, destination: Peer, transport: SipTransportName): boolean;
  addDialog(key: string, owner: DialogOwner): void;
  removeDialog(key: string): void;
  /** Pending work `close()` must end (calls not answered yet, registrations). */
  track(item: Closable): void;
  untrack(item: Closable): void;
}

export interface Closable {
  close(): Promise<void>;
}

/** Credentials a digest challenge is answered with. */
export type Credentials = DigestCredentials;

/**
 * Answers 401/407 challenges for one request's rounds (RFC 3261 §22.2, §8.1.3.5): a new challenge for
 * a realm (or a nonce) we already answered is a refusal unless it says `stale=true` — our credentials
 * were wrong, and retrying with a fresh nonce would only loop; at most `maxRounds` answers a round.
 */
export class ChallengeAnswerer {
  readonly #counter = new NonceCounter();
  #answered = new Set<string>();
  #rounds = 0;

  constructor(
    private readonly credentials: Credentials | undefined,
    private readonly maxRounds = 4,
  ) {}

  /** Forgets the nonces answered: a new request (a registration refresh) starts a new round. */
  reset(): void {
    this.#answered = new Set();
    this.#rounds = 0;
  }

  /** The header to add to the retried request, or undefined to give up with the challenge's status. */
  answer(response: SipResponse, request: SipRequest): SipHeader | undefined {
    if (!this.credentials || (response.status !== 401 && response.status !== 407)) return undefined;
    const names = authHeaderNames(response.status);
    const values = headers(response, names.challenge);
    const chosen = chooseChallenge(values);
    if (!chosen) return undefined;
    const seen = this.#answered.has(chosen.nonce) || this.#answered.has(`realm:${chosen.realm}`);
    if (seen && !chosen.stale) return undefined;
    if (this.#rounds >= this.maxRounds) return undefined;
    this.#rounds += 1;
    this.#answered.add(chosen.nonce).add(`realm:${chosen.realm}`);
    const answer = answerChallenge(
      values,
      this.credentials,
      { method: request.method, uri: request.uri, body: request.body },
      this.#counter,
    );
    return answer && { name: names.answer, value: answer.value };
  }
}

/**
 * The request again after a challenge (§8.1.3.5): a new top Via (new branch), CSeq one higher, the
 * same Call-ID and From tag, and the answer replacing any earlier one of its kind.
 */
export function retryRequest(request: SipRequest, via: string, answer: SipHeader): SipRequest {
  const cseq = header(request, 'CSeq')?.trim().split(/\s+/) ?? [];
  const seq = Number(cseq[0] ?? 0) + 1;
  let viaDone = false;
  const fields: SipHeader[] = [];
  for (const field of request.headers) {
    if (field.name === 'Via') {
      if (!viaDone) fields.push({ name: 'Via', value: via });
      viaDone = true;
    } else if (field.name === 'CSeq') fields.push({ name: 'CSeq', value: `${seq} ${request.method}` });
    else if (field.name !== answer.name) fields.push(field);
  }
  fields.push(answer);
  return { ...request, headers: fields };
}

/** A status of a transaction that ended without a final: 408 on a timeout, 503 on a transport error. */
export const TIMEOUT_STATUS = 408;
export const TRANSPORT_ERROR_STATUS = 503;
