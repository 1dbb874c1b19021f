/**
 * What the OpenAPI document says about itself — description, authentication, tags in display
 * order, outgoing webhooks — and the one post-processing step that makes it a contract: named
 * schemas as `$ref`s, literal unions as enums (openapi-components.ts), every operation's tag
 * described. The step runs when the document is first built, which the app forces at start-up, so
 * a clash of titles or an undescribed tag stops the server instead of reaching a client.
 */
import fastifySwagger, { type FastifyDynamicSwaggerOptions } from '@fastify/swagger';
import fastifySwaggerUi from '@fastify/swagger-ui';
import type { FastifyInstance, RouteOptions } from 'fastify';
import { AREAS, SESSION_COOKIE } from '../domains/identity/principal.js';
import { webhookEntries } from '../domains/webhooks/events.js';
import { CSRF_HEADER } from './auth.js';
import { docsPageOptions } from './docs-page.js';
import { NamedSchemas, normaliseOperations, shareCommonResponses } from './openapi-components.js';
import { ErrorBody } from './schemas.js';

type Json = Record<string, unknown>;

/** Every tag an operation may carry, in the order the reference shows them. */
export const TAGS: ReadonlyArray<{ name: string; description: string }> = [
  { name: 'system', description: 'Health and Prometheus metrics of the running server.' },
  {
    name: 'auth',
    description:
      'Register, verify the email address, sign in and out, refresh tokens, switch organization, who am I.',
  },
  {
    name: 'users',
    description: 'Your profile and password; the members of the organization and invitations.',
  },
  {
    name: 'api-keys',
    description: 'User API keys (`sk_…`): each limited to permission areas and an optional rate limit.',
  },
  {
    name: 'organization',
    description: 'The organization: its settings, members’ roles and provider credentials.',
  },
  { name: 'billing', description: 'The organization’s balance and its ledger of charges and credits.' },
  { name: 'llm-presets', description: 'Named LLM provider settings that assistants can share.' },
  { name: 'fallback-keys', description: 'Provider keys used when an assistant brings none of its own.' },
  {
    name: 'assistants',
    description: 'Voice agents: prompt, voice, language model, tools and the webhooks they send.',
  },
  {
    name: 'knowledge',
    description: 'Knowledge bases: the documents an assistant answers from, their processing, and retrieval.',
  },
  {
    name: 'phone-numbers',
    description: 'Carrier numbers of the organization and the assistant each is routed to.',
  },
  {
    name: 'assistant-graphs',
    description:
      'Conversation graphs (nodes and edges) that drive an assistant; simulation, sessions, analytics.',
  },
  {
    name: 'campaigns',
    description:
      'Outbound calling campaigns: contacts, schedules, execution, progress and moves between them.',
  },
  {
    name: 'calls',
    description: 'Place calls; read, search and export call records and transcripts; hang up.',
  },
  { name: 'sms', description: 'Send SMS and MMS, follow their status, cancel queued messages.' },
  {
    name: 'sms-compliance',
    description: 'Registration status of numbers that send SMS (10DLC-style review).',
  },
  {
    name: 'webhooks',
    description: 'The signing secret of outgoing webhooks and the log of their deliveries (redeliver, test).',
  },
  {
    name: 'webhook-events',
    description:
      'Events Switchboard posts to your URLs (top-level `webhooks` of this document), signed with `X-Switchboard-Signature`.',
  },
  { name: 'serverless', description: 'Cloud functions an assistant can call as tools.' },
  {
    name: 'carrier-webhooks',
    description:
      'Callbacks the telephony carriers post to Switchboard; verified by each carrier’s own signature.',
  },
];

const TAG_GROUPS = [
  { name: 'Account', tags: ['auth', 'users', 'api-keys', 'organization', 'billing'] },
  {
    name: 'Configuration',
    tags: ['llm-presets', 'fallback-keys', 'assistants', 'knowledge', 'phone-numbers', 'assistant-graphs'],
  },
  { name: 'Calls and messages', tags: ['calls', 'campaigns', 'sms', 'sms-compliance', 'serverless'] },
  { name: 'Webhooks', tags: ['webhooks', 'webhook-events', 'carrier-webhooks'] },
  { name: 'Operations', tags: ['system'] },
];

const DESCRIPTION = `Self-hostable, multi-tenant voice AI agent platform.

## Authentication

Three ways in; each operation lists the ones it accepts ("Accepts: …") and its security requirements.

| Way in | How to send it | For |
|---|---|---|
| User API key | \`Authorization: Bearer sk_…\` (scheme \`bearerAuth\`) | servers, scripts, integrations |
| JWT access token | \`Authorization: Bearer eyJ…\` from \`POST /api/v1/auth/login\` (scheme \`bearerAuth\`) | apps that sign a user in |
| Dashboard session | the \`${SESSION_COOKIE}\` cookie (scheme \`cookieAuth\`) | the web dashboard |

A request with an \`Authorization\` header is judged by that header alone. With only the session cookie,
every POST, PUT, PATCH and DELETE must also send \`X-CSRF-Token\` (the \`csrf_token\` returned at login),
or it is refused with 403.

## API key permissions

An API key acts as the user who made it, limited to the **areas** it names: ${AREAS.map((a) => `\`${a}\``).join(', ')}.
Each area is granted \`read\` (GET requests) or \`read_write\` (every method); an area not named is refused
(403). Operations in an area say which level they need ("API keys need \`calls: read\`"); operations
outside every area (your profile, who am I) accept any key. A key may carry a rate limit: requests past it
answer 429 with \`Retry-After\`.

Some operations refuse API keys and take a signed-in user only (managing keys, the webhook secret);
JWT-only operations are listed below.

## Errors

Every error answers \`{"detail": …}\` (\`ErrorBody\`): a message, or a list of \`ValidationError\` items
\`{loc, msg, type}\` for invalid input (422, or 400 where an operation says so).

## Webhooks

The events Switchboard posts to your URLs are described under \`webhooks\`, with their payloads and the
signature headers to verify.`;

