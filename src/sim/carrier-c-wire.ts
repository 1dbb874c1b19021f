/**
 * What carrier_c's simulated API says, apart from what it does (carrier-c.ts): which requests it
 * refuses and with which problem bodies (`invalid_parameters`), the event and status names of each
 * outcome, and how it writes numbers (E.164 without `+`). Kept apart so the simulator's file reads as
 * the calls' and messages' life.
 */
import { randomUUID } from 'node:crypto';
import type { CallOutcome, MessageOutcome, SimResponse } from './carrier-sim.js';

/** One refused field of a request, as the API lists it in `invalid_parameters`. */
export interface Problem {
  name: string;
  reason: string;
}

const ERRORS = 'https://developer.nexmo.com/api-errors';

/** The final voice event of each outcome. */
export const FINAL_EVENT: Record<CallOutcome['status'], string> = {
  completed: 'completed',
  busy: 'busy',
  'no-answer': 'timeout',
  failed: 'failed',
  canceled: 'cancelled',
};

/** The final Messages status callback of each outcome. */
export const FINAL_MESSAGE_STATUS: Record<MessageOutcome, string> = {
  delivered: 'delivered',
  undelivered: 'undeliverable',
  failed: 'rejected',
};

/** What is wrong with a create-call request (`to`, `from` and `answer_url` as the handler read them). */
export function callRequestProblems(
  body: Record<string, unknown>,
  to: Record<string, unknown>,
  from: Record<string, unknown>,
  answerUrl: unknown,
): Problem[] {
  const invalid: Problem[] = [];
  if (to.type !== 'phone' || typeof to.number !== 'string' || !/^\d{6,15}$/.test(to.number)) {
    invalid.push({ name: 'to', reason: 'must be one phone endpoint with an E.164 number without +' });
  }
  if (from.type !== 'phone' || typeof from.number !== 'string' || !/^\d{6,15}$/.test(from.number)) {
    invalid.push({ name: 'from', reason: 'must be a phone endpoint with an E.164 number without +' });
  }
  if (typeof answerUrl !== 'string' && !Array.isArray(body.ncco)) {
    invalid.push({ name: 'answer_url', reason: 'answer_url or ncco is required' });
  }
  if (body.ringing_timer !== undefined) {
    const timer = body.ringing_timer;
    if (typeof timer !== 'number' || timer < 1 || timer > 120) {
      invalid.push({ name: 'ringing_timer', reason: 'must be between 1 and 120' });
    }
  }
  const amd = body.advanced_machine_detection;
  if (amd !== undefined) {
    const { behavior, mode, beep_timeout: timeout } = (amd ?? {}) as Record<string, unknown>;
    if (
      !['continue', 'hangup'].includes(String(behavior)) ||
      !['default', 'detect', 'detect_beep'].includes(String(mode ?? 'detect')) ||
      (timeout !== undefined && (typeof timeout !== 'number' || timeout < 45 || timeout > 120))
    )
      invalid.push({
        name: 'advanced_machine_detection',
        reason: 'behavior, mode or beep_timeout is invalid',
      });
  }
  return invalid;
}

/** The fields of a call's `completed` event beyond its ids: when, how long, what it cost. */
export function completedFields(startedAt: Date, endedAt: Date, seconds: number): Record<string, unknown> {
  return {
    start_time: startedAt.toISOString(),
    end_time: endedAt.toISOString(),
    duration: String(seconds),
    rate: '0.01000000',
    price: ((seconds / 60) * 0.01).toFixed(8),
    network: '23410',
  };
}

/**
 * Where a transfer's `destination` sends the call: the number its NCCO connects, else its NCCO URL,
 * else the NCCO itself; undefined when it is not `{type: "ncco", ncco | url}`.
 */
