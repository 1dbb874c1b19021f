/**
 * SIP and SIPS URIs (RFC 3261 §19.1, grammar §25.1) and, minimally, tel URIs (RFC 3966): parse and
 * format. `sip:alice@[2001:db8::1]:5070;transport=tcp?subject=hi` → `{scheme, user, host, port,
 * params, headers}`.
 *
 * Design choices:
 * - Text is kept as written: the user part and parameter values keep their %-escapes and case, so
 *   `formatUri(parseUri(x))` gives `x` back (parameter names lower-cased) and a Request-URI or a
 *   Contact can be sent on exactly as the peer wrote it. Comparison rules (§19.1.4) are a later
 *   layer's business.
 * - A password (`user:pass@host`, deprecated by §19.1.1) is not modelled: it stays inside `user`.
 * - An IPv6 host is stored without its brackets (what `dgram` and `net` want) and formatted with them.
 * - A tel URI has its number in `user` and an empty `host`.
 */
import { formatParams, type Params, SipParseError } from './syntax.js';

export interface SipUri {
  scheme: 'sip' | 'sips' | 'tel';
  user?: string;
  host: string;
  port?: number;
  /** uri-parameters by lower-cased name; `null` for a flag such as `lr`. */
  params: Params;
  /** `?name=value&…` headers, names as written. */
  headers: Map<string, string>;
}

const fail = (text: string, problem: string): never => {
  throw new SipParseError('bad-uri', `URI ${JSON.stringify(text.slice(0, 200))}: ${problem}`);
};

const ALNUM = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789';
const UNRESERVED = `${ALNUM}-_.!~*'()`;
const charSet = (chars: string) => new Set([...chars].map((char) => char.charCodeAt(0)));
/** user / password characters, and the `:` between them (§25.1 userinfo). */
const USER_CHARS = charSet(`${UNRESERVED}&=+$,;?/:`);
const PARAM_CHARS = charSet(`${UNRESERVED}[]/:&+$`);
const HEADER_CHARS = charSet(`${UNRESERVED}[]/?:+$`);
const HOST_CHARS = charSet(`${ALNUM}-._`);
const IPV6_CHARS = charSet('0123456789abcdefABCDEF:.');
const TEL_CHARS = charSet('0123456789abcdefABCDEF*#+-.()');

const isHex = (code: number) =>
  (code >= 0x30 && code <= 0x39) || (code >= 0x41 && code <= 0x46) || (code >= 0x61 && code <= 0x66);

/** True when every character is in `allowed` or part of a well-formed `%XX` escape. */
function allEscapedOr(text: string, allowed: Set<number>): boolean {
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code === 0x25) {
      if (!isHex(text.charCodeAt(i + 1)) || !isHex(text.charCodeAt(i + 2))) return false;
      i += 2;
    } else if (!allowed.has(code)) return false;
  }
  return true;
}

/** Parses `;name[=value]` segments (no whitespace inside a URI); the first of repeated names wins. */
function parseUriParams(text: string, segments: string[]): Params {
  const params: Params = new Map();
  for (const segment of segments) {
    const equals = segment.indexOf('=');
    const name = equals < 0 ? segment : segment.slice(0, equals);
    const value = equals < 0 ? null : segment.slice(equals + 1);
    if (name === '' || !allEscapedOr(name, PARAM_CHARS)) fail(text, `bad parameter "${segment}"`);
    if (value !== null && (value === '' || !allEscapedOr(value, PARAM_CHARS))) {
      fail(text, `bad parameter value "${segment}"`);
    }
    const key = name.toLowerCase();
    if (!params.has(key)) params.set(key, value);
  }
  return params;
}

function parseUriHeaders(text: string, query: string): Map<string, string> {
  const headers = new Map<string, string>();
  for (const pair of query.split('&')) {
    const equals = pair.indexOf('=');
    const name = pair.slice(0, equals);
    const value = pair.slice(equals + 1);
    if (equals < 1 || !allEscapedOr(name, HEADER_CHARS) || !allEscapedOr(value, HEADER_CHARS)) {
      fail(text, `bad header "${pair}"`);
    }
    if (!headers.has(name)) headers.set(name, value);
  }
  return headers;
}

