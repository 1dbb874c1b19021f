/**
 * The stream framer (src/sip/stream-framer.ts): whole messages out of arbitrarily cut TCP chunks,
 * RFC 5626 CRLF keep-alive pings reported, fatal and non-fatal errors reported without throwing, and
 * buffering that stays bounded — including a property over random messages, pings and cut points.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseMessage, serializeMessage } from '../src/sip/message.js';
import { type FramerEvent, KEEPALIVE_PONG, StreamFramer } from '../src/sip/stream-framer.js';
import { sipMessage } from './support/sip-arbitraries.js';
import { BYE, INVITE, OK_WITH_SDP, sip } from './support/sip-messages.js';

const PING = Buffer.from('\r\n\r\n');

function feed(framer: StreamFramer, chunks: Buffer[]): FramerEvent[] {
  return chunks.flatMap((chunk) => framer.push(chunk));
}

const bytewise = (bytes: Buffer) => [...bytes].map((byte) => Buffer.of(byte));
const kinds = (events: FramerEvent[]) => events.map((event) => event.type);

describe('StreamFramer', () => {
  it('cuts a stream into its messages, however the chunks fall', () => {
    const stream = Buffer.concat([INVITE, OK_WITH_SDP, BYE]);
    for (const chunks of [[stream], bytewise(stream), [stream.subarray(0, 700), stream.subarray(700)]]) {
      const events = feed(new StreamFramer(), chunks);
      expect(kinds(events)).toEqual(['message', 'message', 'message']);
      expect(events.map((event) => event.type === 'message' && event.bytes)).toEqual([
        INVITE,
        OK_WITH_SDP,
        BYE,
      ]);
      expect(events.map((event) => event.type === 'message' && event.message)).toEqual(
        [INVITE, OK_WITH_SDP, BYE].map(parseMessage),
      );
    }
  });

  it('reports each double CRLF between messages as a ping, wherever it is cut', () => {
    const framer = new StreamFramer();
    expect(kinds(framer.push(PING))).toEqual(['ping']);
    expect(kinds(feed(framer, [Buffer.from('\r\n'), Buffer.from('\r'), Buffer.from('\n')]))).toEqual([
      'ping',
    ]);
    expect(kinds(framer.push(Buffer.concat([PING, PING, BYE, PING])))).toEqual([
      'ping',
      'ping',
      'message',
      'ping',
    ]);
    expect(kinds(framer.push(Buffer.from('\n\n')))).toEqual(['ping']);
    expect(KEEPALIVE_PONG.toString()).toBe('\r\n');
  });

  it('skips a lone CRLF (a pong, or the CRLF RFC 3261 §7.5 allows before a message) without a report', () => {
    const framer = new StreamFramer();
    expect(framer.push(Buffer.from('\r\n'))).toEqual([]);
    expect(kinds(framer.push(BYE))).toEqual(['message']);
    expect(framer.buffered).toBe(0);
  });

  it('frames messages with bare LF line ends', () => {
    const withLf = Buffer.from(BYE.toString().replaceAll('\r\n', '\n'));
    const events = feed(new StreamFramer(), bytewise(Buffer.concat([withLf, withLf])));
    expect(kinds(events)).toEqual(['message', 'message']);
  });

  it('reports a malformed but framed message and carries on with the next', () => {
    const bad = Buffer.from(BYE.toString().replace('CSeq: 314160 BYE', 'CSeq: 314160 INVITE'));
    const events = new StreamFramer().push(Buffer.concat([bad, BYE]));
    expect(events[0]).toMatchObject({
      type: 'error',
      fatal: false,
      error: { reason: 'cseq-method-mismatch' },
    });
    expect(events[1]?.type).toBe('message');
  });

  it('fails the stream on a message without Content-Length, and ignores what follows', () => {
    const framer = new StreamFramer();
    const withoutLength = Buffer.from(BYE.toString().replace('Content-Length: 0\r\n', ''));
    const events = framer.push(Buffer.concat([BYE, withoutLength, BYE]));
    expect(kinds(events)).toEqual(['message', 'error']);
    expect(events[1]).toMatchObject({ type: 'error', fatal: true, error: { reason: 'stream-framing' } });
    expect(framer.failed).toBe(true);
    expect(framer.push(BYE)).toEqual([]);
    expect(framer.buffered).toBe(0);
  });

  it('fails on an unreadable head, and on a head or a declared length over the limit', () => {
    const unreadable = new StreamFramer().push(Buffer.from('BYE sip:a@b SIP/2.0\r\nnot a header\r\n\r\n'));
    expect(unreadable).toMatchObject([{ type: 'error', fatal: true }]);

    const small = new StreamFramer({ maxMessageBytes: 1024 });
    expect(small.push(Buffer.from(`INVITE sip:a@b SIP/2.0\r\nX-Long: ${'a'.repeat(900)}`))).toEqual([]);
    expect(small.push(Buffer.alloc(200, 0x61))).toMatchObject([{ type: 'error', fatal: true }]);

    const declared = new StreamFramer({ maxMessageBytes: 1024 });
    const head = sip(['MESSAGE sip:a@b SIP/2.0', 'Content-Length: 5000']);
    expect(declared.push(head)).toMatchObject([{ type: 'error', fatal: true }]);
    expect(declared.buffered).toBe(0);
  });

  it('keeps its buffer bounded and its time linear, even one byte at a time', () => {
    const framer = new StreamFramer();
    const garbage = Buffer.alloc(1024, 0x61);
    let events: FramerEvent[] = [];
    for (let i = 0; i < 100 && events.length === 0; i++) {
      events = framer.push(garbage);
      expect(framer.buffered).toBeLessThanOrEqual(65 * 1024);
    }
    expect(events).toMatchObject([{ type: 'error', fatal: true }]);

    const large = sip(
      [
        'MESSAGE sip:bob@example.com SIP/2.0',
        'Via: SIP/2.0/TCP 192.0.2.1;branch=z9hG4bK1',
        'From: <sip:alice@example.com>;tag=1',
        'To: <sip:bob@example.com>',
        'Call-ID: large-1',
        'CSeq: 1 MESSAGE',
        'Content-Length: 60000',
      ],
      'x'.repeat(60_000),
    );
    const started = performance.now();
    const bytewiseEvents = feed(new StreamFramer(), bytewise(large));
    expect(kinds(bytewiseEvents)).toEqual(['message']);
    expect(performance.now() - started).toBeLessThan(15_000);
  });

  it('delivers a burst of a thousand messages from one chunk and gives the memory back', () => {
    const framer = new StreamFramer();
    const events = framer.push(Buffer.concat(Array.from({ length: 1000 }, () => OK_WITH_SDP)));
    expect(events).toHaveLength(1000);
    expect(events.every((event) => event.type === 'message')).toBe(true);
    expect(framer.buffered).toBe(0);
  });

  it('property: any cut of messages with interleaved pings gives the same messages and pings in order', () => {
    const stream = fc
      .array(fc.tuple(fc.integer({ min: 0, max: 2 }), sipMessage), { minLength: 1, maxLength: 5 })
      .chain((items) => {
        const parts = items.flatMap(([pings, message]) => [
          ...Array.from({ length: pings }, () => PING),
          serializeMessage(message),
        ]);
        const bytes = Buffer.concat(parts);
        return fc.record({
          items: fc.constant(items),
          bytes: fc.constant(bytes),
          cuts: fc.uniqueArray(fc.integer({ min: 1, max: Math.max(1, bytes.length - 1) }), { maxLength: 30 }),
        });
      });
    fc.assert(
      fc.property(stream, ({ items, bytes, cuts }) => {
        const points = [0, ...cuts.sort((a, b) => a - b), bytes.length];
        const chunks = points.slice(1).map((end, i) => bytes.subarray(points[i], end));
        const events = feed(new StreamFramer(), chunks);
        const expected = items.flatMap(([pings, message]) => [
          ...Array.from({ length: pings }, () => ({ type: 'ping' })),
          { type: 'message', message: parseMessage(serializeMessage(message)) },
        ]);
        expect(
          events.map((event) =>
            event.type === 'message' ? { type: 'message', message: event.message } : event,
          ),
        ).toEqual(expected);
      }),
      { numRuns: 200 },
    );
  });
});