export function transferTarget(destination: Record<string, unknown>): string | undefined {
  const ncco = Array.isArray(destination.ncco) ? destination.ncco : undefined;
  const url = Array.isArray(destination.url) ? destination.url[0] : undefined;
  if (destination.type !== 'ncco' || (!ncco && typeof url !== 'string')) return undefined;
  const connect = ncco?.map(record).find((action) => action.action === 'connect');
  const endpoint = Array.isArray(connect?.endpoint) ? record(connect.endpoint[0]) : undefined;
  if (endpoint?.type === 'phone' && typeof endpoint.number === 'string') return plus(endpoint.number);
  return typeof url === 'string' ? url : JSON.stringify(ncco);
}

/** What is wrong with the `digits` of a DTMF request (0-9, *, #, and `p` for a pause). */
export function digitsProblems(digits: unknown): Problem[] {
  return typeof digits === 'string' && /^[0-9*#p]{1,100}$/.test(digits)
    ? []
    : [{ name: 'digits', reason: 'must be 1 to 100 of 0-9, *, # or p' }];
}

/** An inbound SMS (or MMS, with `imageUrl`) as the Messages API posts it to the inbound webhook. */
export function inboundMessage(
  messageId: string,
  message: { from: string; to: string; text: string; imageUrl?: string },
): Record<string, unknown> {
  const payload: Record<string, unknown> = {
    channel: message.imageUrl ? 'mms' : 'sms',
    message_uuid: messageId,
    to: wire(message.to),
    from: wire(message.from),
    timestamp: new Date().toISOString(),
  };
  if (!message.imageUrl) return { ...payload, message_type: 'text', text: message.text };
  const image = message.text ? { url: message.imageUrl, caption: message.text } : { url: message.imageUrl };
  return { ...payload, message_type: 'image', image };
}

/** What is wrong with a send-message request. */
export function messageRequestProblems(body: Record<string, unknown>): Problem[] {
  const invalid: Problem[] = [];
  const channel = body.channel;
  const type = body.message_type;
  if (channel !== 'sms' && channel !== 'mms') invalid.push({ name: 'channel', reason: 'must be sms or mms' });
  if (typeof body.to !== 'string' || !/^\d{6,15}$/.test(body.to)) {
    invalid.push({ name: 'to', reason: 'must be an E.164 number without +' });
  }
  if (typeof body.from !== 'string' || body.from === '' || body.from.startsWith('+')) {
    invalid.push({ name: 'from', reason: 'must be a number without + or a sender id' });
  }
  const image = record(body.image);
  if (channel === 'sms' && (type !== 'text' || typeof body.text !== 'string' || body.text === '')) {
    invalid.push({ name: 'text', reason: 'sms needs message_type text and a text' });
  }
  if (channel === 'mms' && (type !== 'image' || typeof image.url !== 'string')) {
    invalid.push({ name: 'image', reason: 'mms needs message_type image and an image url' });
  }
  return invalid;
}

/** The `error` of a failed message's final status callback. */
export function messageFailure(final: string): Record<string, unknown> {
  return {
    type: `${ERRORS}/messages#1${final === 'rejected' ? '320' : '300'}`,
    title: final === 'rejected' ? '1320' : '1300',
    detail: final === 'rejected' ? 'Message rejected by the network' : 'Message could not be delivered',
  };
}

export function unauthorizedResponse(): SimResponse {
  return {
    status: 401,
    body: {
      type: `${ERRORS}#unauthorized`,
      title: 'Unauthorized',
      detail: 'You did not provide correct credentials.',
      instance: randomUUID(),
    },
  };
}

export function notFound(detail: string): SimResponse {
  return {
    status: 404,
    body: { type: `${ERRORS}#not-found`, title: 'Not Found', detail, instance: randomUUID() },
  };
}

export function badRequest(detail: string, invalid: Problem[]): SimResponse {
  return {
    status: 400,
    body: {
      type: `${ERRORS}#bad-request`,
      title: 'Bad Request',
      detail,
      instance: randomUUID(),
      invalid_parameters: invalid,
    },
  };
}

export function record(value: unknown): Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : {};
}

export function wire(number: string): string {
  return number.startsWith('+') ? number.slice(1) : number;
}

export function plus(number: string): string {
  return /^\d{6,15}$/.test(number) ? `+${number}` : number;
}
