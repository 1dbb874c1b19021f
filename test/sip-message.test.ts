/**
 * The SIP message layer (src/sip): parsing real-looking trunk traffic, header lookups with compact
 * names and list splitting, the structured values (URI, name-addr, Via, CSeq, parameters), the
 * serializer and the response builder. RFC 4475 torture cases, round-trip properties and the fuzzer
 * are in sip-message-torture.test.ts.
 */
import { describe, expect, it } from 'vitest';
import {
  formatCSeq,
  formatNameAddr,
  formatVia,
  parseCSeq,
  parseNameAddr,
  parseVia,
} from '../src/sip/address.js';
import { canonicalHeaderName, header, headers } from '../src/sip/headers.js';
import {
  isRequest,
  parseMessage,
  SIP_MAX_HEADERS,
  SIP_MAX_MESSAGE_BYTES,
  type SipRequest,
  type SipResponse,
  serializeMessage,
} from '../src/sip/message.js';
import { buildResponse, reasonPhrase, toTagOf } from '../src/sip/response.js';
import { parseParams, SipParseError, splitList, unquote } from '../src/sip/syntax.js';
import { formatUri, parseUri } from '../src/sip/uri.js';
import {
  ACK,
  BYE,
  CANCEL,
  COMPACT_FOLDED_IPV6,
  INVITE,
  NOTIFY,
  OK_WITH_SDP,
  OPTIONS,
  REGISTER,
  SDP_BODY,
  sip,
  UNAUTHORIZED,
} from './support/sip-messages.js';

const request = (bytes: Buffer) => parseMessage(bytes) as SipRequest;
const response = (bytes: Buffer) => parseMessage(bytes) as SipResponse;

function refusal(action: () => unknown): SipParseError {
  try {
    action();
  } catch (error) {
    expect(error).toBeInstanceOf(SipParseError);
    return error as SipParseError;
  }
  throw new Error('expected a SipParseError');
}

