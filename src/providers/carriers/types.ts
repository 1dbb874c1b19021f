/**
 * The one small interface every carrier adapter implements. Services speak only this; each adapter
 * speaks its carrier's wire protocol (REST calls out, signed webhooks in). Credentials are passed
 * per call, because each organization (or assistant) brings its own account.
 */

import type { MessageStatus } from '../../db/schema/messaging.js';
import type { CallStatus } from '../../db/schema/telephony.js';
import type { AudioFormat } from '../../voice/audio.js';
import type { CarrierId, TelephonyProvider } from '../ids.js';
import type { MediaHandshake, MediaStreamTarget } from './media.js';

/** The carrier ids are named in `providers/ids.ts`; the contract speaks of them by this name too. */
export type { CarrierId };

/** carrier_a {account_sid, auth_token}; carrier_b {api_key, connection_id, public_key?};
 * carrier_c {application_id, private_key, signature_secret?}. */
export type CarrierCredentials = Record<string, string>;

export interface PlaceCallRequest {
  from: string;
  to: string;
  /** Our id of the call, echoed back by carriers that carry client state, and put in our URLs. */
  callId: number;
  /** The organization placing it: the SIP agent reports the call's statuses under it (carriers ignore it). */
  organizationId?: number;
  /** Where the carrier asks what to do when the call connects (carrier_a, carrier_c). */
  answerUrl: string;
  /** Where the carrier posts status changes. */
  statusCallbackUrl: string;
  /** The call's media stream and its single-call token, for carriers that stream on dial. */
  stream: MediaStreamTarget;
  /** Seconds to ring before giving up. */
  timeoutSeconds?: number;
  /**
   * Ask the carrier to tell a person from an answering machine, asynchronously (the stream starts at
   * once), and to report the end of a machine's greeting (its beep) too: campaign calls and
   * `/calls/initiate` when the assistant's voicemail detection is on. The verdict comes as a
   * `machine_detection` event to `statusCallbackUrl`.
   */
  detectMachine?: boolean;
}

export interface SendMessageRequest {
  from: string;
  to: string;
  body: string;
  mediaUrls: string[];
  /** Where the carrier posts delivery receipts. */
  statusCallbackUrl: string;
  /** carrier_a: send through a messaging service instead of the bare number. */
  messagingServiceSid?: string | null;
}

export interface PlacedCall {
  callSid: string;
  status: CallStatus;
}

export interface SentMessage {
  messageId: string;
  status: MessageStatus;
  segments: number;
}

/** A webhook as it reached us: the full public URL the carrier called, headers, and the raw body. */
export interface IncomingWebhook {
  url: string;
  method: string;
  headers: Record<string, string | string[] | undefined>;
  rawBody: string;
}

/** What a webhook says, in our words. */
export type CarrierEvent =
  | {
      kind: 'call_status';
      callSid: string;
      status: CallStatus;
      /** Seconds the call was connected, on final statuses. */
      durationSeconds?: number;
      /** Our call id when the carrier echoes client state. */
      callId?: number;
      at?: Date;
      /** Who answered, when the carrier's answering-machine detection ran. */
      answeredBy?: 'human' | 'machine';
      /** A SIP trunk's final response that ended the call (486, 503…), and its reason phrase. */
      sip?: { status: number; reason: string };
      /** The SIP agent holding the call (`host:port`), as it reports: kept as `call_meta.sip_agent`. */
      sipAgent?: string;
      /** Why the call ended when no carrier or trunk said so (the platform stopped): `call_meta.error`. */
      error?: string;
    }
  /**
   * The carrier's answering-machine detection, asynchronous: who answered, and (on a machine) that its
   * greeting has ended — the beep, or the silence after it — so a message left now is recorded. A
   * carrier may say both in one callback (carrier_a's `machine_end_beep`) or in two (carrier_b's
   * detection, then its greeting end; carrier_c's `machine`, then `beep_start`).
   */
  | {
      kind: 'machine_detection';
      callSid: string;
      /** Our call id when the carrier echoes client state. */
      callId?: number;
      answeredBy?: 'human' | 'machine';
      /** How the greeting ended, when it has: `beep`, or `other` (silence, the carrier could not tell). */
      greetingEnded?: 'beep' | 'other';
    }
  /** `sipAgent`: the SIP agent that took the call (`host:port`), kept as `call_meta.sip_agent`. */
  | { kind: 'inbound_call'; callSid: string; from: string; to: string; sipAgent?: string }
  | { kind: 'message_status'; messageId: string; status: MessageStatus; error?: string }
  | {
      kind: 'inbound_message';
      messageId: string;
      from: string;
      to: string;
      body: string;
      mediaUrls: string[];
    };

