/**
 * SIP dialogs (RFC 3261 §12): the state two user agents share after an INVITE is answered — Call-ID,
 * both tags and URIs, both CSeq counters, the route set and the far end's target — and the in-dialog
 * requests built from it (§12.2.1.1). Pure data and functions, so every rule is tested without sockets.
 *
 * Design choices:
 * - A dialog is created only by a 2xx (caller's side) or by our own 2xx (callee's side): early dialogs
 *   from a 1xx with a To tag are not kept, since nothing we do before the answer needs one.
 * - The route set is treated as loose routes (`;lr`, RFC 3261 §16.12): every trunk we target speaks RFC
 *   3261; strict routing (RFC 2543) would move the Request-URI into the route set for no user.
 * - Where an in-dialog request goes (§8.1.2): the first route's host and port, else the remote target's.
 * - Where a response goes (§18.2.2 with RFC 3581): `responseDestination` below.
 */
import { randomBytes, randomInt } from 'node:crypto';
import { formatNameAddr, parseCSeq, parseNameAddr, type Via } from './address.js';
import { header, headers, type SipHeader } from './headers.js';
import type { SipMessage, SipRequest, SipResponse } from './message.js';
import type { Peer } from './transaction-common.js';
import type { SipTransportName } from './transport-types.js';
import { parseUri } from './uri.js';

export interface Dialog {
  callId: string;
  localTag: string;
  remoteTag: string;
  /** The From (ours) and To (theirs) name-addrs without tags, as the dialog's requests carry them. */
  localUri: string;
  remoteUri: string;
  /** The last CSeq number we sent (the next request uses one more). */
  localSeq: number;
  /** The last CSeq number the far end sent, undefined until it sends one. */
  remoteSeq: number | undefined;
  /** Route headers for our requests, in the order they are sent. */
  routeSet: string[];
  /** The far end's Contact URI: the Request-URI of our requests. */
  remoteTarget: string;
  transport: SipTransportName;
}

/** A fresh tag: 48 random bits in hex (RFC 3261 §19.3 asks for at least 32). */
export function newTag(): string {
  return randomBytes(6).toString('hex');
}

/** A fresh Call-ID, unique in space and time (§8.1.1.4). */
export function newCallId(host: string): string {
  return `${randomBytes(12).toString('base64url')}@${host.includes(':') ? 'ipv6' : host}`;
}

/** A first CSeq number for our side of a dialog: below 2^31 as §8.1.1.5 asks. */
export function initialCSeq(): number {
  return randomInt(1, 2 ** 16);
}

/** The key a request is matched to its dialog by: Call-ID, our tag, their tag. */
export function dialogKey(callId: string, localTag: string, remoteTag: string): string {
  return `${callId}\n${localTag}\n${remoteTag}`;
}

export function tagOf(nameAddr: string | undefined): string | undefined {
  if (nameAddr === undefined) return undefined;
  return parseNameAddr(nameAddr).params.get('tag') ?? undefined;
}

/** A name-addr without its tag (the dialog's URI as its requests carry it). */
function withoutTag(nameAddr: string): string {
  const parsed = parseNameAddr(nameAddr);
  parsed.params.delete('tag');
  return formatNameAddr(parsed);
}

export function cseqOf(message: SipMessage): { seq: number; method: string } {
  return parseCSeq(header(message, 'CSeq') ?? '');
}

/** The dialog key of a request we received (its To tag is ours, its From tag theirs). */
export function incomingDialogKey(request: SipRequest): string | undefined {
  const localTag = tagOf(header(request, 'To'));
  const remoteTag = tagOf(header(request, 'From'));
  const callId = header(request, 'Call-ID');
  if (localTag === undefined || callId === undefined) return undefined;
  return dialogKey(callId, localTag, remoteTag ?? '');
}

/** The caller's dialog, from the INVITE we sent and the 2xx that answered it (§12.1.2). */
export function dialogFromAnswer(
  invite: SipRequest,
  response: SipResponse,
  transport: SipTransportName,
): Dialog {
  const contact = headers(response, 'Contact')[0];
  return {
    callId: header(invite, 'Call-ID') ?? '',
    localTag: tagOf(header(invite, 'From')) ?? '',
    remoteTag: tagOf(header(response, 'To')) ?? '',
    localUri: withoutTag(header(invite, 'From') ?? ''),
    remoteUri: withoutTag(header(response, 'To') ?? ''),
    localSeq: cseqOf(invite).seq,
    remoteSeq: undefined,
    routeSet: headers(response, 'Record-Route').reverse(),
    remoteTarget: contact === undefined ? invite.uri : parseNameAddr(contact).uri,
    transport,
  };
}

/** The callee's dialog, from the INVITE we answer 2xx with our tag (§12.1.1). */
export function dialogFromInvite(invite: SipRequest, localTag: string, transport: SipTransportName): Dialog {
  const contact = headers(invite, 'Contact')[0];
  return {
    callId: header(invite, 'Call-ID') ?? '',
    localTag,
    remoteTag: tagOf(header(invite, 'From')) ?? '',
    localUri: withoutTag(header(invite, 'To') ?? ''),
    remoteUri: withoutTag(header(invite, 'From') ?? ''),
    localSeq: initialCSeq(),
    remoteSeq: cseqOf(invite).seq,
    routeSet: headers(invite, 'Record-Route'),
    remoteTarget: contact === undefined ? (header(invite, 'From') ?? '') : parseNameAddr(contact).uri,
    transport,
  };
}

