/**
 * SIP messages for the parser's tests: real-looking traffic between Switchboard and a trunk (written
 * for these tests; addresses from the documentation ranges), and RFC 4475 torture messages retyped
 * from the RFC, each citing its section. `sip(lines, body)` joins lines with CRLF and ends the head.
 */

/** A message from its head lines and body; Content-Length is written only when the lines say so. */
export function sip(lines: string[], body = ''): Buffer {
  return Buffer.from(`${lines.join('\r\n')}\r\n\r\n${body}`, 'utf8');
}

const SDP_OFFER = [
  'v=0',
  'o=switchboard 8301 1 IN IP4 203.0.113.10',
  's=-',
  'c=IN IP4 203.0.113.10',
  't=0 0',
  'm=audio 40002 RTP/AVP 0 8 101',
  'a=rtpmap:0 PCMU/8000',
  'a=rtpmap:8 PCMA/8000',
  'a=rtpmap:101 telephone-event/8000',
  'a=fmtp:101 0-15',
  'a=ptime:20',
  'a=sendrecv',
  '',
].join('\r\n');

export const SDP_BODY = SDP_OFFER;

export const INVITE = sip(
  [
    'INVITE sip:+15557654321@trunk.example.com SIP/2.0',
    'Via: SIP/2.0/UDP 203.0.113.10:5060;branch=z9hG4bK776asdhds;rport',
    'Max-Forwards: 70',
    'To: <sip:+15557654321@trunk.example.com>',
    'From: "Switchboard" <sip:+15551230000@203.0.113.10>;tag=1928301774',
    'Call-ID: a84b4c76e66710@203.0.113.10',
    'CSeq: 314159 INVITE',
    'Contact: <sip:switchboard@203.0.113.10:5060;transport=udp>',
    'Allow: INVITE, ACK, CANCEL, BYE, OPTIONS, REFER, NOTIFY',
    'Supported: timer, replaces',
    'User-Agent: Switchboard/0.1',
    'Content-Type: application/sdp',
    `Content-Length: ${Buffer.byteLength(SDP_OFFER)}`,
  ],
  SDP_OFFER,
);

const SDP_ANSWER = SDP_OFFER.replace('switchboard 8301', 'trunk 77').replaceAll(
  '203.0.113.10',
  '198.51.100.7',
);

export const OK_WITH_SDP = sip(
  [
    'SIP/2.0 200 OK',
    'Via: SIP/2.0/UDP 203.0.113.10:5060;branch=z9hG4bK776asdhds;rport=5060;received=203.0.113.10',
    'Record-Route: <sip:198.51.100.1;lr>',
    'To: <sip:+15557654321@trunk.example.com>;tag=a6c85cf',
    'From: "Switchboard" <sip:+15551230000@203.0.113.10>;tag=1928301774',
    'Call-ID: a84b4c76e66710@203.0.113.10',
    'CSeq: 314159 INVITE',
    'Contact: <sip:trunk@198.51.100.7:5060>',
    'Content-Type: application/sdp',
    `Content-Length: ${Buffer.byteLength(SDP_ANSWER)}`,
  ],
  SDP_ANSWER,
);

export const UNAUTHORIZED = sip([
  'SIP/2.0 401 Unauthorized',
  'Via: SIP/2.0/UDP 203.0.113.10:5060;branch=z9hG4bKnashds7;rport=5060',
  'From: <sip:alice@trunk.example.com>;tag=5fxced76sl',
  'To: <sip:alice@trunk.example.com>;tag=3f4b1',
  'Call-ID: reg-1j9FpLxk3uxtm8tn@203.0.113.10',
  'CSeq: 1 REGISTER',
  'WWW-Authenticate: Digest realm="trunk.example.com", nonce="ea9c8e88df84f1cec4341ae6cbe5a359", algorithm=SHA-256, qop="auth"',
  'WWW-Authenticate: Digest realm="trunk.example.com", nonce="ea9c8e88df84f1cec4341ae6cbe5a359", algorithm=MD5, qop="auth", opaque="5ccc069c403ebaf9f0171e9517f40e41"',
  'Content-Length: 0',
]);

export const REGISTER = sip([
  'REGISTER sip:trunk.example.com SIP/2.0',
  'Via: SIP/2.0/TCP 203.0.113.10:5060;branch=z9hG4bKnashds7',
  'Max-Forwards: 70',
  'To: <sip:alice@trunk.example.com>',
  'From: <sip:alice@trunk.example.com>;tag=5fxced76sl',
  'Call-ID: reg-1j9FpLxk3uxtm8tn@203.0.113.10',
  'CSeq: 2 REGISTER',
  'Contact: <sip:alice@203.0.113.10:5060;transport=tcp>;expires=3600;+sip.instance="<urn:uuid:00000000-0000-1000-8000-000A95A0E128>"',
  'Authorization: Digest username="alice", realm="trunk.example.com", nonce="ea9c8e88df84f1cec4341ae6cbe5a359", uri="sip:trunk.example.com", response="dfe56131d1958046689d83306477ecc", algorithm=MD5',
  'Expires: 3600',
  'Content-Length: 0',
]);

