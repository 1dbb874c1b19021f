/**
 * /api/v1/users/me/api-keys. Keys are managed by a signed-in user (JWT or dashboard session), never
 * with another API key: a key must not be able to mint a broader one.
 */

import { Type } from 'typebox';
import { access } from '../../http/access.js';
import { principalOf } from '../../http/auth.js';
import { errors, noContent } from '../../http/responses.js';
import { IdParam } from '../../http/schemas.js';
import type { App } from '../../http/types.js';
import { AREAS, type Permissions } from '../identity/principal.js';
import type { ApiKeyService } from './service.js';
import { ApiKeyOut, apiKeyView, Level } from './views.js';

const PermissionsIn = Type.Object(Object.fromEntries(AREAS.map((area) => [area, Type.Optional(Level)])), {
  additionalProperties: false,
  description: `Area → access level. Areas: ${AREAS.join(', ')}. Levels: read, read_write. An area not named is denied.`,
});
const RateLimit = Type.Union([Type.Integer({ minimum: 1, maximum: 1_000_000 }), Type.Null()], {
  description: 'Requests per minute for this key; null for no limit.',
});
const KeyName = Type.String({ minLength: 1, maxLength: 100 });

const tags = ['api-keys'];
const manage = { via: ['jwt', 'cookie'], verified: true } as const;

export function apiKeyRoutes(app: App, keys: ApiKeyService): void {
  app.get(
    '/api/v1/users/me/api-keys',
    {
      config: { access: access.user },
      schema: {
        operationId: 'listApiKeys',
        tags,
        summary: "The caller's API keys in this organization (never the secrets)",
        response: { 200: Type.Array(ApiKeyOut) },
      },
    },
    async (request) => (await keys.list(principalOf(request))).map(apiKeyView),
  );

  app.post(
    '/api/v1/users/me/api-keys',
    {
      config: { access: manage },
      schema: {
        operationId: 'createApiKey',
        tags,
        summary: 'Create an API key; the secret `key` is returned only in this response',
        body: Type.Object({
          name: KeyName,
          permissions: Type.Optional(PermissionsIn),
          rate_limit: Type.Optional(RateLimit),
        }),
        response: { 201: Type.Object({ api_key: ApiKeyOut, key: Type.String() }) },
      },
    },
    async (request, reply) => {
      const { row, secret } = await keys.create(principalOf(request), {
        name: request.body.name,
        permissions: (request.body.permissions ?? {}) as Permissions,
        rateLimit: request.body.rate_limit ?? null,
      });
      return reply.code(201).send({ api_key: apiKeyView(row), key: secret });
    },
  );

  app.put(
    '/api/v1/users/me/api-keys/:key_id',
    {
      config: { access: manage },
      schema: {
        operationId: 'updateApiKey',
        tags,
        summary: 'Rename, re-scope, re-limit, deactivate or reactivate an API key',
        params: IdParam('key_id'),
        body: Type.Object({
          name: Type.Optional(KeyName),
          permissions: Type.Optional(PermissionsIn),
          rate_limit: Type.Optional(RateLimit),
          is_active: Type.Optional(Type.Boolean()),
        }),
        response: {
          200: ApiKeyOut,
          ...errors({ 404: 'API key not found (among yours in this organization)' }),
        },
      },
    },
    async (request) => {
      const body = request.body;
      const row = await keys.update(principalOf(request), request.params.key_id, {
        ...(body.name !== undefined ? { name: body.name } : {}),
        ...(body.permissions !== undefined ? { permissions: body.permissions as Permissions } : {}),
        ...(body.rate_limit !== undefined ? { rateLimit: body.rate_limit } : {}),
        ...(body.is_active !== undefined ? { isActive: body.is_active } : {}),
      });
      return apiKeyView(row);
    },
  );

  app.delete(
    '/api/v1/users/me/api-keys/:key_id',
    {
      config: { access: manage },
      schema: {
        operationId: 'deleteApiKey',
        tags,
        summary: 'Delete an API key; it stops working at once',
        params: IdParam('key_id'),
        response: {
          204: Type.Null(),
          ...errors({ 404: 'API key not found (among yours in this organization)' }),
        },
      },
    },
    async (request, reply) => {
      await keys.remove(principalOf(request), request.params.key_id);
      return noContent(reply);
    },
  );
}
