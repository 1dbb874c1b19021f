/**
 * Carrier callbacks as each carrier posts them, for tests of the carrier-webhook routes: the wire
 * format of a call's final status, its connect request, a delivery receipt, an inbound message and
 * an inbound call, and each carrier's signature over them — with the key the organization holds, or
 * another account's. The carrier_b and carrier_c simulators serve as signers only (never started).
 */
import { randomUUID } from 'node:crypto';
import { carrierASignature } from '../../src/providers/carriers/carrier-a.js';
import { encodeClientState } from '../../src/providers/carriers/carrier-b.js';
import { CarrierBSimulator } from '../../src/sim/carrier-b.js';
import { CarrierCSimulator } from '../../src/sim/carrier-c.js';

export type CarrierId = 'carrier_a' | 'carrier_b' | 'carrier_c';

/** The carriers' webhook keys: the one the organizations hold, and another account's. */
const signerB = new CarrierBSimulator();
const foreignB = new CarrierBSimulator();
const signerC = new CarrierCSimulator();
const foreignC = new CarrierCSimulator();

let serial = 0;

/** The carrier account a callback is for: the credentials its organization stores, and its number. */
export interface Account {
  credentials: Record<string, string>;
  number: string;
}

/** A callback as the carrier posts it: its body, content type, and how it is signed. */
export interface Callback {
  body: string;
  contentType: string;
  /** carrier_a's form fields (its signature covers them and the URL). */
  form?: Record<string, string>;
}

/** What differs between the carriers: credentials, wire formats and signatures. */
export interface CarrierKit {
  id: CarrierId;
  /** Fresh credentials whose webhook key is the signer's. */
  credentials(): Record<string, string>;
  /** A final status: call `call` completed after 600 s. */
  completed(org: Account, call: { id: number; sid: string; to: string }): Callback;
  /** The callback that asks what to do when call `call` connected (carrier_b: its `call.answered`). */
  answered(org: Account, call: { id: number; sid: string; to: string }): Callback;
  /** A delivery receipt: message `providerId` was delivered. */
  delivered(org: Account, message: { providerId: string; to: string }): Callback;
  /** Someone texts `to`. */
  inboundMessage(org: Account, to: string): Callback;
  /** Someone calls `to`. */
  inboundCall(org: Account, to: string): Callback;
  /** Headers signing `callback` for `url` with the account's key (`good`) or another account's. */
  sign(
    org: Account,
    url: string,
    callback: Callback,
    signing: 'good' | 'foreign',
  ): Promise<Record<string, string>>;
}

const wire = (number: string) => number.replace(/^\+/, '');
const iso = (ms: number) => new Date(ms).toISOString();
const hex32 = () => randomUUID().replace(/-/g, '');

function form(fields: Record<string, string>): Callback {
  return {
    body: new URLSearchParams(fields).toString(),
    contentType: 'application/x-www-form-urlencoded',
    form: fields,
  };
}

function json(value: unknown): Callback {
  return { body: JSON.stringify(value), contentType: 'application/json' };
}

function envelope(eventType: string, payload: Record<string, unknown>): Callback {
  return json({
    data: {
      record_type: 'event',
      event_type: eventType,
      id: randomUUID(),
      occurred_at: iso(Date.now()),
      payload,
    },
    meta: { attempt: 1 },
  });
}

export const carrierA: CarrierKit = {
  id: 'carrier_a',
  credentials: () => ({
    account_sid: `AC${hex32()}`,
    auth_token: `token-${randomUUID()}`,
  }),
  completed: (org, call) =>
    form({
      CallSid: call.sid,
      AccountSid: org.credentials.account_sid!,
      CallStatus: 'completed',
      CallDuration: '600',
      Direction: 'outbound-api',
      From: org.number,
      To: call.to,
    }),
  answered: (org, call) =>
    form({
      CallSid: call.sid,
      AccountSid: org.credentials.account_sid!,
      CallStatus: 'in-progress',
      Direction: 'outbound-api',
      From: org.number,
      To: call.to,
    }),
  delivered: (org, message) =>
    form({
      MessageSid: message.providerId,
      AccountSid: org.credentials.account_sid!,
      MessageStatus: 'delivered',
      From: org.number,
      To: message.to,
    }),
  inboundMessage: (org, to) =>
    form({
      MessageSid: `SM${hex32()}`,
      AccountSid: org.credentials.account_sid!,
      From: nextNumber(),
      To: to,
      Body: 'Hello',
      NumMedia: '0',
    }),
  inboundCall: (org, to) =>
    form({
      CallSid: `CA${hex32()}`,
      AccountSid: org.credentials.account_sid!,
      CallStatus: 'ringing',
      Direction: 'inbound',
      From: nextNumber(),
      To: to,
    }),
  async sign(org, url, callback, signing) {
    const token = signing === 'good' ? org.credentials.auth_token! : 'another-accounts-token';
    return { 'x-twilio-signature': carrierASignature(token, url, callback.form!) };
  },
};

