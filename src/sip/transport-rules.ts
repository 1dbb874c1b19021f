/**
 * The rules of RFC 3261 §18 that the SIP transport applies to messages, kept pure so they are tested
 * without sockets: stamping the top Via of a received request (§18.2.1 and RFC 3581 §4), where a
 * response goes (§18.2.2 with `rport`), and the stateless `400 Bad Request` for a request that does
 * not parse but can still be answered.
 */
import { parseCSeq, parseNameAddr, parseVia, withViaParams } from './address.js';
import { canonicalHeaderName, header, headers } from './headers.js';
import { readMessageHead, type SipMessage, type SipRequest, type SipResponse } from './message.js';
import { buildResponse } from './response.js';
import { type Params, SipParseError, splitList } from './syntax.js';
import { newBranch, type Peer, topVia } from './transaction-common.js';
import type { SipTransportName } from './transport-types.js';

/** The port a sent-by without one means (RFC 3261 §18.2.2, §19.1.2). */
export function defaultPort(transport: SipTransportName): number {
  return transport === 'tls' ? 5061 : 5060;
}

/**
 * Where a response goes (RFC 3261 §18.2.2, RFC 3581 §4): the top Via's `received` address (else its
 * sent-by host) and its `rport` (else the sent-by port, else the transport's default port), over the
 * transport the request came on. Over TCP/TLS the transport finds the request's connection by it.
 */
export function responseDestination(response: SipMessage, transport: SipTransportName): Peer {
  const via = topVia(response);
  const received = via.params.get('received');
  const rport = via.params.get('rport');
  const host = received ? received : via.host;
  const port =
    rport && /^[0-9]{1,5}$/.test(rport) && Number(rport) > 0 && Number(rport) <= 65535
      ? Number(rport)
      : (via.port ?? defaultPort(transport));
  return { host, port };
}

/**
 * The request with its top Via stamped for the source it came from (RFC 3261 §18.2.1, RFC 3581 §4).
 * `received` goes just before `rport` when there is one (as RFC 3581's example writes it), else last.
 */
export function stampVia(request: SipRequest, source: Peer): SipRequest {
  const index = request.headers.findIndex((field) => canonicalHeaderName(field.name) === 'Via');
  const field = request.headers[index];
  if (field === undefined) return request;
  const [top = '', ...rest] = splitList(field.value);
  const via = parseVia(top);
  const wantsRport = via.params.has('rport') && via.params.get('rport') === null;
  if (!wantsRport && sameHost(via.host, source.host)) return request;
  const params: Params = new Map();
  for (const [name, value] of via.params) {
    if (name === 'received') continue;
    if (name === 'rport') {
      params.set('received', source.host);
      params.set('rport', value ?? String(source.port));
    } else {
      params.set(name, value);
    }
  }
  if (!params.has('received')) params.set('received', source.host);
  const value = [withViaParams(top, params), ...rest].join(', ');
  const fields = request.headers.map((old, at) => (at === index ? { name: old.name, value } : old));
  return { ...request, headers: fields };
}

function sameHost(viaHost: string, source: string): boolean {
  return viaHost.toLowerCase() === source.toLowerCase();
}

const REQUEST_LINE = /^[!%'*+\-.0-9A-Z_`a-z~]+ [^ ]+ SIP\/[0-9]+\.[0-9]+$/i;

/**
 * The stateless `400 Bad Request` for bytes that did not parse, when they are a request whose first
 * line and Via, From, To, Call-ID and CSeq can be read (never for an ACK, which gets no response),
 * with its top Via stamped for `source`; undefined when no answer can be built.
 */
export function badRequestFor(bytes: Buffer, source: Peer): SipResponse | undefined {
  try {
    let start = 0;
    while (bytes[start] === 0x0d || bytes[start] === 0x0a) start++;
    const lineEnd = bytes.indexOf(0x0a, start);
    const line = bytes.toString('utf8', start, lineEnd < 0 ? bytes.length : lineEnd).replace(/\r$/, '');
    if (!REQUEST_LINE.test(line)) return undefined;
    const method = line.slice(0, line.indexOf(' '));
    if (method.toUpperCase() === 'ACK') return undefined;
    const head = { headers: readMessageHead(bytes, start).headers };
    const [firstVia] = headers(head, 'Via');
    const [from, to, callId, cseq] = ['From', 'To', 'Call-ID', 'CSeq'].map((name) => header(head, name));
    if (firstVia === undefined || from === undefined || to === undefined || cseq === undefined)
      return undefined;
    if (callId === undefined || callId === '') return undefined;
    parseVia(firstVia);
    parseNameAddr(from);
    parseNameAddr(to);
    parseCSeq(cseq);
    const request: SipRequest = {
      method,
      uri: 'sip:invalid',
      version: 'SIP/2.0',
      ...head,
      body: Buffer.alloc(0),
    };
    return buildResponse(stampVia(request, source), 400, { toTag: newBranch().slice(7) });
  } catch (error) {
    if (error instanceof SipParseError || error instanceof RangeError) return undefined;
    throw error;
  }
}
