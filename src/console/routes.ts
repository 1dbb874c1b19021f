/**
 * Serves the web console (`console/`, built by build.ts) at /console/, and sends `/` there. Every path
 * under /console/ that is not an asset answers the console's page, so the app's own links can be
 * opened, bookmarked and reloaded. Public: the page holds no data — everything it shows comes from
 * the API with the user's session, like any other client's. Hidden from the OpenAPI document.
 *
 * The page is strict about what it runs: a Content-Security-Policy allowing scripts, styles and
 * connections (the API, and the WebSocket of a web call) from this origin only, no framing.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { notFound } from '../domains/errors.js';
import { access } from '../http/access.js';
import type { App } from '../http/types.js';
import { CONSOLE_BASE, type ConsoleAsset, type ConsoleBuilds } from './build.js';

export const CONSOLE_SECURITY_POLICY = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data: blob:",
  "media-src 'self' blob:",
  "connect-src 'self' ws: wss:",
  "worker-src 'self' blob:",
  "frame-ancestors 'none'",
  "base-uri 'none'",
  "form-action 'self'",
].join('; ');

const ASSET_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;

function send(request: FastifyRequest, reply: FastifyReply, asset: ConsoleAsset, cacheControl: string) {
  reply
    .header('content-type', asset.contentType)
    .header('etag', asset.etag)
    .header('cache-control', cacheControl)
    .header('vary', 'accept-encoding')
    .header('x-content-type-options', 'nosniff');
  if (request.headers['if-none-match'] === asset.etag) return reply.code(304).send();
  if (/\bgzip\b/.test(String(request.headers['accept-encoding'] ?? ''))) {
    return reply.header('content-encoding', 'gzip').send(asset.gzipped);
  }
  return reply.send(asset.body);
}

export function consoleRoutes(app: App, builds: ConsoleBuilds): void {
  const options = { config: { access: access.public }, schema: { hide: true } } as const;

  app.get('/', options, (_request, reply) => reply.redirect(`${CONSOLE_BASE}/`, 302));
  app.get(CONSOLE_BASE, options, (_request, reply) => reply.redirect(`${CONSOLE_BASE}/`, 302));

  app.get(`${CONSOLE_BASE}/assets/:name`, options, async (request, reply) => {
    const { name } = request.params as { name: string };
    const bundle = await builds.get();
    const found = ASSET_NAME.test(name) ? bundle.assets.get(name) : undefined;
    if (!found) throw notFound('No such console asset');
    // Revalidated each time (cheap: a 304), so a new build is picked up without stale scripts.
    return send(request, reply, found, 'no-cache');
  });

  app.get(`${CONSOLE_BASE}/*`, options, async (request, reply) => {
    // Whatever the router made of an odd asset path, an asset that does not exist is a 404, not the page.
    if (request.url.startsWith(`${CONSOLE_BASE}/assets/`)) throw notFound('No such console asset');
    const bundle = await builds.get();
    reply
      .header('content-security-policy', CONSOLE_SECURITY_POLICY)
      .header('referrer-policy', 'same-origin')
      .header('x-frame-options', 'DENY');
    return send(request, reply, bundle.page, 'no-cache');
  });
}
