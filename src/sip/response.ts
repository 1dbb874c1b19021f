/**
 * Building a response to a request (RFC 3261 §8.2.6): a pure function, so the transaction and dialog
 * layers can build 100 Trying, 200 OK, 401 or 486 the same way and test them without sockets.
 *
 * What is copied, in the request's order: every Via field (§8.2.6.2, unchanged, so the response
 * retraces the request's path), From, To, Call-ID and CSeq, and Timestamp for a 100 (§8.2.6.1).
 * A To tag is added only when the caller passes one and the To has none (a To that already has a tag
 * is kept as it was). Record-Route copying for dialog-creating responses (§12.1.1), Contact and the
 * rest are the caller's `headers`; Content-Length is written by `serializeMessage`.
 */
import { parseNameAddr } from './address.js';
import { canonicalHeaderName, header, type SipHeader } from './headers.js';
import type { SipRequest, SipResponse } from './message.js';
import { isToken } from './syntax.js';

/** Reason phrases of RFC 3261 §21 and the later ones a trunk sends. */
const REASON_PHRASES: Record<number, string> = {
  100: 'Trying',
  180: 'Ringing',
  181: 'Call Is Being Forwarded',
  182: 'Queued',
  183: 'Session Progress',
  199: 'Early Dialog Terminated',
  200: 'OK',
  202: 'Accepted',
  204: 'No Notification',
  300: 'Multiple Choices',
  301: 'Moved Permanently',
  302: 'Moved Temporarily',
  305: 'Use Proxy',
  380: 'Alternative Service',
  400: 'Bad Request',
  401: 'Unauthorized',
  402: 'Payment Required',
  403: 'Forbidden',
  404: 'Not Found',
  405: 'Method Not Allowed',
  406: 'Not Acceptable',
  407: 'Proxy Authentication Required',
  408: 'Request Timeout',
  410: 'Gone',
  413: 'Request Entity Too Large',
  414: 'Request-URI Too Long',
  415: 'Unsupported Media Type',
  416: 'Unsupported URI Scheme',
  420: 'Bad Extension',
  421: 'Extension Required',
  422: 'Session Interval Too Small',
  423: 'Interval Too Brief',
  480: 'Temporarily Unavailable',
  481: 'Call/Transaction Does Not Exist',
  482: 'Loop Detected',
  483: 'Too Many Hops',
  484: 'Address Incomplete',
  485: 'Ambiguous',
  486: 'Busy Here',
  487: 'Request Terminated',
  488: 'Not Acceptable Here',
  489: 'Bad Event',
  491: 'Request Pending',
  493: 'Undecipherable',
  500: 'Server Internal Error',
  501: 'Not Implemented',
  502: 'Bad Gateway',
  503: 'Service Unavailable',
  504: 'Server Time-out',
  505: 'Version Not Supported',
  513: 'Message Too Large',
  600: 'Busy Everywhere',
  603: 'Decline',
  604: 'Does Not Exist Anywhere',
  606: 'Not Acceptable',
};

/** The usual reason phrase of a status; a status without one gets its class's (`4xx` → Bad Request). */
export function reasonPhrase(status: number): string {
  return REASON_PHRASES[status] ?? REASON_PHRASES[Math.floor(status / 100) * 100] ?? 'Unknown';
}

export interface ResponseOptions {
  reason?: string;
  /** Added as `;tag=` to the To header when it has no tag yet. */
  toTag?: string;
  /** Appended after the copied headers (Contact, Allow, Supported, WWW-Authenticate…). */
  headers?: SipHeader[];
  body?: Buffer;
}

const COPIED = new Set(['Via', 'From', 'To', 'Call-ID', 'CSeq']);

export function buildResponse(
  request: SipRequest,
  status: number,
  options: ResponseOptions = {},
): SipResponse {
  if (options.toTag !== undefined && !isToken(options.toTag)) {
    throw new RangeError(`To tag ${JSON.stringify(options.toTag)} is not a token`);
  }
  const copied: SipHeader[] = [];
  for (const field of request.headers) {
    const name = canonicalHeaderName(field.name);
    if (COPIED.has(name) || (status === 100 && name === 'Timestamp')) {
      copied.push({ name, value: name === 'To' ? toWithTag(field.value, options.toTag) : field.value });
    }
  }
  return {
    version: 'SIP/2.0',
    status,
    reason: options.reason ?? reasonPhrase(status),
    headers: [...copied, ...(options.headers ?? [])],
    body: options.body ?? Buffer.alloc(0),
  };
}

function toWithTag(to: string, tag: string | undefined): string {
  if (tag === undefined || parseNameAddr(to).params.has('tag')) return to;
  return `${to};tag=${tag}`;
}

/** The To tag of a message, if any (undefined also when the To header is missing). */
export function toTagOf(message: { headers: readonly SipHeader[] }): string | undefined {
  const to = header(message, 'To');
  return to === undefined ? undefined : (parseNameAddr(to).params.get('tag') ?? undefined);
}
