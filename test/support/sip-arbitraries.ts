/**
 * fast-check generators of valid SIP values and messages, for the round-trip properties of the
 * parser and the stream framer. Header names come in any case and in compact form; values are any
 * Unicode text without CR/LF (and without leading or trailing whitespace, which the grammar drops).
 */
import fc from 'fast-check';
import { formatNameAddr, formatVia, type NameAddr, type Via } from '../../src/sip/address.js';
import { canonicalHeaderName, type SipHeader } from '../../src/sip/headers.js';
import type { SipMessage, SipRequest, SipResponse } from '../../src/sip/message.js';
import { quote } from '../../src/sip/syntax.js';
import { formatUri, type SipUri } from '../../src/sip/uri.js';

export const token = fc.stringMatching(/^[A-Za-z0-9\-.!%*_+`'~]{1,12}$/);
const lowerName = fc.stringMatching(/^[a-z][a-z0-9-]{0,8}$/);

/** One character: any code point, often one that separators, quoting or JavaScript treat specially. */
const character = fc.oneof(
  fc.string({ unit: 'binary', minLength: 1, maxLength: 1 }),
  fc.constantFrom(
    '\u2028',
    '\u2029',
    '\u00a0',
    '\ufeff',
    '\t',
    ' ',
    '"',
    '\\',
    ',',
    ';',
    '<',
    '>',
    '=',
    '\x00',
    '\x7f',
  ),
);

/** Text a header value or reason phrase may hold: any code point but CR and LF. */
export const lineText = (maxLength = 40) =>
  fc.string({ unit: character, maxLength }).filter((text) => !/[\r\n]/.test(text));

const trimmedLineText = lineText().filter((text) => !/^[ \t]|[ \t]$/.test(text));

const hostname = fc
  .array(fc.stringMatching(/^[a-z0-9]([a-z0-9-]{0,8}[a-z0-9])?$/), { minLength: 1, maxLength: 4 })
  .map((labels) => labels.join('.'));
export const host = fc.oneof(hostname, fc.ipV4(), fc.ipV6());
const port = fc.option(fc.integer({ min: 1, max: 65535 }), { nil: undefined });

const uriParams = fc
  .uniqueArray(
    fc.tuple(lowerName, fc.option(fc.stringMatching(/^([A-Za-z0-9\-_.!~*'()]|%[0-9A-F]{2}){1,10}$/))),
    {
      selector: ([name]) => name,
      maxLength: 3,
    },
  )
  .map((pairs) => new Map<string, string | null>(pairs));

const uriHeaders = fc
  .uniqueArray(
    fc.tuple(fc.stringMatching(/^[A-Za-z][A-Za-z0-9-]{0,8}$/), fc.stringMatching(/^[A-Za-z0-9\-_.]{0,10}$/)),
    {
      selector: ([name]) => name,
      maxLength: 2,
    },
  )
  .map((pairs) => new Map(pairs));

export const sipUri = (withHeaders = true): fc.Arbitrary<SipUri> =>
  fc
    .record({
      scheme: fc.constantFrom('sip' as const, 'sips' as const),
      user: fc.option(fc.stringMatching(/^[A-Za-z0-9\-_.!~*'()&=+$,;?/]{1,16}$/), { nil: undefined }),
      host,
      port,
      params: uriParams,
      headers: withHeaders ? uriHeaders : fc.constant(new Map<string, string>()),
    })
    .map(({ user, port: portNumber, ...rest }) => ({
      ...rest,
      ...(user === undefined ? {} : { user }),
      ...(portNumber === undefined ? {} : { port: portNumber }),
    }));

/** Header parameters: flags, tokens and quoted strings. */
const headerParams = fc
  .uniqueArray(
    fc.tuple(
      lowerName,
      fc.oneof(
        fc.constant(null),
        token,
        lineText(20).map((text) => quote(text)),
      ),
    ),
    { selector: ([name]) => name, maxLength: 3 },
  )
  .map((pairs) => new Map<string, string | null>(pairs));

export const nameAddr: fc.Arbitrary<NameAddr> = fc
  .record({
    displayName: fc.option(lineText(20), { nil: undefined }),
    uri: sipUri().map(formatUri),
    params: headerParams,
  })
  .map(({ displayName, ...rest }) => (displayName === undefined ? rest : { displayName, ...rest }));

export const via: fc.Arbitrary<Via> = fc
  .record({
    transport: fc.constantFrom('UDP', 'TCP', 'TLS', 'WS', 'WSS', 'SCTP'),
    host,
    port,
    branch: token.map((text) => `z9hG4bK${text}`),
    rport: fc.option(fc.integer({ min: 1, max: 65535 }), { nil: undefined }),
    received: fc.option(fc.oneof(fc.ipV4(), fc.ipV6()), { nil: undefined }),
  })
  .map(({ transport, host: viaHost, port: viaPort, branch, rport, received }) => {
    const params = new Map<string, string | null>([['branch', branch]]);
    if (received !== undefined) params.set('received', received);
    params.set('rport', rport === undefined ? null : String(rport));
    return { transport, host: viaHost, params, ...(viaPort === undefined ? {} : { port: viaPort }) };
  });

/** A header name spelled any way: long in mixed case, or compact when it has a compact form. */
function spelled(long: string, compact?: string): fc.Arbitrary<string> {
  const spellings = [fc.mixedCase(fc.constant(long))];
  if (compact) spellings.push(fc.constantFrom(compact, compact.toUpperCase()));
  return fc.oneof(...spellings);
}

const extensionHeader: fc.Arbitrary<SipHeader> = fc.record({
  name: fc.stringMatching(/^X-[A-Za-z0-9\-.!%*_+`'~]{1,12}$/),
  value: trimmedLineText,
});

