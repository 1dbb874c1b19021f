/**
 * WebSocket /ws/campaigns/{campaign_id}/progress?token=<access token or API key> (decisions §4):
 * `connection_ack`, then `initial_progress`, then `progress_update` on every change (coalesced by the
 * feed to at most four a second). The client may send `ping` (→ `pong`) and `request_update`.
 *
 * Browsers cannot set headers on a WebSocket, so the credential comes in the query, and a browser
 * cannot read the HTTP status of a refused upgrade either: the socket is therefore accepted and then
 * closed with 4000 + the status the REST route would answer (4401, 4403, 4404, 4422, 4429), the
 * reason holding the message. The checks are the HTTP layer's own (`principalFromBearer`, `admit`),
 * so the socket is exactly as strict as GET /progress. The credential is checked once, at connect.
 *
 * Without a token, the console's session cookie is taken instead — but only from a page of our own
 * origin (PUBLIC_URL): a browser sends cookies with a WebSocket handshake from any site and the
 * same-origin policy does not apply to WebSockets, so without this check another site's page could
 * watch a signed-in user's campaigns (cross-site WebSocket hijacking). A token is never ambient, so
 * it needs no such check (programs send no Origin at all).
 */
import type { FastifyBaseLogger } from 'fastify';
import type { RawData, WebSocket } from 'ws';
import { access } from '../../../http/access.js';
import { admit, principalFromBearer } from '../../../http/auth.js';
import { statusOf } from '../../../http/errors.js';
import type { App } from '../../../http/types.js';
import { DomainError, forbidden, unauthorized } from '../../errors.js';
import { type Authenticator, type Principal, SESSION_COOKIE } from '../../identity/principal.js';
import type { CampaignProgressFeed } from './feed.js';
import type { CampaignProgressService } from './service.js';
import type { ProgressView } from './views.js';

export const PROGRESS_SOCKET_PATH = '/ws/campaigns/:campaign_id/progress';

export const CLOSE_CODES = {
  normal: 1000,
  goingAway: 1001,
  internalError: 1011,
  unauthenticated: 4401,
  forbidden: 4403,
  notFound: 4404,
  invalid: 4422,
  rateLimited: 4429,
} as const;

/** What GET /api/v1/campaigns/{id}/progress requires: an API key needs `campaigns: read`. */
const READ_ACCESS = access.area('campaigns', 'read') as Exclude<
  ReturnType<typeof access.area>,
  { public: true }
>;
const KEEPALIVE_MS = 30_000;
/** A client this far behind gets no more snapshots until it catches up: the next one supersedes them anyway. */
const MAX_BUFFERED_BYTES = 1 << 20;
const MAX_ID = 2_147_483_647;
const OPEN = 1; // WebSocket.OPEN

export interface ProgressSocketDeps {
  authenticator: Authenticator;
  progress: CampaignProgressService;
  feed: CampaignProgressFeed;
  /** The only origin (scheme, host, port: that of PUBLIC_URL) whose pages may use the session cookie. */
  consoleOrigin: string;
  keepaliveMs?: number;
}

/** What the handshake brought that can identify the caller. */
interface Handshake {
  token: unknown;
  cookie: string | undefined;
  origin: string | undefined;
}

export function campaignProgressSocket(app: App, deps: ProgressSocketDeps): void {
  app.get(
    PROGRESS_SOCKET_PATH,
    // The hook cannot authenticate it (the token is in the query, and refusals are close codes):
    // `serve` applies the same checks itself, before anything is sent.
    { websocket: true, config: { access: access.public } },
    (socket, request) => {
      const params = request.params as { campaign_id?: string };
      const query = request.query as { token?: unknown };
      const handshake: Handshake = {
        token: query.token,
        cookie: request.cookies?.[SESSION_COOKIE],
        origin: request.headers.origin,
      };
      void serve(socket, deps, params.campaign_id, handshake, request.log);
    },
  );
}

type ClientMessage = { type?: unknown };