/** `host [":" port]`, the host a name, an IPv4 address or a bracketed IPv6 reference. */
export function parseHostPort(
  hostport: string,
  onError: (problem: string) => never,
): { host: string; port?: number } {
  let host: string;
  let rest: string;
  if (hostport.startsWith('[')) {
    const close = hostport.indexOf(']');
    if (close < 0) return onError('unterminated IPv6 reference');
    host = hostport.slice(1, close);
    rest = hostport.slice(close + 1);
    if (!host.includes(':') || ![...host].every((char) => IPV6_CHARS.has(char.charCodeAt(0)))) {
      return onError(`bad IPv6 address "${host}"`);
    }
  } else {
    const colon = hostport.indexOf(':');
    host = colon < 0 ? hostport : hostport.slice(0, colon);
    rest = colon < 0 ? '' : hostport.slice(colon);
    if (host === '' || ![...host].every((char) => HOST_CHARS.has(char.charCodeAt(0)))) {
      return onError(`bad host "${host}"`);
    }
  }
  if (rest === '') return { host };
  const digits = rest.slice(1);
  if (!rest.startsWith(':') || !/^[0-9]{1,5}$/.test(digits) || Number(digits) > 65535) {
    return onError(`bad port "${rest}"`);
  }
  return { host, port: Number(digits) };
}

export function formatHost(host: string): string {
  return host.includes(':') ? `[${host}]` : host;
}

export function parseUri(text: string): SipUri {
  const colon = text.indexOf(':');
  const scheme = text.slice(0, Math.max(colon, 0)).toLowerCase();
  if (scheme !== 'sip' && scheme !== 'sips' && scheme !== 'tel')
    return fail(text, 'not a sip, sips or tel URI');
  const rest = text.slice(colon + 1);
  if (scheme === 'tel') {
    const [number = '', ...segments] = rest.split(';');
    if (number === '' || !allEscapedOr(number, TEL_CHARS)) fail(text, 'bad telephone number');
    return { scheme, user: number, host: '', params: parseUriParams(text, segments), headers: new Map() };
  }
  // '@' cannot appear unescaped in a host, a parameter or a header, so the first one ends the userinfo
  // (whose user part may itself hold ';', '?' and '/').
  const at = rest.indexOf('@');
  const user = at < 0 ? undefined : rest.slice(0, at);
  if (user !== undefined && (user === '' || !allEscapedOr(user, USER_CHARS))) fail(text, 'bad user part');
  const afterUser = rest.slice(at + 1);
  const query = afterUser.indexOf('?');
  const beforeQuery = query < 0 ? afterUser : afterUser.slice(0, query);
  const [hostport = '', ...segments] = beforeQuery.split(';');
  const { host, port } = parseHostPort(hostport, (problem) => fail(text, problem));
  const uri: SipUri = {
    scheme,
    host,
    params: parseUriParams(text, segments),
    headers: query < 0 ? new Map() : parseUriHeaders(text, afterUser.slice(query + 1)),
  };
  if (user !== undefined) uri.user = user;
  if (port !== undefined) uri.port = port;
  return uri;
}

export function formatUri(uri: SipUri): string {
  let out = `${uri.scheme}:`;
  if (uri.scheme === 'tel') out += uri.user ?? '';
  else {
    if (uri.user !== undefined) out += `${uri.user}@`;
    out += formatHost(uri.host);
    if (uri.port !== undefined) out += `:${uri.port}`;
  }
  out += formatParams(uri.params);
  if (uri.headers.size > 0) {
    out += `?${[...uri.headers].map(([name, value]) => `${name}=${value}`).join('&')}`;
  }
  return out;
}

/** An absolute URI of any scheme, checked only lexically (scheme, no whitespace or `<>"`). */
export function isAbsoluteUri(text: string): boolean {
  const scheme = /^[A-Za-z][A-Za-z0-9+.-]*:/.exec(text);
  if (!scheme || scheme[0].length === text.length) return false;
  for (let i = scheme[0].length; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code <= 0x20 || code === 0x7f || code === 0x22 || code === 0x3c || code === 0x3e) return false;
  }
  return true;
}
