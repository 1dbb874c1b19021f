/**
 * Registering our Contact with a trunk's registrar (RFC 3261 §10.2) and keeping it registered: digest
 * challenges answered as for INVITE, 423 Interval Too Brief answered with the registrar's Min-Expires,
 * a refresh before the binding expires, retries with a growing back-off after a failure, and `stop()`
 * removing the binding (Expires: 0).
 *
 * When to refresh: at max(expires / 2, expires − 60 s) — a minute early for long bindings (an hour →
 * after 59 min), half-way for short ones, so a lost refresh still has time for its own retransmissions
 * (64·T1 = 32 s). Back-off after a failure: 30 s, 60 s, 120 s… capped at 10 minutes.
 */
import { parseNameAddr } from './address.js';
import { newCallId, newTag } from './dialog.js';
import { header, headers } from './headers.js';
import type { SipRequest, SipResponse } from './message.js';
import type { Peer } from './transaction-common.js';
import type { SipTransportName } from './transport-types.js';
import {
  ChallengeAnswerer,
  type Credentials,
  retryRequest,
  TIMEOUT_STATUS,
  TRANSPORT_ERROR_STATUS,
  type UaCore,
} from './ua-core.js';
import { parseUri } from './uri.js';

export interface RegisterOptions {
  /** The Request-URI, e.g. `sip:trunk.example.com`. */
  registrar: string;
  /** The address of record (To and From), e.g. `sip:+15551230000@trunk.example.com`. */
  aor: string;
  destination: Peer;
  transport: SipTransportName;
  credentials?: Credentials;
  expiresSeconds: number;
  /** The user part of our Contact (default: the AOR's user). */
  contactUser?: string;
}

export const RETRY_BASE_MS = 30_000;
export const RETRY_MAX_MS = 600_000;

/** When to refresh a binding granted for `expiresSeconds`, in ms from now. */
export function refreshDelayMs(expiresSeconds: number): number {
  return Math.max(expiresSeconds / 2, expiresSeconds - 60) * 1000;
}

/** How long to wait before retrying after the `failures`-th failure in a row. */
export function retryDelayMs(failures: number): number {
  return Math.min(RETRY_BASE_MS * 2 ** Math.max(0, failures - 1), RETRY_MAX_MS);
}

export class Registration {
  /** The registrar accepted the binding for this many seconds. */
  onRegistered?: (expiresSeconds: number) => void;
  /** A REGISTER failed with this status (408 timeout, 503 transport error); a retry is scheduled. */
  onFailed?: (status: number) => void;

  readonly #callId: string;
  readonly #fromTag = newTag();
  readonly #contact: string;
  readonly #answerer: ChallengeAnswerer;
  #cseq = 0;
  #timer: unknown;
  #failures = 0;
  #registered = false;
  #stopped = false;
  #starting = true;
  #expires: number;
  #unregistered: (() => void) | undefined;

  constructor(
    private readonly core: UaCore,
    private readonly options: RegisterOptions,
  ) {
    this.#callId = newCallId(core.transport.localAddress(options.transport).host);
    this.#answerer = new ChallengeAnswerer(options.credentials);
    const user = options.contactUser ?? parseUri(options.aor).user;
    this.#contact = core.contactUri(options.transport, user);
    this.#expires = options.expiresSeconds;
    core.track(this);
    this.#register(this.#expires);
    this.#starting = false;
  }

  get registered(): boolean {
    return this.#registered;
  }

