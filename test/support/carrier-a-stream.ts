/**
 * The carrier's side of a carrier_a media stream, for tests: a real `ws` client that connects to the
 * platform's `/media-stream/{call_id}` with the headers the carrier sends (its signature on the
 * upgrade), sends the carrier's messages (`carrierAMediaMessages`), and records what the platform
 * sends back and how the socket closed.
 */
import WebSocket from 'ws';
import { carrierASignature } from '../../src/providers/carriers/carrier-a.js';
import {
  type CarrierAOutbound,
  carrierAMediaMessages,
} from '../../src/providers/carriers/carrier-a-media.js';

export interface Closed {
  code: number;
  reason: string;
}

export class CarrierAStream {
  readonly received: CarrierAOutbound[] = [];
  readonly closed: Promise<Closed>;
  #sequence = 0;
  #chunk = 0;

  private constructor(
    readonly socket: WebSocket,
    readonly streamSid: string,
  ) {
    socket.on('message', (data) => this.received.push(JSON.parse(String(data)) as CarrierAOutbound));
    this.closed = new Promise((resolve) =>
      socket.on('close', (code, reason) => resolve({ code, reason: String(reason) })),
    );
  }

  /**
   * Opens a stream to `url` (which may carry a query the signature does not cover), signed with
   * `authToken` over `signedUrl` (default: `url`) as the carrier signs the upgrade; no header when
   * `authToken` is undefined.
   */
  static async open(url: string, options: { authToken?: string; signedUrl?: string } = {}) {
    const headers: Record<string, string> =
      options.authToken === undefined
        ? {}
        : { 'x-twilio-signature': carrierASignature(options.authToken, options.signedUrl ?? url, {}) };
    const socket = new WebSocket(url, { headers });
    const stream = new CarrierAStream(socket, `MZ${Math.random().toString(16).slice(2).padEnd(32, '0')}`);
    await new Promise<void>((resolve, reject) => {
      socket.once('open', () => resolve());
      socket.once('error', reject);
    });
    return stream;
  }

  #next(): number {
    this.#sequence += 1;
    return this.#sequence;
  }

  /** Sends raw text, as a malformed peer would. */
  raw(text: string): void {
    this.socket.send(text);
  }

  connected(): void {
    this.socket.send(carrierAMediaMessages.connected());
  }

  start(options: { callSid: string; accountSid: string; customParameters: Record<string, string> }): void {
    this.socket.send(carrierAMediaMessages.start(this.#next(), { streamSid: this.streamSid, ...options }));
  }

  /** One frame of caller audio; its timestamp advances 20 ms a frame. */
  media(audio: Uint8Array): void {
    this.#chunk += 1;
    const timestamp = (this.#chunk - 1) * 20;
    this.socket.send(
      carrierAMediaMessages.media(this.#next(), this.streamSid, this.#chunk, timestamp, audio),
    );
  }

  mark(name: string): void {
    this.socket.send(carrierAMediaMessages.mark(this.#next(), this.streamSid, name));
  }

  dtmf(digit: string): void {
    this.socket.send(carrierAMediaMessages.dtmf(this.#next(), this.streamSid, digit));
  }

  stop(accountSid: string, callSid: string): void {
    this.socket.send(carrierAMediaMessages.stop(this.#next(), this.streamSid, accountSid, callSid));
  }

  close(): void {
    this.socket.close(1000);
  }
}
