/**
 * How carrier_b's JSON reads, in our words: its event webhooks' envelope (`{data: {event_type,
 * occurred_at, payload}}`), its hang-up causes and message statuses as ours, a call's connected time,
 * its error lists; and the small readers of untrusted JSON the adapter (carrier-b.ts) uses throughout.
 * Kept apart so that the adapter reads as the requests it makes and the webhooks it takes.
 */
import type { MessageStatus } from '../../db/schema/messaging.js';
import type { CallStatus } from '../../db/schema/telephony.js';
import type { CarrierEvent } from './types.js';

export type Json = Record<string, unknown>;
export type CallStatusEvent = Extract<CarrierEvent, { kind: 'call_status' }>;

export interface EventEnvelope {
  eventType: string;
  occurredAt?: Date;
  payload: Json;
}

/** The carrier's hang-up causes (payload.hangup_cause of call.hangup) in our words. */
export const HANGUP_CAUSES: Record<string, CallStatus> = {
  normal_clearing: 'completed',
  /** The call reached the carrier's time limit after it was connected. */
  time_limit: 'completed',
  user_busy: 'busy',
  timeout: 'no-answer',
  no_answer: 'no-answer',
  originator_cancel: 'canceled',
  call_rejected: 'failed',
  not_found: 'failed',
  unspecified: 'failed',
};

/** Per-recipient message statuses (payload.to[].status) in our words. */
export const MESSAGE_STATUSES: Record<string, MessageStatus> = {
  scheduled: 'queued',
  queued: 'queued',
  sending: 'sending',
  sent: 'sent',
  /** Sent, but the destination network never confirmed delivery. */
  delivery_unconfirmed: 'sent',
  delivered: 'delivered',
  delivery_failed: 'undelivered',
  expired: 'undelivered',
  sending_failed: 'failed',
  cancelled: 'cancelled',
};

export function readEnvelope(rawBody: string): EventEnvelope | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(rawBody);
  } catch {
    return undefined;
  }
  const data = objectAt(asObject(parsed), 'data');
  const eventType = stringAt(data, 'event_type');
  if (!eventType) return undefined;
  const occurredAt = dateAt(data, 'occurred_at');
  return { eventType, payload: objectAt(data, 'payload'), ...(occurredAt ? { occurredAt } : {}) };
}

export function callStatus(
  callSid: string,
  status: CallStatus,
  payload: Json,
  at: Date | undefined,
): CallStatusEvent {
  const event: CallStatusEvent = { kind: 'call_status', callSid, status };
  const callId = decodeClientState(payload.client_state);
  if (callId !== undefined) event.callId = callId;
  if (at) event.at = at;
  return event;
}

/**
 * The answering-machine detection's webhooks (`answering_machine_detection: detect_beep`):
 * `call.machine.detection.ended` says who answered (`result` human, machine, or not_sure: no
 * verdict); `call.machine.greeting.ended` that a machine's greeting is over (`result` beep_detected,
 * ended, or not_sure).
 */
export function machineDetection(eventType: string, callSid: string, payload: Json): CarrierEvent[] {
  const result = stringAt(payload, 'result');
  const event: Extract<CarrierEvent, { kind: 'machine_detection' }> = { kind: 'machine_detection', callSid };
  if (eventType === 'call.machine.detection.ended') {
    if (result !== 'human' && result !== 'machine') return [];
    event.answeredBy = result;
  } else {
    // A greeting heard to its end was a machine's, whatever the detection said before.
    event.answeredBy = 'machine';
    event.greetingEnded = result === 'beep_detected' ? 'beep' : 'other';
  }
  const callId = decodeClientState(payload.client_state);
  if (callId !== undefined) event.callId = callId;
  return [event];
}

/**
 * Seconds between the call's start_time and end_time. The carrier's start_time is when the call
 * began, so for an outbound call the figure includes the time it rang.
 */
export function connectedSeconds(payload: Json): number | undefined {
  const start = dateAt(payload, 'start_time');
  const end = dateAt(payload, 'end_time');
  if (!start || !end) return undefined;
  return Math.max(0, Math.round((end.getTime() - start.getTime()) / 1000));
}

export function describeErrors(errors: unknown): string | undefined {
  if (!Array.isArray(errors)) return undefined;
  const parts = errors.map((item) => {
    const error = asObject(item);
    const text = stringAt(error, 'detail') ?? stringAt(error, 'title');
    const code = error.code;
    const codeText = typeof code === 'string' || typeof code === 'number' ? String(code) : undefined;
    return [codeText, text].filter(isString).join(': ');
  });
  const joined = parts.filter((part) => part !== '').join('; ');
  return joined === '' ? undefined : joined;
}

export function dataOf(body: unknown): Json {
  return objectAt(asObject(body), 'data');
}

export function firstRecipient(payload: Json): Json {
  const to = payload.to;
  return Array.isArray(to) ? asObject(to[0]) : {};
}

export function asObject(value: unknown): Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Json) : {};
}

export function objectAt(record: Json, key: string): Json {
  return asObject(record[key]);
}

export function stringAt(record: Json, key: string): string | undefined {
  const value = record[key];
  return typeof value === 'string' && value !== '' ? value : undefined;
}

export function dateAt(record: Json, key: string): Date | undefined {
  const value = stringAt(record, key);
  if (!value) return undefined;
  const date = new Date(value);
  return Number.isNaN(date.getTime()) ? undefined : date;
}

export function isString(value: unknown): value is string {
  return typeof value === 'string' && value !== '';
}

/** Our call id as the carrier's client state: base64 of `{"call_id": n}`, echoed on every call event. */
export function encodeClientState(callId: number): string {
  return Buffer.from(JSON.stringify({ call_id: callId }), 'utf8').toString('base64');
}

export function decodeClientState(value: unknown): number | undefined {
  if (typeof value !== 'string' || value === '') return undefined;
  try {
    const decoded: unknown = JSON.parse(Buffer.from(value, 'base64').toString('utf8'));
    const callId = asObject(decoded).call_id;
    return typeof callId === 'number' && Number.isSafeInteger(callId) ? callId : undefined;
  } catch {
    return undefined;
  }
}
