/**
 * The API reference page at /docs (@fastify/swagger-ui): Switchboard's name and logo, and "try it"
 * that works wherever the page is opened. The page's copy of the document names the server it was
 * served from (a relative `/`), so requests go back to the same origin whatever PUBLIC_URL says —
 * the published document keeps PUBLIC_URL for clients. A content security policy limits the page to
 * its own scripts and to requests to this server or PUBLIC_URL.
 */
import type { FastifySwaggerUiOptions } from '@fastify/swagger-ui';

/** A switchboard's patch panel: three jacks joined by cords. Ours, drawn for this page. */
export const LOGO_SVG = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 160 40" width="160" height="40" role="img" aria-label="Switchboard">
<rect x="2" y="6" width="28" height="28" rx="6" fill="#0f766e"/>
<circle cx="10" cy="14" r="3" fill="#ecfeff"/><circle cx="22" cy="14" r="3" fill="#ecfeff"/><circle cx="16" cy="26" r="3" fill="#ecfeff"/>
<path d="M10 14 Q16 22 16 26 M22 14 Q22 20 16 26" stroke="#fbbf24" stroke-width="2" fill="none"/>
<text x="38" y="27" font-family="system-ui,-apple-system,Segoe UI,sans-serif" font-size="18" font-weight="600" fill="#ffffff">Switchboard</text>
</svg>`;

const FAVICON_SVG = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32"><rect x="2" y="2" width="28" height="28" rx="6" fill="#0f766e"/><circle cx="10" cy="10" r="3" fill="#ecfeff"/><circle cx="22" cy="10" r="3" fill="#ecfeff"/><circle cx="16" cy="22" r="3" fill="#ecfeff"/><path d="M10 10 Q16 18 16 22 M22 10 Q22 16 16 22" stroke="#fbbf24" stroke-width="2" fill="none"/></svg>`;

/** The top bar in our colour, without the framework's URL box (the page shows this server's API). */
const THEME_CSS = `.swagger-ui .topbar { background-color: #134e4a; }
.swagger-ui .topbar .download-url-wrapper { display: none; }`;

export const DOCS_TITLE = 'Switchboard API reference';

export function docsPageOptions(publicUrl: string): FastifySwaggerUiOptions {
  const origins = [...new Set(["'self'", new URL(publicUrl).origin])].join(' ');
  return {
    routePrefix: '/docs',
    logo: { type: 'image/svg+xml', content: Buffer.from(LOGO_SVG), href: '/docs', target: '_self' },
    theme: {
      title: DOCS_TITLE,
      favicon: [
        {
          filename: 'favicon.svg',
          rel: 'icon',
          sizes: 'any',
          type: 'image/svg+xml',
          content: Buffer.from(FAVICON_SVG),
        },
      ],
      css: [{ filename: 'switchboard.css', content: THEME_CSS }],
    },
    uiConfig: {
      persistAuthorization: true,
      displayOperationId: true,
      displayRequestDuration: true,
      filter: true,
      docExpansion: 'list',
      tryItOutEnabled: false,
    },
    // No upgrade-insecure-requests: it would turn "try it" on a plain-http server into https calls.
    staticCSP: {
      'default-src': ["'self'"],
      'base-uri': ["'self'"],
      'connect-src': [origins],
      'img-src': ["'self'", 'data:'],
      'style-src': ["'self'", "'unsafe-inline'"],
      'script-src': ["'self'"],
      'object-src': ["'none'"],
      'frame-ancestors': ["'self'"],
    },
    transformSpecificationClone: false,
    transformSpecification: (document) => ({
      ...document,
      servers: [
        { url: '/', description: 'The server this page was served from' },
        ...((document.servers as []) ?? []),
      ],
    }),
  };
}
