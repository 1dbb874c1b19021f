/**
 * WebSocket /media-stream/{call_id}: where a carrier connects a call's audio, both ways. Public —
 * the carrier holds no credentials of ours — because the stream proves itself (voice/media-stream.ts):
 * the carrier's signature on the upgrade, then the single-call token in its `start` message. A stream
 * that does not prove its call is closed with 1008 before any of its audio reaches the runtime. The
 * route is a WebSocket upgrade, which @fastify/websocket hides from the OpenAPI document; the
 * protocol is described in docs/voice.md ("The media stream").
 */
import { access } from '../http/access.js';
import type { App } from '../http/types.js';
import { publicSocketBase } from '../lib/media-token.js';
import type { MediaStreams } from './media-stream.js';

export const MEDIA_STREAM_PATH = '/media-stream/:call_id';

export function mediaStreamRoutes(app: App, deps: { streams: MediaStreams; publicUrl: string }): void {
  const base = publicSocketBase(deps.publicUrl);
  app.get(MEDIA_STREAM_PATH, { websocket: true, config: { access: access.public } }, (socket, request) => {
    const params = request.params as { call_id?: string };
    // The URL the carrier connected to, as it signed it: our public base and the path, no query
    // (carrier_a drops it; anything else in one proves nothing).
    const path = request.url.split('?', 1)[0]!;
    void deps.streams.serve(socket, params.call_id, { url: `${base}${path}`, headers: request.headers });
  });
}