export const BYE = sip([
  'BYE sip:trunk@198.51.100.7:5060 SIP/2.0',
  'Via: SIP/2.0/UDP 203.0.113.10:5060;branch=z9hG4bKnashds10',
  'Max-Forwards: 70',
  'Route: <sip:198.51.100.1;lr>',
  'From: "Switchboard" <sip:+15551230000@203.0.113.10>;tag=1928301774',
  'To: <sip:+15557654321@trunk.example.com>;tag=a6c85cf',
  'Call-ID: a84b4c76e66710@203.0.113.10',
  'CSeq: 314160 BYE',
  'Content-Length: 0',
]);

export const CANCEL = sip([
  'CANCEL sip:+15557654321@trunk.example.com SIP/2.0',
  'Via: SIP/2.0/UDP 203.0.113.10:5060;branch=z9hG4bK776asdhds;rport',
  'Max-Forwards: 70',
  'To: <sip:+15557654321@trunk.example.com>',
  'From: "Switchboard" <sip:+15551230000@203.0.113.10>;tag=1928301774',
  'Call-ID: a84b4c76e66710@203.0.113.10',
  'CSeq: 314159 CANCEL',
  'Content-Length: 0',
]);

export const ACK = sip([
  'ACK sip:trunk@198.51.100.7:5060 SIP/2.0',
  'Via: SIP/2.0/UDP 203.0.113.10:5060;branch=z9hG4bKnashds9',
  'Max-Forwards: 70',
  'Route: <sip:198.51.100.1;lr>',
  'From: "Switchboard" <sip:+15551230000@203.0.113.10>;tag=1928301774',
  'To: <sip:+15557654321@trunk.example.com>;tag=a6c85cf',
  'Call-ID: a84b4c76e66710@203.0.113.10',
  'CSeq: 314159 ACK',
  'Content-Length: 0',
]);

export const OPTIONS = sip([
  'OPTIONS sip:trunk.example.com SIP/2.0',
  'Via: SIP/2.0/UDP 203.0.113.10:5060;branch=z9hG4bKhjhs8ass877',
  'Max-Forwards: 70',
  'To: <sip:trunk.example.com>',
  'From: <sip:switchboard@203.0.113.10>;tag=1928301774',
  'Call-ID: opt-a84b4c76e66710',
  'CSeq: 63104 OPTIONS',
  'Accept: application/sdp',
  'Content-Length: 0',
]);

const SIPFRAG = 'SIP/2.0 200 OK\r\n';

export const NOTIFY = sip(
  [
    'NOTIFY sip:switchboard@203.0.113.10:5060 SIP/2.0',
    'Via: SIP/2.0/UDP 198.51.100.7:5060;branch=z9hG4bK9922ef992-25',
    'Max-Forwards: 70',
    'To: <sip:+15551230000@203.0.113.10>;tag=1928301774',
    'From: <sip:+15557654321@trunk.example.com>;tag=a6c85cf',
    'Call-ID: a84b4c76e66710@203.0.113.10',
    'CSeq: 1993402 NOTIFY',
    'Event: refer;id=314161',
    'Subscription-State: terminated;reason=noresource',
    'Content-Type: message/sipfrag;version=2.0',
    `Content-Length: ${SIPFRAG.length}`,
  ],
  SIPFRAG,
);

/** Compact names, a folded Contact, and Vias both in one field and across fields, IPv6 included. */
export const COMPACT_FOLDED_IPV6 = sip(
  [
    'INVITE sip:bob@[2001:db8::10]:5070;transport=tcp SIP/2.0',
    'v: SIP/2.0/TCP [2001:db8::1]:5060;branch=z9hG4bKa1, SIP/2.0/UDP 192.0.2.4;branch=z9hG4bKa2',
    'V: SIP/2.0/UDP proxy.example.com:5080;branch=z9hG4bKa3;received=2001:db8::9',
    'f: Alice <sip:alice@[2001:db8::1]>;tag=88sja8x',
    't: <sip:bob@[2001:db8::10]:5070>',
    'i: 7af5a2e9-6c1d@2001:db8::1',
    'CSEQ: 1 INVITE',
    'm: "Alice, at home"',
    '   <sip:alice@[2001:db8::1]:5060;transport=tcp>',
    '   ;expires=60',
    's: Folded',
    '\tsubject line',
    'k: 100rel',
    'c: application/sdp',
    `l: ${Buffer.byteLength(SDP_OFFER)}`,
  ],
  SDP_OFFER,
);
