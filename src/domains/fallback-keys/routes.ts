/** /api/v1/organization/fallback-keys/{provider}: spare vendor keys, per provider. */

import { Type } from 'typebox';
import { access } from '../../http/access.js';
import { principalOf } from '../../http/auth.js';
import { errors, noContent } from '../../http/responses.js';
import { Id } from '../../http/schemas.js';
import type { App } from '../../http/types.js';
import { literalUnion } from '../../lib/schema.js';
import { KEYED_VENDORS } from '../../providers/ids.js';
import type { FallbackKeyService } from './service.js';
import type { FallbackKeyRow } from './store.js';
import { FallbackKeyOut, fallbackKeyView } from './views.js';

const tags = ['fallback-keys'];
/** Fallback keys are the organization's keys, used for every assistant: only an admin changes them. */
const ADMIN_WRITE = { role: 'admin', area: 'organization' } as const;
const Provider = literalUnion(KEYED_VENDORS, { description: `One of ${KEYED_VENDORS.join(', ')}` });
const ProviderParam = Type.Object({ provider: Provider });
const KeyParams = Type.Object({ provider: Provider, key_id: Id });
const ConcurrentLimit = Type.Union([Type.Integer({ minimum: 1, maximum: 100_000 }), Type.Null()], {
  description: 'Sessions this key may serve at once; null for no limit of its own.',
});

export function fallbackKeyRoutes(app: App, keys: FallbackKeyService): void {
  const view = (row: FallbackKeyRow) => fallbackKeyView(row, keys.hintOf(row));

  app.get(
    '/api/v1/organization/fallback-keys/:provider',
    {
      config: { access: access.area('organization') },
      schema: {
        operationId: 'listFallbackKeys',
        tags,
        summary: "The provider's fallback keys (metadata only)",
        params: ProviderParam,
        response: { 200: Type.Array(FallbackKeyOut) },
      },
    },
    async (request) => (await keys.list(principalOf(request), request.params.provider)).map(view),
  );

  app.post(
    '/api/v1/organization/fallback-keys/:provider',
    {
      config: { access: ADMIN_WRITE },
      schema: {
        operationId: 'createFallbackKey',
        tags,
        summary: 'Add a fallback key for the provider (name unique per provider)',
        params: ProviderParam,
        body: Type.Object({
          name: Type.String({ minLength: 1, maxLength: 100 }),
          api_key: Type.String({ minLength: 1, maxLength: 4096 }),
          enabled: Type.Boolean({ default: true }),
          concurrent_limit: Type.Optional(ConcurrentLimit),
        }),
        response: {
          201: FallbackKeyOut,
          ...errors({ 409: 'A fallback key with this name already exists for the provider' }),
        },
      },
    },
    async (request, reply) => {
      const body = request.body;
      const row = await keys.create(principalOf(request), request.params.provider, {
        name: body.name,
        apiKey: body.api_key,
        enabled: body.enabled,
        concurrentLimit: body.concurrent_limit ?? null,
      });
      return reply.code(201).send(view(row));
    },
  );

  app.put(
    '/api/v1/organization/fallback-keys/:provider/:key_id',
    {
      config: { access: ADMIN_WRITE },
      schema: {
        operationId: 'updateFallbackKey',
        tags,
        summary: 'Change a fallback key; api_key changes only when a non-empty value is sent',
        params: KeyParams,
        body: Type.Object({
          name: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
          api_key: Type.Optional(Type.String({ maxLength: 4096 })),
          enabled: Type.Optional(Type.Boolean()),
          concurrent_limit: Type.Optional(ConcurrentLimit),
        }),
        response: {
          200: FallbackKeyOut,
          ...errors({
            404: 'Fallback key not found for this provider in your organization',
            409: 'A fallback key with this name already exists for the provider',
          }),
        },
      },
    },
    async (request) => {
      const body = request.body;
      const row = await keys.update(principalOf(request), request.params.provider, request.params.key_id, {
        name: body.name,
        apiKey: body.api_key,
        enabled: body.enabled,
        concurrentLimit: body.concurrent_limit,
      });
      return view(row);
    },
  );

  app.delete(
    '/api/v1/organization/fallback-keys/:provider/:key_id',
    {
      config: { access: ADMIN_WRITE },
      schema: {
        operationId: 'deleteFallbackKey',
        tags,
        summary: 'Delete a fallback key',
        params: KeyParams,
        response: {
          204: Type.Null(),
          ...errors({ 404: 'Fallback key not found for this provider in your organization' }),
        },
      },
    },
    async (request, reply) => {
      await keys.remove(principalOf(request), request.params.provider, request.params.key_id);
      return noContent(reply);
    },
  );
}
