/**
 * SIP messages (RFC 3261 §7): the model, the parser of one datagram and the serializer — the base of
 * Switchboard's own SIP user agent (src/sip/) for bring-your-own trunks. We write our own stack because
 * no maintained pure-JS one runs as a server over UDP and TCP (see syntax.ts).
 *
 * Design choices:
 * - A message is plain data: start line, an ordered list of `{name, value}` headers (headers.ts has
 *   the lookups), and the body as bytes. The structured values are parsed on demand (address.ts,
 *   uri.ts), but `parseMessage` checks the ones every later layer relies on — Via, From, To, Call-ID,
 *   CSeq (its method matching the request's), Contact, Content-Length and the Request-URI — so a
 *   message it returns can be matched to a transaction and answered without another failure path.
 *   Application-level checks (a supported scheme, Max-Forwards, Require) are the user agent's.
 * - Input is tolerated the way RFC 3261 §7.5 and RFC 4475 ask: CRLF or bare LF line ends, folded
 *   header lines (joined with one space), compact and oddly cased names, CRLFs before the start line,
 *   any `SIP/x.y` version (so the UA can answer 505). Header values may hold any character but CR and
 *   LF (quoted-pairs may escape controls, RFC 4475 §3.1.1.2).
 * - The body is exactly Content-Length bytes: a datagram with fewer is refused, extra octets are
 *   dropped (RFC 3261 §18.3); without Content-Length the body runs to the end of the datagram.
 * - Work is bounded: at most `SIP_MAX_MESSAGE_BYTES` and `SIP_MAX_HEADERS` header fields, every step
 *   linear in the input. Anything malformed throws `SipParseError` and nothing else.
 * - The serializer writes CRLF, canonical names (`v` → `Via`) and a Content-Length that matches the
 *   body, replacing any given one in place; it refuses (RangeError) a name that is not a token or a
 *   value holding CR or LF, so a caller cannot inject header lines.
 */
import { parseCSeq, parseNameAddr, parseVia } from './address.js';
import { canonicalHeaderName, header, headerCount, headers, type SipHeader } from './headers.js';
import { isToken, isWhitespace, SipParseError, trimWhitespace } from './syntax.js';
import { isAbsoluteUri, parseUri } from './uri.js';

export interface SipRequest {
  method: string;
  /** The Request-URI as written. */
  uri: string;
  /** `SIP/2.0` (upper-cased). */
  version: string;
  headers: SipHeader[];
  body: Buffer;
}

export interface SipResponse {
  version: string;
  status: number;
  reason: string;
  headers: SipHeader[];
  body: Buffer;
}

export type SipMessage = SipRequest | SipResponse;

export const isRequest = (message: SipMessage): message is SipRequest => 'method' in message;

/** The largest message accepted (a UDP datagram's payload is at most 65,507 bytes over IPv4). */
export const SIP_MAX_MESSAGE_BYTES = 64 * 1024;
/** The most header field lines accepted in one message. */
export const SIP_MAX_HEADERS = 200;

const SIP_VERSION = /^SIP\/[0-9]+\.[0-9]+$/i;

export interface MessageHead {
  headers: SipHeader[];
  /** Offset of the first body byte, just after the empty line. */
  bodyStart: number;
}

/**
 * Reads the header fields from `start` (skipping the start line) up to the empty line, unfolding
 * continuation lines. Throws `no-header-end` when the bytes end before the empty line.
 */