describe('parsing trunk traffic', () => {
  it('reads an INVITE with an SDP body', () => {
    const invite = request(INVITE);
    expect(isRequest(invite)).toBe(true);
    expect(invite).toMatchObject({
      method: 'INVITE',
      uri: 'sip:+15557654321@trunk.example.com',
      version: 'SIP/2.0',
    });
    expect(invite.body.toString()).toBe(SDP_BODY);
    expect(header(invite, 'content-type')).toBe('application/sdp');
    expect(header(invite, 'i')).toBe('a84b4c76e66710@203.0.113.10');
    expect(headers(invite, 'Allow')).toEqual([
      'INVITE',
      'ACK',
      'CANCEL',
      'BYE',
      'OPTIONS',
      'REFER',
      'NOTIFY',
    ]);
    expect(headers(invite, 'k')).toEqual(['timer', 'replaces']);
    const via = parseVia(header(invite, 'Via')!);
    expect(via).toEqual({
      transport: 'UDP',
      host: '203.0.113.10',
      port: 5060,
      params: new Map([
        ['branch', 'z9hG4bK776asdhds'],
        ['rport', null],
      ]),
    });
    const from = parseNameAddr(header(invite, 'From')!);
    expect(from).toMatchObject({ displayName: 'Switchboard', uri: 'sip:+15551230000@203.0.113.10' });
    expect(from.params.get('tag')).toBe('1928301774');
    expect(parseCSeq(header(invite, 'CSeq')!)).toEqual({ seq: 314159, method: 'INVITE' });
    expect(parseUri(parseNameAddr(header(invite, 'm')!).uri).params.get('transport')).toBe('udp');
  });

  it('reads a 200 OK with rport, received, Record-Route and a To tag', () => {
    const ok = response(OK_WITH_SDP);
    expect(isRequest(ok)).toBe(false);
    expect(ok).toMatchObject({ version: 'SIP/2.0', status: 200, reason: 'OK' });
    const via = parseVia(header(ok, 'Via')!);
    expect(via.params.get('rport')).toBe('5060');
    expect(via.params.get('received')).toBe('203.0.113.10');
    expect(toTagOf(ok)).toBe('a6c85cf');
    expect(parseUri(parseNameAddr(header(ok, 'Record-Route')!).uri).params.get('lr')).toBeNull();
    expect(ok.body.toString()).toContain('c=IN IP4 198.51.100.7');
  });

  it('keeps each WWW-Authenticate of a 401 whole, commas and all', () => {
    const challenge = response(UNAUTHORIZED);
    expect(challenge.status).toBe(401);
    const values = headers(challenge, 'www-authenticate');
    expect(values).toHaveLength(2);
    expect(values[1]).toContain('opaque="5ccc069c403ebaf9f0171e9517f40e41"');
    expect(challenge.body.length).toBe(0);
  });

  it('reads a REGISTER whose Contact has a quoted parameter holding <>', () => {
    const register = request(REGISTER);
    const contacts = headers(register, 'Contact');
    expect(contacts).toHaveLength(1);
    const contact = parseNameAddr(contacts[0]!);
    expect(contact.params.get('expires')).toBe('3600');
    expect(unquote(contact.params.get('+sip.instance')!)).toBe(
      '<urn:uuid:00000000-0000-1000-8000-000A95A0E128>',
    );
    expect(headers(register, 'Authorization')).toHaveLength(1);
    expect(parseVia(header(register, 'v')!).transport).toBe('TCP');
  });

  it('reads BYE, CANCEL, ACK and OPTIONS', () => {
    for (const [bytes, method] of [
      [BYE, 'BYE'],
      [CANCEL, 'CANCEL'],
      [ACK, 'ACK'],
      [OPTIONS, 'OPTIONS'],
    ] as const) {
      const message = request(bytes);
      expect(message.method).toBe(method);
      expect(parseCSeq(header(message, 'CSeq')!).method).toBe(method);
    }
    expect(parseVia(header(request(CANCEL), 'Via')!).params.get('branch')).toBe(
      parseVia(header(request(INVITE), 'Via')!).params.get('branch'),
    );
    expect(parseNameAddr(header(request(BYE), 'Route')!).uri).toBe('sip:198.51.100.1;lr');
  });

  it('reads a NOTIFY carrying message/sipfrag', () => {
    const notify = request(NOTIFY);
    expect(notify.body.toString()).toBe('SIP/2.0 200 OK\r\n');
    const [type, ...rest] = header(notify, 'c')!.split(';');
    expect(type).toBe('message/sipfrag');
    expect(parseParams(`;${rest.join(';')}`).get('version')).toBe('2.0');
    expect(header(notify, 'o')).toBe('refer;id=314161');
    expect(parseParams(';reason=noresource').get('reason')).toBe('noresource');
  });

  it('expands compact names, unfolds lines and reads IPv6 hosts and Vias in and across fields', () => {
    const invite = request(COMPACT_FOLDED_IPV6);
    expect(invite.headers.map((field) => field.name)).toEqual([
      'Via',
      'Via',
      'From',
      'To',
      'Call-ID',
      'CSeq',
      'Contact',
      'Subject',
      'Supported',
      'Content-Type',
      'Content-Length',
    ]);
    const vias = headers(invite, 'via').map(parseVia);
    expect(vias.map((via) => [via.transport, via.host, via.port])).toEqual([
      ['TCP', '2001:db8::1', 5060],
      ['UDP', '192.0.2.4', undefined],
      ['UDP', 'proxy.example.com', 5080],
    ]);
    expect(vias[2]!.params.get('received')).toBe('2001:db8::9');
    const contact = parseNameAddr(header(invite, 'Contact')!);
    expect(contact).toMatchObject({
      displayName: 'Alice, at home',
      uri: 'sip:alice@[2001:db8::1]:5060;transport=tcp',
    });
    expect(contact.params.get('expires')).toBe('60');
    expect(header(invite, 'Subject')).toBe('Folded subject line');
    const target = parseUri(invite.uri);
    expect(target).toMatchObject({ user: 'bob', host: '2001:db8::10', port: 5070 });
    expect(parseVia(formatVia(vias[0]!))).toEqual(vias[0]);
  });

  it('tolerates bare LF line ends and CRLFs before the start line', () => {
    const withLf = Buffer.from(BYE.toString().replaceAll('\r\n', '\n'));
    expect(parseMessage(withLf)).toEqual(parseMessage(BYE));
    expect(parseMessage(Buffer.concat([Buffer.from('\r\n\r\n'), BYE]))).toEqual(parseMessage(BYE));
    const oddReason = Buffer.from(OK_WITH_SDP.toString().replace('200 OK', '200 O\u2028K\u00a0\t'));
    expect(response(oddReason).reason).toBe('O\u2028K\u00a0\t');
  });

  it('takes the body per Content-Length: extra octets dropped, missing ones refused, none means all', () => {
    expect(parseMessage(Buffer.concat([INVITE, Buffer.from('garbage')])).body.toString()).toBe(SDP_BODY);
    expect(refusal(() => parseMessage(INVITE.subarray(0, INVITE.length - 1))).reason).toBe('body-truncated');
    const withoutLength = Buffer.from(BYE.toString().replace('Content-Length: 0\r\n', ''));
    expect(parseMessage(Buffer.concat([withoutLength, Buffer.from('tail')])).body.toString()).toBe('tail');
  });

  it('refuses what is over the size and header limits, and empty input', () => {
    const big = Buffer.concat([BYE, Buffer.alloc(SIP_MAX_MESSAGE_BYTES - BYE.length + 1, 0x61)]);
    expect(refusal(() => parseMessage(big)).reason).toBe('too-large');
    expect(parseMessage(big.subarray(0, SIP_MAX_MESSAGE_BYTES)).body.length).toBe(0);
    const lines = BYE.toString().split('\r\n');
    const extra = Array.from({ length: SIP_MAX_HEADERS }, (_, i) => `X-Filler-${i}: ${i}`);
    const crowded = Buffer.from([lines[0], ...extra, ...lines.slice(1)].join('\r\n'));
    expect(refusal(() => parseMessage(crowded)).reason).toBe('too-many-headers');
    expect(refusal(() => parseMessage(Buffer.from('\r\n\r\n'))).reason).toBe('no-message');
    expect(refusal(() => parseMessage(Buffer.alloc(0))).reason).toBe('no-message');
  });

  it('refuses malformed heads with a reason', () => {
    const bye = BYE.toString();
    const cases: [string, string][] = [
      [bye.replace('Via:', 'Via'), 'bad-header-line'],
      [bye.replace('Max-Forwards: 70', 'Max Forwards: 70'), 'bad-header-line'],
      [` ${bye}`, 'bad-start-line'],
      [bye.replace('\r\n\r\n', '\r\n'), 'no-header-end'],
      [bye.replace('Max-Forwards: 70', 'Max-Forwards: 7\r0'), 'bad-header-line'],
      [`\r\n continued\r\n${bye}`, 'bad-start-line'],
      [bye.replace('BYE sip', 'BYE\tsip'), 'bad-start-line'],
      [bye.replace('SIP/2.0\r\n', 'HTTP/1.1\r\n'), 'bad-start-line'],
      [bye.replace('CSeq: 314160 BYE', 'CSeq: 314160 INVITE'), 'cseq-method-mismatch'],
      [bye.replace(/Via: .*\r\n/, ''), 'missing-header'],
      [bye.replace('Call-ID: a84b4c76e66710@203.0.113.10', 'Call-ID: a84b 4c76'), 'bad-call-id'],
      [bye.replace('Content-Length: 0', 'Content-Length: 0x10'), 'bad-content-length'],
      [bye.replace('Route: <sip:198.51.100.1;lr>', 'Contact: <sip:a@b>;;'), 'bad-name-addr'],
      [bye.replace('SIP/2.0\r\n', 'SIP/2.0\r\n folded: 1\r\n'), 'bad-header-line'],
    ];
    for (const [text, reason] of cases)
      expect(refusal(() => parseMessage(Buffer.from(text))).reason, text).toBe(reason);
  });
});

