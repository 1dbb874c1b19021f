/**
 * What carrier_b's simulated API says, apart from what it does (carrier-b.ts): its error bodies, the
 * hangup causes and message failures it reports, and how it counts the parts of an SMS. Kept apart so
 * the simulator's file reads as the calls' and messages' life.
 */
import type { CallOutcome, MessageOutcome, SimResponse } from './carrier-sim.js';

/** A number as the API accepts it: E.164 with its `+`. */
export const E164 = /^\+[1-9]\d{1,14}$/;
/** Seconds a call rang before its outcome, for the back-dated start_time. */
export const RING_SECONDS: Record<Exclude<CallOutcome['status'], 'completed'>, number> = {
  busy: 2,
  'no-answer': 30,
  failed: 1,
  canceled: 5,
};
/** The call.hangup cause, SIP code and side of each outcome. */
export const HANGUP: Record<CallOutcome['status'], { cause: string; sip: string; source: string }> = {
  completed: { cause: 'normal_clearing', sip: '200', source: 'callee' },
  busy: { cause: 'user_busy', sip: '486', source: 'callee' },
  'no-answer': { cause: 'timeout', sip: '408', source: 'unknown' },
  failed: { cause: 'call_rejected', sip: '603', source: 'callee' },
  canceled: { cause: 'originator_cancel', sip: '487', source: 'caller' },
};
/** Illustrative per-recipient failures (the simulator's, not an exhaustive copy of the carrier's codes). */
export const MESSAGE_FAILURES: Record<
  Exclude<MessageOutcome, 'delivered'>,
  { status: string; error: unknown }
> = {
  undelivered: {
    status: 'delivery_failed',
    error: {
      code: '40008',
      title: 'Undeliverable',
      detail: 'The destination network could not deliver the message.',
    },
  },
  failed: {
    status: 'sending_failed',
    error: { code: '40001', title: 'Not routable', detail: 'The destination number is not routable.' },
  },
};

export function unauthorizedResponse(): SimResponse {
  return errorResponse(
    401,
    '10009',
    'Authentication failed',
    'The required authentication headers were either invalid or not included in the request.',
  );
}

export function notFound(): SimResponse {
  return errorResponse(
    404,
    '10005',
    'Resource not found',
    'The requested resource or URL could not be found.',
  );
}

export function errorResponse(
  status: number,
  code: string,
  title: string,
  detail: string,
  pointer?: string,
): SimResponse {
  return {
    status,
    body: { errors: [{ code, title, detail, ...(pointer ? { source: { pointer } } : {}) }] },
  };
}

export function missing(field: string): SimResponse {
  return errorResponse(
    422,
    '10004',
    'Missing required parameter',
    `The '${field}' parameter is required.`,
    `/${field}`,
  );
}

export function asRecord(value: unknown): Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : {};
}

export function text(value: unknown): string | undefined {
  return typeof value === 'string' && value !== '' ? value : undefined;
}

export function iso(ms: number): string {
  return new Date(ms).toISOString();
}

// The GSM 03.38 basic set (as far as it is printable here) and its extension characters, which count twice.
const GSM_BASIC = new Set(
  '@£$¥èéùìòÇ\nØø\rÅåΔ_ΦΓΛΩΠΨΣΘΞÆæßÉ !"#¤%&\'()*+,-./0123456789:;<=>?¡ABCDEFGHIJKLMNOPQRSTUVWXYZÄÖÑÜ§¿abcdefghijklmnopqrstuvwxyzäöñüà',
);
const GSM_EXTENSION = new Set('^{}\\[~]|€\f');

/** Encoding and number of parts of an SMS text, as the carrier counts them. */
export function segmentsOf(body: string): { encoding: 'GSM-7' | 'UCS-2'; parts: number } {
  let septets = 0;
  let gsm = true;
  for (const char of body) {
    if (GSM_BASIC.has(char)) septets += 1;
    else if (GSM_EXTENSION.has(char)) septets += 2;
    else {
      gsm = false;
      break;
    }
  }
  if (gsm) return { encoding: 'GSM-7', parts: septets <= 160 ? 1 : Math.ceil(septets / 153) };
  const units = body.length;
  return { encoding: 'UCS-2', parts: units <= 70 ? 1 : Math.ceil(units / 67) };
}
