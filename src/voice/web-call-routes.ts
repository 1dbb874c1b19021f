/**
 * WebSocket /web-call/{call_id}: where a browser talks to an assistant (a web call, started by
 * POST /api/v1/calls/web). Public — a browser cannot set headers on a WebSocket — because the stream
 * proves itself with the call's single-call token in its first message (voice/web-call.ts). The
 * protocol is in docs/voice.md, "Talking from a browser (web calls)".
 */
import { access } from '../http/access.js';
import type { App } from '../http/types.js';
import type { WebCallStreams } from './web-call.js';

export const WEB_CALL_STREAM_PATH = '/web-call/:call_id';

export function webCallStreamRoutes(app: App, streams: WebCallStreams): void {
  app.get(WEB_CALL_STREAM_PATH, { websocket: true, config: { access: access.public } }, (socket, request) => {
    void streams.serve(socket, (request.params as { call_id?: string }).call_id);
  });
}
