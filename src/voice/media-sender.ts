/**
 * The runtime's way out to the caller on a proven media stream: our audio, marks and clears as the
 * carrier's messages (through its wire format), on the stream's socket. Audio goes out in the
 * carrier's 20 ms frames (160 bytes of μ-law for carrier_a), which is how the carrier itself sends
 * and what it expects back.
 *
 * Nothing is held here: a frame goes to the socket at once, and the runtime paces what it sends by
 * the marks the carrier echoes. A socket whose peer reads slowly buffers in `ws`, bounded by that
 * pacing; this module keeps no queue of its own that could grow.
 */
import type { WebSocket } from 'ws';
import type { CarrierMediaWire, MediaStreamStart } from '../providers/carriers/media.js';
import { bytesFor, FRAME_MS } from './audio.js';
import type { MediaSender } from './transport.js';

const OPEN = 1; // WebSocket.OPEN

/** Closing the stream normally: the carrier goes on with what follows in its instructions. */
export const NORMAL_CLOSE = 1000;

/** A sender for `start`'s stream on `socket`; every call after the socket closed does nothing. */
export function mediaSender(socket: WebSocket, wire: CarrierMediaWire, start: MediaStreamStart): MediaSender {
  const frameBytes = bytesFor(start.format, FRAME_MS);
  const send = (message: string | Buffer) => {
    if (socket.readyState === OPEN) socket.send(message);
  };
  return {
    media(audio) {
      // The last frame of a piece may be shorter: padding it would add silence to every sentence,
      // and holding it back for the next piece would delay the end of this one.
      for (let offset = 0; offset < audio.length; offset += frameBytes) {
        send(wire.media(start.streamId, audio.subarray(offset, offset + frameBytes)));
      }
    },
    mark: (name) => send(wire.mark(start.streamId, name)),
    clear: () => send(wire.clear(start.streamId)),
    close() {
      if (socket.readyState === OPEN) socket.close(NORMAL_CLOSE, 'Stream ended');
    },
  };
}