describe('header lookups', () => {
  it('expands every compact form to its long name and spells known names canonically', () => {
    const compact = Object.fromEntries(
      [...'iftvmlckseorbx'].map((letter) => [letter, canonicalHeaderName(letter)]),
    );
    expect(compact).toEqual({
      i: 'Call-ID',
      f: 'From',
      t: 'To',
      v: 'Via',
      m: 'Contact',
      l: 'Content-Length',
      c: 'Content-Type',
      k: 'Supported',
      s: 'Subject',
      e: 'Content-Encoding',
      o: 'Event',
      r: 'Refer-To',
      b: 'Referred-By',
      x: 'Session-Expires',
    });
    expect(['CALL-ID', 'cseq', 'www-authenticate', 'V'].map(canonicalHeaderName)).toEqual([
      'Call-ID',
      'CSeq',
      'WWW-Authenticate',
      'Via',
    ]);
    expect(canonicalHeaderName('x-Custom')).toBe('x-Custom');
    const inherited = ['constructor', '__proto__', 'toString'];
    const odd = parseMessage(
      sip([...BYE.toString().split('\r\n').slice(0, 9), ...inherited.map((name) => `${name}: 1`)]),
    );
    expect(inherited.map((name) => header(odd, name))).toEqual(['1', '1', '1']);
  });

  it('splits list values at commas outside quotes and brackets, and never splits other headers', () => {
    const message = {
      headers: [
        { name: 'Contact', value: '"Doe, John" <sip:jd@example.com;x=a,b>;q="0,5", <sip:c@example.com>' },
        { name: 'm', value: '*' },
        { name: 'Date', value: 'Sat, 13 Nov 2010 23:29:00 GMT' },
        { name: 'X-Thing', value: 'a, b' },
      ],
    };
    expect(headers(message, 'contact')).toEqual([
      '"Doe, John" <sip:jd@example.com;x=a,b>;q="0,5"',
      '<sip:c@example.com>',
      '*',
    ]);
    expect(headers(message, 'Date')).toEqual(['Sat, 13 Nov 2010 23:29:00 GMT']);
    expect(headers(message, 'x-thing')).toEqual(['a, b']);
    expect(header(message, 'DATE')).toBe('Sat, 13 Nov 2010 23:29:00 GMT');
    expect(header(message, 'Via')).toBeUndefined();
    expect(splitList(' a ,, b,"c\\",d",')).toEqual(['a', 'b', '"c\\",d"']);
  });
});

