/**
 * SIP header fields (RFC 3261 §7.3, §20): kept as an ordered list of `{name, value}` exactly as they
 * came (order matters for Via, Route and Record-Route), with names made canonical — compact forms
 * expanded (`v` → `Via`, RFC 3261 §7.3.3 and the IANA registry) and known names spelled the usual way
 * (`call-id` → `Call-ID`) — and case-insensitive lookups.
 *
 * Design: values stay strings; the structured parsers (uri.ts, address.ts, digest.ts) are applied by
 * whoever needs a value. Only headers whose grammar is a comma list (`#element`) are split into
 * elements by `headers()`: splitting Date, User-Agent or WWW-Authenticate at commas would corrupt
 * them, so an unknown header is never split.
 */
import { splitList } from './syntax.js';

export interface SipHeader {
  name: string;
  value: string;
}

/** Compact forms (RFC 3261 §7.3.3, RFC 3515, RFC 3892, RFC 4028, RFC 3841, RFC 6665, RFC 4474). */
const COMPACT_FORMS = new Map(
  Object.entries({
    a: 'Accept-Contact',
    b: 'Referred-By',
    c: 'Content-Type',
    d: 'Request-Disposition',
    e: 'Content-Encoding',
    f: 'From',
    i: 'Call-ID',
    j: 'Reject-Contact',
    k: 'Supported',
    l: 'Content-Length',
    m: 'Contact',
    n: 'Identity-Info',
    o: 'Event',
    r: 'Refer-To',
    s: 'Subject',
    t: 'To',
    u: 'Allow-Events',
    v: 'Via',
    x: 'Session-Expires',
    y: 'Identity',
  }),
);

const KNOWN_NAMES = [
  ...COMPACT_FORMS.values(),
  'Accept',
  'Accept-Encoding',
  'Accept-Language',
  'Alert-Info',
  'Allow',
  'Authentication-Info',
  'Authorization',
  'Call-Info',
  'Content-Disposition',
  'Content-Language',
  'CSeq',
  'Date',
  'Diversion',
  'Error-Info',
  'Expires',
  'History-Info',
  'In-Reply-To',
  'Max-Forwards',
  'Min-Expires',
  'Min-SE',
  'MIME-Version',
  'Organization',
  'P-Asserted-Identity',
  'P-Preferred-Identity',
  'Path',
  'Priority',
  'Privacy',
  'Proxy-Authenticate',
  'Proxy-Authorization',
  'Proxy-Require',
  'RAck',
  'Reason',
  'Record-Route',
  'Replaces',
  'Reply-To',
  'Require',
  'Retry-After',
  'Route',
  'RSeq',
  'Server',
  'Service-Route',
  'Subscription-State',
  'Timestamp',
  'Unsupported',
  'User-Agent',
  'Warning',
  'WWW-Authenticate',
];
const CANONICAL = new Map(KNOWN_NAMES.map((name) => [name.toLowerCase(), name]));

/** Headers whose grammar is a comma-separated list, so several values may share one field line. */
const LIST_HEADERS = new Set([
  'accept',
  'accept-contact',
  'accept-encoding',
  'accept-language',
  'alert-info',
  'allow',
  'allow-events',
  'call-info',
  'contact',
  'content-encoding',
  'content-language',
  'diversion',
  'error-info',
  'history-info',
  'in-reply-to',
  'p-asserted-identity',
  'p-preferred-identity',
  'path',
  'proxy-require',
  'reason',
  'record-route',
  'reject-contact',
  'request-disposition',
  'require',
  'route',
  'service-route',
  'supported',
  'unsupported',
  'via',
  'warning',
]);

/** The long, canonically spelled name of a header (`v`, `VIA` → `Via`); unknown names are kept. */
export function canonicalHeaderName(name: string): string {
  const lower = name.toLowerCase();
  return COMPACT_FORMS.get(lower) ?? CANONICAL.get(lower) ?? name;
}

export function isListHeader(name: string): boolean {
  return LIST_HEADERS.has(canonicalHeaderName(name).toLowerCase());
}

const sameName = (wanted: string) => {
  const key = canonicalHeaderName(wanted).toLowerCase();
  return (header: SipHeader) => canonicalHeaderName(header.name).toLowerCase() === key;
};

/** The value of the first field with this name (compact or long, any case), or undefined. */
export function header(message: { headers: readonly SipHeader[] }, name: string): string | undefined {
  return message.headers.find(sameName(name))?.value;
}

/**
 * Every value of a header in order: for list headers (Via, Contact, Route…) each field is split into
 * its elements, so `Via: a, b` and two `Via` lines give the same answer; other headers give one value
 * per field line.
 */
export function headers(message: { headers: readonly SipHeader[] }, name: string): string[] {
  const fields = message.headers.filter(sameName(name)).map((field) => field.value);
  return isListHeader(name) ? fields.flatMap(splitList) : fields;
}

/** How many field lines carry this header (to refuse a repeated single-value header). */
export function headerCount(message: { headers: readonly SipHeader[] }, name: string): number {
  return message.headers.filter(sameName(name)).length;
}
