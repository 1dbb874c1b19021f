/**
 * The structured header values the user agent reads on every message (RFC 3261 §20, grammar §25.1):
 * - name-addr / addr-spec (From, To, Contact, Route, Record-Route, Refer-To…):
 *   `"Alice" <sip:alice@host;transport=tcp>;tag=x` → `{displayName, uri, params}`;
 * - Via: `SIP/2.0/UDP host:port;branch=z9hG4bK…;rport` → `{transport, host, port, params}`;
 * - CSeq: `4711 INVITE` → `{seq, method}`.
 *
 * Design choices:
 * - `uri` stays the text between the angle brackets: it is sent on as written (a remote target, a
 *   route) and `parseUri` reads it when its parts are needed; unknown schemes (RFC 4475 §3.3.4) still
 *   parse, so the user agent can answer 416 instead of 400.
 * - Whitespace is accepted wherever the grammar's SWS/LWS allows it (around `;`, `=`, `/`, `:`),
 *   which is what RFC 4475 §3.1.1.1 tortures; the formatters write the compact form.
 * - An addr-spec without brackets may not hold `?` or `,` (§20.10): its `;` parameters belong to the
 *   header, not to the URI.
 * - A display name is decoded (quotes and escapes removed) and is always quoted again when formatted;
 *   unquoted display names may hold UTF-8 besides tokens, as deployed phones send them.
 * - The Via protocol version is read (`SIP/2.0`, or another so the UA can answer 505) but not kept.
 */

import {
  formatParams,
  isTokenChar,
  isWhitespace,
  type Params,
  quote,
  Scanner,
  scanParams,
  trimWhitespace,
  unquote,
} from './syntax.js';
import { formatHost, isAbsoluteUri, parseHostPort } from './uri.js';

export interface NameAddr {
  /** Decoded display name; undefined when there is none (`""` gives the empty string). */
  displayName?: string;
  uri: string;
  params: Params;
}

export interface Via {
  /** Upper-cased: UDP, TCP, TLS, WS, WSS, SCTP or an extension token. */
  transport: string;
  /** IPv6 without brackets. */
  host: string;
  port?: number;
  params: Params;
}

export interface CSeq {
  seq: number;
  method: string;
}

const isDisplayChar = (code: number) => isTokenChar(code) || code >= 0x80;
const isDigit = (code: number) => code >= 0x30 && code <= 0x39;
const isHostChar = (code: number) => isTokenChar(code) && code !== 0x21 && code !== 0x25; // no ! or %

export function parseNameAddr(text: string): NameAddr {
  const scanner = new Scanner(text, 'bad-name-addr', 'address');
  scanner.skipWhitespace();
  let displayName: string | undefined;
  if (scanner.peek() === '"') {
    displayName = unquote(scanner.quoted());
    scanner.skipWhitespace();
    if (scanner.peek() !== '<') scanner.fail('expected "<" after the display name');
  } else {
    const start = scanner.pos;
    const words: string[] = [];
    for (let word = scanner.run(isDisplayChar); word !== ''; word = scanner.run(isDisplayChar)) {
      words.push(word);
      scanner.skipWhitespace();
    }
    if (scanner.peek() !== '<') {
      scanner.pos = start;
      return parseAddrSpec(scanner);
    }
    if (words.length > 0) displayName = words.join(' ');
  }
  scanner.pos++;
  const uri = scanner.run((code) => code !== 0x3e && code !== 0x3c && code > 0x20);
  if (scanner.peek() !== '>') scanner.fail('expected ">" (no whitespace inside <…>)');
  scanner.pos++;
  if (!isAbsoluteUri(uri)) scanner.fail(`bad URI "${uri}"`);
  const params = scanParams(scanner);
  scanner.end();
  return displayName === undefined ? { uri, params } : { displayName, uri, params };
}

function parseAddrSpec(scanner: Scanner): NameAddr {
  const uri = scanner.run((code) => code !== 0x3b && code > 0x20);
  if (!isAbsoluteUri(uri)) scanner.fail(`bad URI "${uri}"`);
  if (uri.includes('?') || uri.includes(',')) scanner.fail('a URI with "?" or "," must be inside <…>');
  const params = scanParams(scanner);
  scanner.end();
  return { uri, params };
}

export function formatNameAddr(address: NameAddr): string {
  const name = address.displayName === undefined ? '' : `${quote(address.displayName)} `;
  return `${name}<${address.uri}>${formatParams(address.params)}`;
}

/** One via-parm (a Via header may hold several: split it with `headers(message, 'Via')`). */
export function parseVia(text: string): Via {
  const scanner = new Scanner(text, 'bad-via', 'Via');
  scanner.skipWhitespace();
  if (scanner.token().toUpperCase() !== 'SIP') scanner.fail('protocol is not SIP');
  scanner.expect('/');
  scanner.skipWhitespace();
  if (!/^[0-9]+\.[0-9]+$/.test(scanner.token())) scanner.fail('bad protocol version');
  scanner.expect('/');
  scanner.skipWhitespace();
  const transport = scanner.token().toUpperCase();
  if (!scanner.skipWhitespace()) scanner.fail('expected whitespace before sent-by');
  let hostport: string;
  if (scanner.peek() === '[') {
    const start = scanner.pos;
    scanner.run((code) => code !== 0x5d && !isWhitespace(code));
    if (scanner.peek() !== ']') scanner.fail('unterminated IPv6 reference');
    scanner.pos++;
    hostport = text.slice(start, scanner.pos);
  } else {
    hostport = scanner.run(isHostChar);
  }
  if (scanner.eat(':')) {
    scanner.skipWhitespace();
    hostport += `:${scanner.run(isDigit)}`;
  }
  const { host, port } = parseHostPort(hostport, (problem) => scanner.fail(problem));
  const params = scanParams(scanner);
  scanner.end();
  return port === undefined ? { transport, host, params } : { transport, host, port, params };
}

export function formatVia(via: Via): string {
  const port = via.port === undefined ? '' : `:${via.port}`;
  return `SIP/2.0/${via.transport} ${formatHost(via.host)}${port}${formatParams(via.params)}`;
}

/**
 * A via-parm with its parameters replaced, the protocol and sent-by kept exactly as written: what a
 * server does when it stamps `received` and `rport` on a request (RFC 3261 §18.2.1, RFC 3581 §4).
 * Refuses (SipParseError) text that is not a via-parm.
 */
export function withViaParams(text: string, params: Params): string {
  parseVia(text);
  // Nothing before the parameters (protocol, sent-by) may hold a ";", so the first one starts them.
  const semicolon = text.indexOf(';');
  return `${trimWhitespace(semicolon < 0 ? text : text.slice(0, semicolon))}${formatParams(params)}`;
}

/** The largest CSeq number: it must fit 32 bits unsigned (RFC 3261 §8.1.1.5). */
const MAX_CSEQ = 2 ** 32 - 1;

export function parseCSeq(text: string): CSeq {
  const scanner = new Scanner(text, 'bad-cseq', 'CSeq');
  scanner.skipWhitespace();
  const digits = scanner.run(isDigit).replace(/^0+(?=[0-9])/, '');
  if (digits === '') scanner.fail('expected a sequence number');
  if (digits.length > 10 || Number(digits) > MAX_CSEQ) scanner.fail('sequence number over 2^32-1');
  if (!scanner.skipWhitespace()) scanner.fail('expected whitespace before the method');
  const method = scanner.token();
  scanner.end();
  return { seq: Number(digits), method };
}

export function formatCSeq(cseq: CSeq): string {
  return `${cseq.seq} ${cseq.method}`;
}