export function readMessageHead(bytes: Buffer, start = 0): MessageHead {
  let pos = start;
  let sawStartLine = false;
  const fields: { name: string; parts: string[] }[] = [];
  for (;;) {
    const newline = bytes.indexOf(0x0a, pos);
    if (newline < 0)
      throw new SipParseError('no-header-end', 'the header section has no empty line after it');
    const end = newline > pos && bytes[newline - 1] === 0x0d ? newline - 1 : newline;
    const line = bytes.toString('utf8', pos, end);
    pos = newline + 1;
    if (line.includes('\r')) throw new SipParseError('bad-header-line', 'a CR that does not end a line');
    if (!sawStartLine) {
      sawStartLine = true; // parseStartLine reads it
      continue;
    }
    if (line === '') break;
    if (isWhitespace(line.charCodeAt(0))) {
      const current = fields.at(-1);
      if (!current) throw new SipParseError('bad-header-line', 'a continuation line before any header');
      current.parts.push(trimWhitespace(line));
      continue;
    }
    const colon = line.indexOf(':');
    const name = colon < 0 ? '' : trimWhitespace(line.slice(0, colon));
    if (!isToken(name)) {
      throw new SipParseError('bad-header-line', `not a header line: ${JSON.stringify(line.slice(0, 80))}`);
    }
    if (fields.length === SIP_MAX_HEADERS) {
      throw new SipParseError('too-many-headers', `more than ${SIP_MAX_HEADERS} header fields`);
    }
    fields.push({ name: canonicalHeaderName(name), parts: [trimWhitespace(line.slice(colon + 1))] });
  }
  const headerList = fields.map(({ name, parts }) => ({
    name,
    value: parts.filter((part) => part !== '').join(' '),
  }));
  return { headers: headerList, bodyStart: pos };
}

/** The Content-Length the headers declare, or undefined without one; refuses a bad or repeated one. */
export function declaredContentLength(fields: readonly SipHeader[]): number | undefined {
  const values = fields.filter((field) => field.name === 'Content-Length').map((field) => field.value);
  if (values.length === 0) return undefined;
  if (values.length > 1) throw new SipParseError('bad-content-length', 'more than one Content-Length');
  const value = values[0] as string;
  if (!/^[0-9]{1,10}$/.test(value)) {
    throw new SipParseError('bad-content-length', `Content-Length ${JSON.stringify(value.slice(0, 40))}`);
  }
  return Number(value);
}

/** Parses one whole message, e.g. a UDP datagram. */
export function parseMessage(bytes: Buffer): SipMessage {
  if (bytes.length > SIP_MAX_MESSAGE_BYTES) {
    throw new SipParseError('too-large', `message of ${bytes.length} bytes`);
  }
  let start = 0;
  while (start < bytes.length && (bytes[start] === 0x0d || bytes[start] === 0x0a)) start++;
  if (start === bytes.length) throw new SipParseError('no-message', 'no start line');
  // The start line is judged first, so a message that is not SIP at all is named as such.
  const lineEnd = bytes.indexOf(0x0a, start);
  const firstLine = bytes.toString('utf8', start, lineEnd < 0 ? bytes.length : lineEnd);
  const startLine = parseStartLine(firstLine.endsWith('\r') ? firstLine.slice(0, -1) : firstLine);
  const head = readMessageHead(bytes, start);
  const available = bytes.length - head.bodyStart;
  const length = declaredContentLength(head.headers) ?? available;
  if (length > available) {
    throw new SipParseError('body-truncated', `Content-Length ${length} but ${available} body bytes`);
  }
  const body = Buffer.from(bytes.subarray(head.bodyStart, head.bodyStart + length));
  const message: SipMessage = { ...startLine, headers: head.headers, body };
  checkCoreHeaders(message);
  return message;
}

type StartLine = Omit<SipRequest, 'headers' | 'body'> | Omit<SipResponse, 'headers' | 'body'>;

function parseStartLine(line: string): StartLine {
  const badLine = () =>
    new SipParseError('bad-start-line', `start line ${JSON.stringify(line.slice(0, 120))}`);
  if (/^SIP\//i.test(line)) {
    // `s`: a reason phrase may hold U+2028 and U+2029, which `.` alone would not match.
    const match = /^(SIP\/[0-9]+\.[0-9]+) ([1-6][0-9][0-9])(?: (.*))?$/is.exec(line);
    if (!match) throw badLine();
    const [, version = '', status = '', reason = ''] = match;
    return { version: version.toUpperCase(), status: Number(status), reason };
  }
  // Request-Line = Method SP Request-URI SP SIP-Version: exactly two single spaces (RFC 4475 §3.1.2.9-10).
  const parts = line.split(' ');
  if (parts.length !== 3) throw badLine();
  const [method = '', uri = '', version = ''] = parts;
  if (!isToken(method) || !SIP_VERSION.test(version)) throw badLine();
  checkRequestUri(uri);
  return { method, uri, version: version.toUpperCase() };
}

