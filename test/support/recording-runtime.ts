/**
 * A call runtime for tests of the media route: it records every stream attached to it (the
 * connection, with its `send`) and every event its handlers receive, in order, so a test can see
 * exactly what reached the runtime — and that nothing of a refused stream did.
 */
import type { CallRuntime, MediaConnection, MediaHandlers } from '../../src/voice/transport.js';

export type RecordedEvent =
  | { type: 'media'; audio: Buffer; timestampMs?: number }
  | { type: 'mark'; name: string }
  | { type: 'dtmf'; digit: string }
  | { type: 'ended'; reason: 'stop' | 'closed' | 'error' };

export interface RecordedStream {
  connection: MediaConnection;
  events: RecordedEvent[];
}

export class RecordingRuntime implements CallRuntime {
  readonly streams: RecordedStream[] = [];

  attach(connection: MediaConnection): MediaHandlers {
    const stream: RecordedStream = { connection, events: [] };
    this.streams.push(stream);
    const record = (event: RecordedEvent) => stream.events.push(event);
    return {
      media: (audio, timestampMs) =>
        record({
          type: 'media',
          audio: Buffer.from(audio),
          ...(timestampMs !== undefined ? { timestampMs } : {}),
        }),
      mark: (name) => record({ type: 'mark', name }),
      dtmf: (digit) => record({ type: 'dtmf', digit }),
      ended: (reason) => record({ type: 'ended', reason }),
    };
  }

  /** The streams attached for `callId`. */
  of(callId: number): RecordedStream[] {
    return this.streams.filter((stream) => stream.connection.callId === callId);
  }
}