describe('structured values', () => {
  it('parses and formats SIP, SIPS and tel URIs', () => {
    expect(parseUri('sip:alice@[2001:db8::1]:5070;transport=TCP;lr?subject=hi&priority=urgent')).toEqual({
      scheme: 'sip',
      user: 'alice',
      host: '2001:db8::1',
      port: 5070,
      params: new Map([
        ['transport', 'TCP'],
        ['lr', null],
      ]),
      headers: new Map([
        ['subject', 'hi'],
        ['priority', 'urgent'],
      ]),
    });
    expect(parseUri('SIPS:trunk.example.com')).toMatchObject({ scheme: 'sips', host: 'trunk.example.com' });
    expect(parseUri('sip:+1555;npdi@203.0.113.7:5060;user=phone')).toMatchObject({
      user: '+1555;npdi',
      port: 5060,
    });
    expect(parseUri('tel:+1-201-555-0123;phone-context=example.com')).toMatchObject({
      scheme: 'tel',
      user: '+1-201-555-0123',
      host: '',
    });
    expect(parseUri('sip:alice:secret@example.com').user).toBe('alice:secret');
    for (const text of [
      'sip:alice@[2001:db8::1]:5070;transport=tcp;lr?subject=hi',
      'sips:%61lice@example.com',
      'sip:203.0.113.7',
      'tel:+15551234567;ext=12',
    ]) {
      expect(formatUri(parseUri(text))).toBe(text);
    }
  });

  it('refuses malformed URIs', () => {
    for (const text of [
      'http://example.com',
      'sip:',
      'sip:@example.com',
      'sip:alice@',
      'sip:alice@example.com:70000',
      'sip:alice@example.com:50a',
      'sip:alice@[2001:db8::1',
      'sip:alice@[example.com]',
      'sip:al%zzce@example.com',
      'sip:alice@exa mple.com',
      'sip:alice@example.com;=x',
      'sip:alice@example.com;a=',
      'sip:alice@example.com?novalue',
      'tel:',
    ]) {
      expect(refusal(() => parseUri(text)).reason, text).toBe('bad-uri');
    }
  });

  it('parses name-addr and addr-spec forms, and formats them back', () => {
    expect(parseNameAddr('"A \\"quoted\\" name" <sip:a@example.com>;tag=9')).toEqual({
      displayName: 'A "quoted" name',
      uri: 'sip:a@example.com',
      params: new Map([['tag', '9']]),
    });
    expect(parseNameAddr('Two  Words<sips:b@example.com>').displayName).toBe('Two Words');
    expect(parseNameAddr('"" <sip:c@example.com>').displayName).toBe('');
    expect(parseNameAddr('<urn:service:sos>')).toEqual({ uri: 'urn:service:sos', params: new Map() });
    expect(parseNameAddr('sip:d@example.com;user=phone ; tag = x1')).toEqual({
      uri: 'sip:d@example.com',
      params: new Map([
        ['user', 'phone'],
        ['tag', 'x1'],
      ]),
    });
    const address = parseNameAddr('Bob <sip:bob@example.com;transport=tcp>;tag=a;+sip.instance="<urn:x>"');
    expect(parseNameAddr(formatNameAddr(address))).toEqual(address);
    expect(formatNameAddr(address)).toBe(
      '"Bob" <sip:bob@example.com;transport=tcp>;tag=a;+sip.instance="<urn:x>"',
    );
  });

  it('refuses malformed addresses', () => {
    for (const text of [
      '',
      '"unterminated <sip:a@example.com>',
      '< sip:a@example.com>',
      '<sip:a@example.com',
      'Bell, Alexander <sip:a@example.com>',
      'sip:a@example.com?Route=x',
      '<sip:a@example.com> trailing',
      '"name" sip:a@example.com',
      '<not a uri>',
    ]) {
      expect(refusal(() => parseNameAddr(text)).reason, text).toBe('bad-name-addr');
    }
    expect(refusal(() => parseNameAddr('<sip:a@example.com>;tag=')).reason).toBe('bad-name-addr');
  });

  it('parses Via with whitespace wherever the grammar allows it', () => {
    expect(
      parseVia('SIP  /  2.0  / udp  192.0.2.1 : 5062 ; branch = z9hG4bKx ; rport ; received=192.0.2.9'),
    ).toEqual({
      transport: 'UDP',
      host: '192.0.2.1',
      port: 5062,
      params: new Map([
        ['branch', 'z9hG4bKx'],
        ['rport', null],
        ['received', '192.0.2.9'],
      ]),
    });
    expect(parseVia('SIP/2.0/WSS [::1];branch=z9hG4bK1')).toMatchObject({ transport: 'WSS', host: '::1' });
    for (const text of [
      '',
      'SIP/2.0/UDP',
      'SIP/2.0/UDP ',
      'HTTP/1.1/TCP host',
      'SIP/two/UDP host',
      'SIP/2.0/UDPhost',
      'SIP/2.0/UDP host:99999',
      'SIP/2.0/UDP [::1',
      'SIP/2.0/UDP host;;',
      'SIP/2.0/UDP host extra',
    ]) {
      expect(refusal(() => parseVia(text)).reason, text).toBe('bad-via');
    }
    expect(parseVia('SIP/2.0/UDP host;branch').params.get('branch')).toBeNull();
  });

  it('parses CSeq within 32 bits', () => {
    expect(parseCSeq('0009  INVITE')).toEqual({ seq: 9, method: 'INVITE' });
    expect(formatCSeq(parseCSeq('0009  INVITE'))).toBe('9 INVITE');
    expect(parseCSeq(`${2 ** 32 - 1} BYE`)).toEqual({ seq: 2 ** 32 - 1, method: 'BYE' });
    for (const text of [
      '',
      'INVITE',
      '1',
      '1INVITE',
      `${2 ** 32} BYE`,
      '-1 BYE',
      '1 INVITE extra',
      '1 IN/VITE',
    ]) {
      expect(refusal(() => parseCSeq(text)).reason, text).toBe('bad-cseq');
    }
  });

  it('parses parameters: flags, quoted values with separators inside, whitespace', () => {
    expect(parseParams(' ; a = 1 ;flag; q="x;y, z" ;A=2')).toEqual(
      new Map([
        ['a', '1'],
        ['flag', null],
        ['q', '"x;y, z"'],
      ]),
    );
    for (const text of [';', ';;', ';a=', ';a="open', 'a=1', ';a=1 b']) {
      expect(refusal(() => parseParams(text)).reason, text).toBe('bad-params');
    }
  });
});