/** Collects what the reference tells about routes as a whole (here: which take a JWT only). */
export class RouteIndex {
  readonly #jwtOnly: string[] = [];

  record(route: RouteOptions): void {
    const access = route.config?.access;
    if (!access || access.public || route.schema?.hide) return;
    if (access.via?.length !== 1 || access.via[0] !== 'jwt') return;
    const path = route.url.replace(/:([A-Za-z0-9_]+)/g, '{$1}');
    for (const method of [route.method].flat())
      if (method !== 'HEAD') this.#jwtOnly.push(`\`${method} ${path}\``);
  }

  get jwtOnly(): readonly string[] {
    return this.#jwtOnly;
  }
}

/**
 * Registers the document and the /docs page on `app`. Routes registered after this are documented;
 * the document is built once, when the app is ready, so that a clash of schema titles or an
 * undescribed tag fails the start instead of reaching a client.
 */
export async function installOpenApi(
  app: FastifyInstance,
  options: { publicUrl: string; version: string },
): Promise<void> {
  const routes = new RouteIndex();
  app.addHook('onRoute', (route) => routes.record(route));
  await app.register(fastifySwagger, openapiOptions(options.publicUrl, options.version, routes));
  await app.register(fastifySwaggerUi, docsPageOptions(options.publicUrl));
  app.addHook('onReady', async () => {
    app.swagger();
  });
}

export function openapiOptions(
  publicUrl: string,
  version: string,
  routes: RouteIndex,
): FastifyDynamicSwaggerOptions {
  return {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Switchboard API',
        version,
        description: DESCRIPTION,
        license: { name: 'Apache-2.0', identifier: 'Apache-2.0' },
      },
      servers: [{ url: publicUrl, description: 'This server’s PUBLIC_URL' }],
      tags: TAGS.map((tag) => ({ ...tag })),
      components: {
        securitySchemes: {
          bearerAuth: {
            type: 'http',
            scheme: 'bearer',
            description:
              'A user API key (`sk_…`, limited to its permission areas) or a JWT access token from `POST /api/v1/auth/login`.',
          },
          cookieAuth: {
            type: 'apiKey',
            in: 'cookie',
            name: SESSION_COOKIE,
            description: `The dashboard session cookie set at login. POST, PUT, PATCH and DELETE also need the \`${CSRF_HEADER}\` header.`,
          },
        },
      },
    },
    transformObject: (documentObject) => {
      if (!('openapiObject' in documentObject)) throw new Error('Switchboard documents OpenAPI 3 only');
      return contractDocument(documentObject.openapiObject as Json, routes.jwtOnly) as never;
    },
  };
}

/**
 * The finished document: named schemas hoisted, enums merged, common error answers shared, webhooks added, every operation's tag
 * checked against `TAGS`. Works on a copy: the built document shares objects with the route schemas.
 */
export function contractDocument(built: Json, jwtOnly: readonly string[] = []): Json {
  const doc = JSON.parse(JSON.stringify(built)) as Json;
  doc.webhooks = webhookEntries('webhook-events');
  const named = new NamedSchemas();
  named.define(JSON.parse(JSON.stringify(ErrorBody)));
  normaliseOperations(named, (doc.paths ?? {}) as Record<string, Json>, 'path');
  normaliseOperations(named, doc.webhooks as Record<string, Json>, 'webhook');
  const components = (doc.components ?? {}) as Json;
  const existing = (components.schemas ?? {}) as Json;
  const hoisted = Object.fromEntries(Object.entries(named.components).sort(([a], [b]) => a.localeCompare(b)));
  const responses = shareCommonResponses((doc.paths ?? {}) as Record<string, Json>);
  doc.components = { ...components, schemas: { ...existing, ...hoisted }, responses };
  checkTags(doc);
  doc['x-tagGroups'] = TAG_GROUPS;
  const info = doc.info as Json;
  if (jwtOnly.length > 0)
    info.description = `${info.description}\n\n## JWT-only operations\n\nThese take a JWT access token and nothing else: ${jwtOnly.join(', ')}.`;
  return doc;
}

/** Every operation carries exactly the tags `TAGS` describes, and at least one. */
function checkTags(doc: Json): void {
  const known = new Set(TAGS.map((t) => t.name));
  const grouped = new Set(TAG_GROUPS.flatMap((g) => g.tags));
  for (const name of known) if (!grouped.has(name)) throw new Error(`Tag ${name} is in no x-tagGroups group`);
  for (const [kind, items] of [
    ['path', doc.paths],
    ['webhook', doc.webhooks],
  ] as const) {
    for (const [path, item] of Object.entries((items ?? {}) as Record<string, Json>)) {
      for (const [method, operation] of Object.entries(item)) {
        const tags = (operation as Json).tags as string[] | undefined;
        const label = `${kind} ${method.toUpperCase()} ${path}`;
        if (!tags?.length) throw new Error(`The OpenAPI operation ${label} has no tag`);
        for (const tag of tags)
          if (!known.has(tag))
            throw new Error(
              `The OpenAPI operation ${label} has the tag "${tag}", which TAGS in src/http/openapi.ts does not describe`,
            );
      }
    }
  }
}