/** Core headers (valid Via, From, To, Call-ID, CSeq, maybe Contact) and extension headers, shuffled. */
function headerList(cseqMethod: fc.Arbitrary<string>): fc.Arbitrary<SipHeader[]> {
  return fc
    .record({
      vias: fc.array(via, { minLength: 1, maxLength: 3 }),
      viasInOneField: fc.boolean(),
      viaName: spelled('Via', 'v'),
      from: nameAddr,
      fromName: spelled('From', 'f'),
      to: nameAddr,
      toName: spelled('To', 't'),
      callId: fc.stringMatching(/^[A-Za-z0-9\-.!%*_+`'~()<>:\\"/[\]?{}]{1,20}(@[a-z0-9.]{1,10})?$/),
      callIdName: spelled('Call-ID', 'i'),
      cseq: fc.tuple(fc.integer({ min: 0, max: 2 ** 32 - 1 }), cseqMethod),
      contact: fc.option(nameAddr, { nil: undefined }),
      extensions: fc.array(extensionHeader, { maxLength: 6 }),
    })
    .chain((parts) => {
      const vias = parts.vias.map(formatVia);
      const fields: SipHeader[] = [
        ...(parts.viasInOneField
          ? [{ name: parts.viaName, value: vias.join(', ') }]
          : vias.map((value) => ({ name: parts.viaName, value }))),
        { name: parts.fromName, value: formatNameAddr(parts.from) },
        { name: parts.toName, value: formatNameAddr(parts.to) },
        { name: parts.callIdName, value: parts.callId },
        { name: 'CSeq', value: `${parts.cseq[0]} ${parts.cseq[1]}` },
        ...(parts.contact ? [{ name: 'Contact', value: formatNameAddr(parts.contact) }] : []),
      ];
      // Vias keep their relative order (it is meaningful); everything else may move around them.
      return fc
        .shuffledSubarray(parts.extensions, { minLength: parts.extensions.length })
        .map((extensions) => {
          const mixed = [...fields];
          extensions.forEach((extension, index) => {
            mixed.splice((index * 7) % (mixed.length + 1), 0, extension);
          });
          return mixed;
        });
    });
}

const body = fc.uint8Array({ maxLength: 300 }).map((bytes) => Buffer.from(bytes));

export const sipRequest: fc.Arbitrary<SipRequest> = token.chain((method) =>
  fc.record({
    method: fc.constant(method),
    uri: sipUri(false).map(formatUri),
    version: fc.constant('SIP/2.0'),
    headers: headerList(fc.constant(method)),
    body,
  }),
);

export const sipResponse: fc.Arbitrary<SipResponse> = fc.record({
  version: fc.constant('SIP/2.0'),
  status: fc.integer({ min: 100, max: 699 }),
  reason: lineText(),
  headers: headerList(token),
  body,
});

export const sipMessage: fc.Arbitrary<SipMessage> = fc.oneof(sipRequest, sipResponse);

/** What parsing a serialized message gives back: canonical names and a matching Content-Length. */
export function canonicalized(message: SipMessage): SipMessage {
  return {
    ...message,
    headers: [
      ...message.headers.map(({ name, value }) => ({ name: canonicalHeaderName(name), value })),
      { name: 'Content-Length', value: String(message.body.length) },
    ],
  };
}