export const carrierB: CarrierKit = {
  id: 'carrier_b',
  credentials: () => ({
    api_key: `KEY-${randomUUID()}`,
    connection_id: String(8_000_000 + serial++),
    public_key: signerB.publicKey,
  }),
  completed: (org, call) =>
    envelope('call.hangup', {
      call_control_id: call.sid,
      connection_id: org.credentials.connection_id,
      client_state: encodeClientState(call.id),
      from: org.number,
      to: call.to,
      hangup_cause: 'normal_clearing',
      start_time: iso(Date.now() - 600_000),
      end_time: iso(Date.now()),
    }),
  answered: (org, call) =>
    envelope('call.answered', {
      call_control_id: call.sid,
      connection_id: org.credentials.connection_id,
      client_state: encodeClientState(call.id),
      from: org.number,
      to: call.to,
    }),
  delivered: (org, message) =>
    envelope('message.finalized', {
      record_type: 'message',
      direction: 'outbound',
      id: message.providerId,
      from: { phone_number: org.number },
      to: [{ phone_number: message.to, status: 'delivered' }],
      errors: [],
    }),
  inboundMessage: (_org, to) =>
    envelope('message.received', {
      record_type: 'message',
      direction: 'inbound',
      id: randomUUID(),
      from: { phone_number: nextNumber() },
      to: [{ phone_number: to, status: 'delivered' }],
      text: 'Hello',
      media: [],
    }),
  inboundCall: (org, to) =>
    envelope('call.initiated', {
      call_control_id: `v3:${randomUUID()}`,
      connection_id: org.credentials.connection_id,
      direction: 'incoming',
      from: nextNumber(),
      to,
    }),
  async sign(_org, _url, callback, signing) {
    return (signing === 'good' ? signerB : foreignB).signatureHeaders(callback.body);
  },
};

export const carrierC: CarrierKit = {
  id: 'carrier_c',
  credentials: () => ({
    application_id: randomUUID(),
    // Only webhooks are verified here; nothing is sent to the carrier.
    private_key: 'not used: no request reaches the carrier',
    signature_secret: signerC.signatureSecret,
  }),
  completed: (org, call) =>
    json({
      uuid: call.sid,
      conversation_uuid: `CON-${randomUUID()}`,
      status: 'completed',
      direction: 'outbound',
      from: wire(org.number),
      to: wire(call.to),
      timestamp: iso(Date.now()),
      duration: '600',
    }),
  answered: (org, call) =>
    json({
      uuid: call.sid,
      conversation_uuid: `CON-${randomUUID()}`,
      from: wire(org.number),
      to: wire(call.to),
    }),
  delivered: (org, message) =>
    json({
      message_uuid: message.providerId,
      from: wire(org.number),
      to: wire(message.to),
      timestamp: iso(Date.now()),
      status: 'delivered',
      channel: 'sms',
    }),
  inboundMessage: (_org, to) =>
    json({
      channel: 'sms',
      message_uuid: randomUUID(),
      from: wire(nextNumber()),
      to: wire(to),
      message_type: 'text',
      text: 'Hello',
    }),
  inboundCall: (_org, to) =>
    json({
      uuid: randomUUID(),
      conversation_uuid: `CON-${randomUUID()}`,
      from: wire(nextNumber()),
      to: wire(to),
    }),
  async sign(org, _url, callback, signing) {
    const signer = signing === 'good' ? signerC : foreignC;
    return {
      authorization: `Bearer ${await signer.webhookToken(callback.body, org.credentials.application_id)}`,
    };
  },
};

/** A fresh E.164 number. */
export function nextNumber(): string {
  serial += 1;
  return `+1415666${String(1000 + serial).padStart(4, '0')}`;
}