async function serve(
  socket: WebSocket,
  deps: ProgressSocketDeps,
  rawId: string | undefined,
  handshake: Handshake,
  log: FastifyBaseLogger,
): Promise<void> {
  const send = (message: object) => {
    if (socket.readyState === OPEN) socket.send(JSON.stringify(message));
  };
  const close = (code: number, reason: string) => {
    // A close reason is at most 123 bytes.
    if (socket.readyState === OPEN) socket.close(code, Buffer.from(reason).subarray(0, 123).toString());
  };

  // Messages that arrive before the socket is ready are answered once it is.
  const early: RawData[] = [];
  let onMessage: (data: RawData, isBinary: boolean) => void = (data) => early.push(data);
  socket.on('message', (data, isBinary) => onMessage(data, isBinary));
  let unsubscribe = () => {};
  let keepalive: NodeJS.Timeout | undefined;
  socket.on('close', () => {
    unsubscribe();
    clearInterval(keepalive);
  });

  try {
    const campaignId = /^[1-9][0-9]{0,9}$/.test(rawId ?? '') ? Number(rawId) : 0;
    if (campaignId < 1 || campaignId > MAX_ID) return close(CLOSE_CODES.invalid, 'Invalid campaign id');
    const principal = await principalOfHandshake(deps, handshake);
    await admit(deps.authenticator, principal, READ_ACCESS, 'GET');
    if (socket.readyState !== OPEN) return;

    const organizationId = principal.organization.id;
    const deliver = (progress: ProgressView | undefined) => {
      if (!progress) return close(CLOSE_CODES.notFound, 'Campaign not found');
      if (socket.bufferedAmount > MAX_BUFFERED_BYTES) return;
      send({ type: 'progress_update', data: progress });
    };

    // Subscribed before the first computation, so no change between the two is lost; a change that
    // lands before `initial_progress` has gone out asks for one more computation afterwards.
    let initialSent = false;
    let missed = false;
    const subscribed = deps.feed.subscribe(organizationId, campaignId, (progress) => {
      if (!initialSent) {
        missed = true;
        return;
      }
      deliver(progress);
    });
    unsubscribe = subscribed;
    if (socket.readyState !== OPEN) return subscribed();

    const initial = await deps.progress.progressOf(principal.tenant, campaignId);
    if (!initial) return close(CLOSE_CODES.notFound, 'Campaign not found');
    send({ type: 'connection_ack', campaign_id: campaignId });
    send({ type: 'initial_progress', data: initial });
    initialSent = true;
    if (missed) deps.feed.refresh(organizationId, campaignId);

    onMessage = (data, isBinary) => {
      const message = isBinary ? undefined : parse(data);
      if (message?.type === 'ping') return send({ type: 'pong' });
      if (message?.type === 'request_update') return deps.feed.refresh(organizationId, campaignId);
      send({
        type: 'error',
        detail:
          message === undefined
            ? 'Messages are JSON text frames such as {"type":"ping"}'
            : `Unknown message type ${JSON.stringify(message.type)}; send "ping" or "request_update"`,
      });
    };
    for (const data of early.splice(0)) onMessage(data, false);

    // A peer that vanished without closing is found by an unanswered ping, and its subscription freed.
    let alive = true;
    socket.on('pong', () => {
      alive = true;
    });
    keepalive = setInterval(() => {
      if (!alive) return socket.terminate();
      alive = false;
      socket.ping();
    }, deps.keepaliveMs ?? KEEPALIVE_MS);
    keepalive.unref();
  } catch (error) {
    // A refusal (every domain error below 500) closes with its REST status; anything else is a fault.
    if (error instanceof DomainError && statusOf(error) < 500) {
      return close(4000 + statusOf(error), error.detail);
    }
    log.error({ err: error }, 'campaign progress socket failed');
    close(CLOSE_CODES.internalError, 'Internal error');
  }
}

/** The caller: the `?token=` when there is one, else the session cookie of a page of our origin. */
async function principalOfHandshake(deps: ProgressSocketDeps, handshake: Handshake): Promise<Principal> {
  const { token, cookie, origin } = handshake;
  if (typeof token === 'string' && token.length > 0) return principalFromBearer(deps.authenticator, token);
  if (!cookie) {
    throw unauthorized(
      'Not authenticated: connect with ?token=<access token or API key>, or from the console signed in',
    );
  }
  if (origin !== deps.consoleOrigin) {
    throw forbidden('The session cookie is accepted only from pages of this server: connect with ?token=');
  }
  const session = await deps.authenticator.fromSessionCookie(cookie);
  if (!session) throw unauthorized('Session expired or invalid');
  return session.principal;
}

function parse(data: RawData): ClientMessage | undefined {
  try {
    const value: unknown = JSON.parse(data.toString());
    return typeof value === 'object' && value !== null && !Array.isArray(value)
      ? (value as ClientMessage)
      : undefined;
  } catch {
    return undefined;
  }
}