export function dialogKeyOf(dialog: Dialog): string {
  return dialogKey(dialog.callId, dialog.localTag, dialog.remoteTag);
}

/**
 * Checks a request's CSeq against the dialog (§12.2.2): one lower than the last is out of order (the
 * caller answers 500); otherwise the dialog remembers it. ACK and CANCEL reuse their INVITE's number.
 */
export function acceptRemoteSeq(dialog: Dialog, request: SipRequest): boolean {
  const { seq } = cseqOf(request);
  if (request.method === 'ACK' || request.method === 'CANCEL') return true;
  if (dialog.remoteSeq !== undefined && seq <= dialog.remoteSeq) return false;
  dialog.remoteSeq = seq;
  return true;
}

export interface InDialogOptions {
  /** Our top Via (with a fresh branch). */
  via: string;
  /** Extra headers: Contact, Content-Type, Refer-To, Event, Authorization… */
  headers?: SipHeader[];
  body?: Buffer;
  /** For ACK: the INVITE's CSeq number instead of the next one. */
  cseq?: number;
  userAgent?: string;
}

/** An in-dialog request (§12.2.1.1); every method but ACK takes the next local CSeq number. */
export function inDialogRequest(dialog: Dialog, method: string, options: InDialogOptions): SipRequest {
  let seq = options.cseq;
  if (seq === undefined) {
    dialog.localSeq += 1;
    seq = dialog.localSeq;
  }
  const fields: SipHeader[] = [
    { name: 'Via', value: options.via },
    ...dialog.routeSet.map((value) => ({ name: 'Route', value })),
    { name: 'Max-Forwards', value: '70' },
    { name: 'From', value: `${dialog.localUri};tag=${dialog.localTag}` },
    { name: 'To', value: `${dialog.remoteUri};tag=${dialog.remoteTag}` },
    { name: 'Call-ID', value: dialog.callId },
    { name: 'CSeq', value: `${seq} ${method}` },
  ];
  if (options.userAgent !== undefined) fields.push({ name: 'User-Agent', value: options.userAgent });
  fields.push(...(options.headers ?? []));
  return {
    method,
    uri: dialog.remoteTarget,
    version: 'SIP/2.0',
    headers: fields,
    body: options.body ?? Buffer.alloc(0),
  };
}

/**
 * The CANCEL for an INVITE we sent (§9.1): the INVITE's Request-URI, its one top Via (same branch),
 * Route, From, To, Call-ID and CSeq number, with the method CANCEL.
 */
export function cancelFor(invite: SipRequest, userAgent?: string): SipRequest {
  const copy = (name: string) => headers(invite, name).map((value) => ({ name, value }));
  const fields: SipHeader[] = [
    { name: 'Via', value: headers(invite, 'Via')[0] ?? '' },
    ...copy('Route'),
    { name: 'Max-Forwards', value: '70' },
    ...copy('From'),
    ...copy('To'),
    ...copy('Call-ID'),
    { name: 'CSeq', value: `${cseqOf(invite).seq} CANCEL` },
  ];
  if (userAgent !== undefined) fields.push({ name: 'User-Agent', value: userAgent });
  return { method: 'CANCEL', uri: invite.uri, version: 'SIP/2.0', headers: fields, body: Buffer.alloc(0) };
}

const defaultPort = (transport: string) => (transport.toLowerCase() === 'tls' ? 5061 : 5060);

/** Host and port of a SIP URI (default port by transport), e.g. where a request to it goes. */
export function uriDestination(uri: string, transport: string): Peer {
  const parsed = parseUri(uri);
  const maddr = parsed.params.get('maddr');
  return { host: maddr ?? parsed.host, port: parsed.port ?? defaultPort(transport) };
}

/** Where an in-dialog request goes (§8.1.2 with loose routing): the first route, else the target. */
export function dialogDestination(dialog: Dialog): Peer {
  const first = dialog.routeSet[0];
  const uri = first === undefined ? dialog.remoteTarget : parseNameAddr(first).uri;
  return uriDestination(uri, dialog.transport);
}

/**
 * Where a response goes (RFC 3261 §18.2.2, RFC 3581 §4): over TCP/TLS back on the connection the
 * request came from (`source`); over UDP to `received` (else the sent-by host) at the `rport` value,
 * else at the source port when `rport` was asked for, else at the sent-by port (default 5060).
 */
export function responseDestination(via: Via, source: Peer, reliable = false): Peer {
  if (reliable) return source;
  const received = via.params.get('received') ?? undefined;
  const rport = via.params.get('rport');
  if (rport !== undefined && rport !== null && /^[0-9]+$/.test(rport)) {
    return { host: received ?? source.host, port: Number(rport) };
  }
  if (rport === null) return { host: received ?? source.host, port: source.port };
  return { host: received ?? via.host, port: via.port ?? defaultPort(via.transport) };
}