describe('serializeMessage', () => {
  it('writes CRLF, canonical names and a Content-Length matching the body, in place', () => {
    const message: SipRequest = {
      method: 'MESSAGE',
      uri: 'sip:bob@example.com',
      version: 'SIP/2.0',
      headers: [
        { name: 'v', value: 'SIP/2.0/UDP 192.0.2.1;branch=z9hG4bK1' },
        { name: 'l', value: '999' },
        { name: 'f', value: '<sip:a@example.com>;tag=1' },
        { name: 't', value: '<sip:bob@example.com>' },
        { name: 'i', value: 'm1' },
        { name: 'cseq', value: '1 MESSAGE' },
        { name: 'Content-Length', value: '5' },
      ],
      body: Buffer.from('héllo'),
    };
    expect(serializeMessage(message).toString()).toBe(
      [
        'MESSAGE sip:bob@example.com SIP/2.0',
        'Via: SIP/2.0/UDP 192.0.2.1;branch=z9hG4bK1',
        'Content-Length: 6',
        'From: <sip:a@example.com>;tag=1',
        'To: <sip:bob@example.com>',
        'Call-ID: m1',
        'CSeq: 1 MESSAGE',
        '',
        'héllo',
      ].join('\r\n'),
    );
  });

  it('refuses header injection and impossible start lines', () => {
    const base = request(BYE);
    expect(() => serializeMessage({ ...base, headers: [{ name: 'X-A', value: 'x\r\nVia: evil' }] })).toThrow(
      RangeError,
    );
    expect(() => serializeMessage({ ...base, headers: [{ name: 'X A', value: 'x' }] })).toThrow(RangeError);
    expect(() => serializeMessage({ ...base, uri: 'sip:a b' })).toThrow(RangeError);
    expect(() => serializeMessage({ ...base, method: 'BY E' })).toThrow(RangeError);
    expect(() => serializeMessage({ ...base, version: 'SIP/2.0\r\nX-Evil: 1' })).toThrow(RangeError);
    const ok = response(OK_WITH_SDP);
    expect(() => serializeMessage({ ...ok, status: 700 })).toThrow(RangeError);
    expect(() => serializeMessage({ ...ok, reason: 'OK\nX: y' })).toThrow(RangeError);
  });

  it('gives back what it parsed, for every fixture', () => {
    for (const bytes of [
      INVITE,
      OK_WITH_SDP,
      UNAUTHORIZED,
      REGISTER,
      BYE,
      CANCEL,
      ACK,
      OPTIONS,
      NOTIFY,
      COMPACT_FOLDED_IPV6,
    ]) {
      const parsed = parseMessage(bytes);
      expect(parseMessage(serializeMessage(parsed))).toEqual(parsed);
    }
  });
});