  /** Stops refreshing and removes the binding (REGISTER with Expires: 0); resolves on its final. */
  stop(): Promise<void> {
    if (this.#stopped) return Promise.resolve();
    this.#stopped = true;
    this.core.timers.clearTimeout(this.#timer);
    this.core.untrack(this);
    if (!this.#registered) return Promise.resolve();
    this.#registered = false;
    return new Promise((resolve) => {
      this.#unregistered = resolve;
      this.#register(0);
    });
  }

  close(): Promise<void> {
    return this.stop();
  }

  #register(expires: number): void {
    this.#answerer.reset();
    this.#cseq += 1;
    const request: SipRequest = {
      method: 'REGISTER',
      uri: this.options.registrar,
      version: 'SIP/2.0',
      headers: [
        { name: 'Via', value: this.core.via(this.options.transport) },
        { name: 'Max-Forwards', value: '70' },
        { name: 'From', value: `<${this.options.aor}>;tag=${this.#fromTag}` },
        { name: 'To', value: `<${this.options.aor}>` },
        { name: 'Call-ID', value: this.#callId },
        { name: 'CSeq', value: `${this.#cseq} REGISTER` },
        { name: 'Contact', value: `<${this.#contact}>` },
        { name: 'Expires', value: String(expires) },
        { name: 'User-Agent', value: this.core.userAgent },
      ],
      body: Buffer.alloc(0),
    };
    this.#send(request, expires);
  }

  #send(request: SipRequest, expires: number): void {
    try {
      this.core.layer.sendRequest(request, this.options.destination, this.options.transport, {
        final: (response) => this.#final(request, response, expires),
        timeout: () => this.#failed(TIMEOUT_STATUS, expires),
        transportError: () => this.#failed(TRANSPORT_ERROR_STATUS, expires),
      });
    } catch (error) {
      this.core.log.warn({ error: String(error) }, 'SIP REGISTER not sent');
      this.#failed(TRANSPORT_ERROR_STATUS, expires);
    }
  }

  #final(request: SipRequest, response: SipResponse, expires: number): void {
    const status = response.status;
    if (status >= 200 && status < 300) {
      this.#succeeded(response, expires);
      return;
    }
    const answer = this.#answerer.answer(response, request);
    if (answer) {
      this.#cseq += 1;
      this.#send(retryRequest(request, this.core.via(this.options.transport), answer), expires);
      return;
    }
    const minExpires = Number(header(response, 'Min-Expires'));
    if (status === 423 && Number.isInteger(minExpires) && minExpires > expires && expires > 0) {
      this.#expires = minExpires;
      this.#register(minExpires);
      return;
    }
    this.#failed(status, expires);
  }

  #succeeded(response: SipResponse, expires: number): void {
    if (expires === 0) {
      this.#finishUnregister();
      return;
    }
    if (this.#stopped) {
      this.#register(0); // stopped while this REGISTER was on its way
      return;
    }
    const granted = this.#granted(response) ?? expires;
    this.#registered = true;
    this.#failures = 0;
    this.#timer = this.core.timers.setTimeout(() => this.#register(this.#expires), refreshDelayMs(granted));
    this.onRegistered?.(granted);
  }

  /** The expiry the registrar granted our Contact: its `expires` parameter, else the Expires header. */
  #granted(response: SipResponse): number | undefined {
    for (const value of headers(response, 'Contact')) {
      try {
        const contact = parseNameAddr(value);
        const uri = parseUri(contact.uri);
        const ours = parseUri(this.#contact);
        const expires = contact.params.get('expires');
        if (uri.host === ours.host && (uri.port ?? 5060) === (ours.port ?? 5060) && expires) {
          return Number(expires);
        }
      } catch {
        // A Contact we cannot read is someone else's binding.
      }
    }
    const expires = header(response, 'Expires');
    return expires === undefined || !/^[0-9]+$/.test(expires.trim()) ? undefined : Number(expires);
  }

  #failed(status: number, expires: number): void {
    if (expires === 0) {
      this.#finishUnregister();
      return;
    }
    if (this.#stopped) return;
    this.#registered = false;
    this.#failures += 1;
    this.#timer = this.core.timers.setTimeout(
      () => this.#register(this.#expires),
      retryDelayMs(this.#failures),
    );
    const report = () => this.onFailed?.(status);
    if (this.#starting) this.core.timers.setTimeout(report, 0);
    else report();
  }

  #finishUnregister(): void {
    const resolve = this.#unregistered;
    this.#unregistered = undefined;
    resolve?.();
  }
}