/** A sip/sips/tel Request-URI must parse and carry no headers (RFC 3261 §19.1.1, RFC 4475 §3.1.2.11). */
function checkRequestUri(uri: string): void {
  const scheme = uri.slice(0, uri.indexOf(':') + 1).toLowerCase();
  if (scheme === 'sip:' || scheme === 'sips:' || scheme === 'tel:') {
    let headerCount: number;
    try {
      headerCount = parseUri(uri).headers.size;
    } catch (error) {
      throw new SipParseError('bad-request-uri', (error as Error).message);
    }
    if (headerCount > 0) throw new SipParseError('bad-request-uri', 'a Request-URI may not carry headers');
  } else if (!isAbsoluteUri(uri)) {
    throw new SipParseError('bad-request-uri', `Request-URI ${JSON.stringify(uri.slice(0, 120))}`);
  }
}

function single(message: SipMessage, name: string): string {
  const count = headerCount(message, name);
  if (count === 0) throw new SipParseError('missing-header', `no ${name} header`);
  if (count > 1) throw new SipParseError('repeated-header', `${count} ${name} headers`);
  return header(message, name) as string;
}

function checkCoreHeaders(message: SipMessage): void {
  const vias = headers(message, 'Via');
  if (vias.length === 0) throw new SipParseError('missing-header', 'no Via header');
  for (const via of vias) parseVia(via);
  parseNameAddr(single(message, 'From'));
  parseNameAddr(single(message, 'To'));
  const callId = single(message, 'Call-ID');
  if (!/^[^\s]+$/.test(callId)) throw new SipParseError('bad-call-id', 'an empty or spaced Call-ID');
  const cseq = parseCSeq(single(message, 'CSeq'));
  if (isRequest(message) && cseq.method !== message.method) {
    throw new SipParseError('cseq-method-mismatch', `CSeq method ${cseq.method} in a ${message.method}`);
  }
  for (const contact of headers(message, 'Contact')) if (contact !== '*') parseNameAddr(contact);
}

function checkField(name: string, value: string): void {
  if (!isToken(name)) throw new RangeError(`SIP header name ${JSON.stringify(name)} is not a token`);
  if (/[\r\n]/.test(value)) throw new RangeError(`SIP header ${name} holds a line break`);
}

function startLineOf(message: SipMessage): string {
  if (!SIP_VERSION.test(message.version))
    throw new RangeError(`SIP version ${JSON.stringify(message.version)}`);
  if (isRequest(message)) {
    if (!isToken(message.method)) throw new RangeError(`SIP method ${JSON.stringify(message.method)}`);
    if (message.uri === '' || /[\s]/.test(message.uri))
      throw new RangeError('SIP Request-URI with whitespace');
    return `${message.method} ${message.uri} ${message.version}`;
  }
  if (!Number.isInteger(message.status) || message.status < 100 || message.status > 699) {
    throw new RangeError(`SIP status ${message.status}`);
  }
  if (/[\r\n]/.test(message.reason)) throw new RangeError('SIP reason phrase with a line break');
  return `${message.version} ${message.status} ${message.reason}`;
}

export function serializeMessage(message: SipMessage): Buffer {
  const lines = [startLineOf(message)];
  const lengthLine = `Content-Length: ${message.body.length}`;
  let lengthWritten = false;
  for (const field of message.headers) {
    const name = canonicalHeaderName(field.name);
    checkField(name, field.value);
    if (name !== 'Content-Length') lines.push(`${name}: ${field.value}`);
    else if (!lengthWritten) lines.push(lengthLine);
    lengthWritten ||= name === 'Content-Length';
  }
  if (!lengthWritten) lines.push(lengthLine);
  return Buffer.concat([Buffer.from(`${lines.join('\r\n')}\r\n\r\n`, 'utf8'), message.body]);
}