describe('buildResponse', () => {
  it('copies Via, From, To, Call-ID and CSeq and adds the To tag (RFC 3261 §8.2.6)', () => {
    const invite = request(COMPACT_FOLDED_IPV6);
    const ringing = buildResponse(invite, 180, {
      toTag: 'b7c9',
      headers: [{ name: 'Contact', value: '<sip:switchboard@203.0.113.10>' }],
    });
    expect(ringing).toMatchObject({ version: 'SIP/2.0', status: 180, reason: 'Ringing' });
    expect(ringing.headers).toEqual([
      {
        name: 'Via',
        value: 'SIP/2.0/TCP [2001:db8::1]:5060;branch=z9hG4bKa1, SIP/2.0/UDP 192.0.2.4;branch=z9hG4bKa2',
      },
      { name: 'Via', value: 'SIP/2.0/UDP proxy.example.com:5080;branch=z9hG4bKa3;received=2001:db8::9' },
      { name: 'From', value: 'Alice <sip:alice@[2001:db8::1]>;tag=88sja8x' },
      { name: 'To', value: '<sip:bob@[2001:db8::10]:5070>;tag=b7c9' },
      { name: 'Call-ID', value: '7af5a2e9-6c1d@2001:db8::1' },
      { name: 'CSeq', value: '1 INVITE' },
      { name: 'Contact', value: '<sip:switchboard@203.0.113.10>' },
    ]);
    const parsed = response(serializeMessage(ringing));
    expect(parsed.headers.at(-1)).toEqual({ name: 'Content-Length', value: '0' });
    expect(toTagOf(parsed)).toBe('b7c9');
  });

  it('keeps an existing To tag, copies Timestamp into a 100 only, and takes a body and reason', () => {
    const bye = request(BYE);
    const ok = buildResponse(bye, 200, { toTag: 'other' });
    expect(header(ok, 'To')).toBe('<sip:+15557654321@trunk.example.com>;tag=a6c85cf');
    const stamped = request(sip([...OPTIONS.toString().split('\r\n').slice(0, 8), 'Timestamp: 54']));
    expect(header(buildResponse(stamped, 100), 'Timestamp')).toBe('54');
    expect(header(buildResponse(stamped, 200), 'Timestamp')).toBeUndefined();
    const busy = buildResponse(bye, 486, { reason: 'Busy Here Now', body: Buffer.from('x') });
    expect(busy).toMatchObject({ reason: 'Busy Here Now', body: Buffer.from('x') });
    expect(() => buildResponse(bye, 200, { toTag: 'a b' })).toThrow(RangeError);
    expect([reasonPhrase(487), reasonPhrase(499), reasonPhrase(701)]).toEqual([
      'Request Terminated',
      'Bad Request',
      'Unknown',
    ]);
  });
});
