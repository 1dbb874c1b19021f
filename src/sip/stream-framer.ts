/**
 * Framing SIP over a stream transport (TCP, TLS; RFC 3261 §18.3): fed the connection's chunks as they
 * arrive, cut at arbitrary places, it returns whole messages in order.
 *
 * Design choices:
 * - `push(chunk)` returns the events the chunk completed (no callbacks, no throwing): a parsed
 *   message, a keep-alive ping, or an error. Easy to test, and the transport decides what to write.
 * - Content-Length is required on a stream (§18.3 and §20.14): without it the end of the message is
 *   unknowable, so the stream is unusable. So is a head that grows past the size limit or a declared
 *   length that would. Those errors are `fatal`: the framer drops its buffer, ignores later input, and
 *   the transport should close the connection. A message that frames correctly but is malformed inside
 *   is a non-fatal error: the next message starts right after it.
 * - CR and LF between messages are skipped (§7.5 allows CRLFs before a start line). Each double CRLF
 *   there (`\r\n\r\n`, RFC 5626 §4.4.1) is reported as a `ping`, which the transport answers with a
 *   single CRLF (`KEEPALIVE_PONG`). Counting line feeds byte by byte makes the report independent of
 *   where the chunks were cut. A lone CRLF (a pong to our own ping) is skipped without a report.
 * - Buffering is bounded: besides the chunk being handled, at most one message's worth
 *   (`maxMessageBytes`) is kept, in one buffer that grows by doubling and is compacted in place, so
 *   even a peer sending one byte per segment costs linear time.
 */
import {
  declaredContentLength,
  parseMessage,
  readMessageHead,
  SIP_MAX_MESSAGE_BYTES,
  type SipMessage,
} from './message.js';
import { SipParseError } from './syntax.js';

export type FramerEvent =
  | { type: 'message'; message: SipMessage; bytes: Buffer }
  | { type: 'ping' }
  | { type: 'error'; error: SipParseError; fatal: boolean };

/** What a server writes back for a ping (RFC 5626 §4.4.1). */
export const KEEPALIVE_PONG = Buffer.from('\r\n');

const CR = 0x0d;
const LF = 0x0a;

export class StreamFramer {
  readonly #maxMessageBytes: number;
  #buffer = Buffer.alloc(0);
  #start = 0;
  #end = 0;
  #phase: 'between' | 'head' | 'body' | 'failed' = 'between';
  #lineFeedsBetween = 0;
  /** In the head phase: how far (from #start) the search for the empty line has got. */
  #scanned = 0;
  /** In the body phase: the length of the whole message. */
  #frameLength = 0;

  constructor(options: { maxMessageBytes?: number } = {}) {
    this.#maxMessageBytes = options.maxMessageBytes ?? SIP_MAX_MESSAGE_BYTES;
  }

  /** True after a fatal error: later input is ignored. */
  get failed(): boolean {
    return this.#phase === 'failed';
  }

  /** Bytes held for an incomplete message. */
  get buffered(): number {
    return this.#end - this.#start;
  }

  push(chunk: Buffer): FramerEvent[] {
    if (this.#phase === 'failed') return [];
    this.#append(chunk);
    const events: FramerEvent[] = [];
    for (;;) {
      const phase = this.#phase;
      const progressed =
        phase === 'between'
          ? this.#skipBetween(events)
          : phase === 'head'
            ? this.#findHead(events)
            : phase === 'body' && this.#takeMessage(events);
      if (!progressed) break;
    }
    if (this.buffered === 0) {
      this.#start = 0;
      this.#end = 0;
      // A burst of many messages in one chunk grew the buffer; give that memory back.
      if (this.#buffer.length > 2 * this.#maxMessageBytes) this.#buffer = Buffer.alloc(0);
    }
    return events;
  }

  /** Skips CR/LF before a message, reporting pings; true when a message has begun. */
  #skipBetween(events: FramerEvent[]): boolean {
    const buffer = this.#buffer;
    while (this.#start < this.#end && (buffer[this.#start] === CR || buffer[this.#start] === LF)) {
      if (buffer[this.#start] === LF && ++this.#lineFeedsBetween === 2) {
        events.push({ type: 'ping' });
        this.#lineFeedsBetween = 0;
      }
      this.#start++;
    }
    if (this.#start === this.#end) return false;
    this.#phase = 'head';
    this.#lineFeedsBetween = 0;
    this.#scanned = 0;
    return true;
  }

  /** Looks for the empty line ending the head; once found, learns the message's whole length. */
  #findHead(events: FramerEvent[]): boolean {
    const headLength = this.#headLength();
    if (headLength === undefined) {
      if (this.buffered > this.#maxMessageBytes) {
        this.#fail(events, `a header section longer than ${this.#maxMessageBytes} bytes`);
      }
      return false;
    }
    let contentLength: number | undefined;
    try {
      const head = readMessageHead(this.#buffer.subarray(this.#start, this.#start + headLength));
      contentLength = declaredContentLength(head.headers);
    } catch (error) {
      if (!(error instanceof SipParseError)) throw error;
      this.#fail(events, `unreadable header section (${error.message})`);
      return false;
    }
    if (contentLength === undefined) {
      this.#fail(events, 'a message without Content-Length on a stream');
      return false;
    }
    if (headLength + contentLength > this.#maxMessageBytes) {
      this.#fail(events, `a message of ${headLength + contentLength} bytes`);
      return false;
    }
    this.#frameLength = headLength + contentLength;
    this.#phase = 'body';
    return true;
  }

  /** The head's length including its empty line (LF LF, LF CR LF), or undefined while incomplete. */
  #headLength(): number | undefined {
    const buffer = this.#buffer.subarray(this.#start, this.#end);
    let at = this.#scanned;
    for (;;) {
      at = buffer.indexOf(LF, at);
      if (at < 0) {
        this.#scanned = buffer.length;
        return undefined;
      }
      const next = buffer[at + 1];
      if (next === LF) return at + 2;
      if (next === CR && buffer[at + 2] === LF) return at + 3;
      if (next === undefined || (next === CR && at + 2 >= buffer.length)) {
        this.#scanned = at;
        return undefined;
      }
      at++;
    }
  }

  #takeMessage(events: FramerEvent[]): boolean {
    if (this.buffered < this.#frameLength) return false;
    const bytes = Buffer.from(this.#buffer.subarray(this.#start, this.#start + this.#frameLength));
    this.#start += this.#frameLength;
    this.#phase = 'between';
    try {
      events.push({ type: 'message', message: parseMessage(bytes), bytes });
    } catch (error) {
      if (!(error instanceof SipParseError)) throw error;
      events.push({ type: 'error', error, fatal: false });
    }
    return true;
  }

  #fail(events: FramerEvent[], problem: string): void {
    events.push({ type: 'error', error: new SipParseError('stream-framing', problem), fatal: true });
    this.#phase = 'failed';
    this.#buffer = Buffer.alloc(0);
    this.#start = 0;
    this.#end = 0;
  }

  #append(chunk: Buffer): void {
    const held = this.#end - this.#start;
    if (this.#end + chunk.length > this.#buffer.length) {
      if (held + chunk.length <= this.#buffer.length) {
        this.#buffer.copyWithin(0, this.#start, this.#end);
      } else {
        const grown = Buffer.allocUnsafe(Math.max(held + chunk.length, this.#buffer.length * 2, 4096));
        this.#buffer.copy(grown, 0, this.#start, this.#end);
        this.#buffer = grown;
      }
      this.#start = 0;
      this.#end = held;
    }
    chunk.copy(this.#buffer, this.#end);
    this.#end += chunk.length;
  }
}