/**
 * What identifies the account a webhook belongs to before it is verified: the carrier's account id
 * where it sends one, and the numbers or ids to find our record by.
 */
export interface WebhookOwner {
  accountId?: string;
  callSid?: string;
  messageId?: string;
  /** Our number in the event (the `To` of an inbound message or call, the `From` of an outbound one). */
  ourNumber?: string;
}

export interface CredentialCheck {
  valid: boolean;
  detail: string;
  /** The account's name or id as the carrier reports it. */
  account?: string;
}

/** A call as the carrier's records show it (for recovering status callbacks that never arrived). */
export interface CallSnapshot {
  callSid: string;
  status: CallStatus;
  durationSeconds?: number;
  answeredBy?: 'human' | 'machine';
  createdAt: Date;
  endedAt?: Date;
}

export interface CarrierAdapter {
  /** A carrier's id, or `sip_trunk` for the organization's own trunk (`sip-trunk.ts`). */
  readonly id: TelephonyProvider;
  placeCall(credentials: CarrierCredentials, request: PlaceCallRequest): Promise<PlacedCall>;
  hangUp(credentials: CarrierCredentials, callSid: string): Promise<void>;
  /** Moves a live call to another number. */
  transfer(credentials: CarrierCredentials, callSid: string, to: string): Promise<void>;
  /**
   * Plays DTMF digits (`0-9`, `*`, `#`, `A-D`; `w` pauses 0.5 s) into a live call (carrier_b's
   * command, carrier_c's REST call); a ProviderError `invalid_digits` for keys the carrier cannot play.
   */
  sendDtmf?(credentials: CarrierCredentials, callSid: string, digits: string): Promise<void>;
  sendMessage(credentials: CarrierCredentials, request: SendMessageRequest): Promise<SentMessage>;
  /** Asks the carrier whether the credentials work; never throws for a refusal (valid: false). */
  validateCredentials(credentials: CarrierCredentials): Promise<CredentialCheck>;
  /** Reads who a webhook is about, without trusting it yet. */
  identifyWebhook(webhook: IncomingWebhook): WebhookOwner;
  /** True only when the webhook carries a valid signature made with these credentials. */
  verifyWebhook(credentials: CarrierCredentials, webhook: IncomingWebhook): boolean;
  /** The events a verified webhook reports. */
  parseWebhook(webhook: IncomingWebhook): CarrierEvent[];
  /**
   * What to answer the carrier's "the call connected, what now?" request with: markup that connects
   * the call's audio to `stream.url`, carrying `stream.token` the way the carrier allows. Carriers
   * that stream from the dial request (carrier_b) have none. `format` is the audio the markup asks the
   * carrier to stream, where it chooses one (carrier_c: 16-bit PCM at 16 kHz); none: μ-law 8 kHz.
   */
  answerMarkup?(stream: MediaStreamTarget): { contentType: string; body: string; format?: AudioFormat };
  /**
   * For carriers whose inbound calls are answered by a command rather than by markup (carrier_b's
   * call control): answers the ringing call `callSid` (our call `callId`) and streams its audio to
   * `stream.url`, carrying `stream.token` the way the carrier allows.
   */
  answerCall?(
    credentials: CarrierCredentials,
    request: { callSid: string; callId: number; stream: MediaStreamTarget },
  ): Promise<void>;
  /**
   * True only when a media stream's WebSocket upgrade carries the carrier's valid signature made with
   * these credentials. Carriers that do not sign the upgrade have none (the token alone proves it).
   */
  verifyMediaHandshake?(credentials: CarrierCredentials, handshake: MediaHandshake): boolean;
  /** The carrier's record of one call; undefined when it has none. */
  lookupCall?(credentials: CarrierCredentials, callSid: string): Promise<CallSnapshot | undefined>;
  /**
   * The outbound calls from `from` to `to` the carrier created at or after `since`: how a dial whose
   * answer was lost (the process stopped mid-request) is found, or known never to have happened.
   */
  findOutboundCalls?(
    credentials: CarrierCredentials,
    query: { from: string; to: string; since: Date },
  ): Promise<CallSnapshot[]>;
}
