/** /api/v1/organization/llm-presets: reusable model configurations of the organization. */

import { Type } from 'typebox';
import { access } from '../../http/access.js';
import { principalOf } from '../../http/auth.js';
import { errors, noContent } from '../../http/responses.js';
import { IdParam } from '../../http/schemas.js';
import type { App } from '../../http/types.js';
import { literalUnion } from '../../lib/schema.js';
import { maskSecret } from '../../lib/secrets.js';
import { LLM_PROVIDER_IDS } from '../../providers/ids.js';
import type { LlmPresetService } from './service.js';
import type { PresetRow } from './store.js';
import { PresetOut, presetView } from './views.js';

const tags = ['llm-presets'];
/** A preset holds an organization key (only an admin may read it, through apply): only an admin changes one. */
const ADMIN_WRITE = { role: 'admin', area: 'organization' } as const;
const Provider = literalUnion(LLM_PROVIDER_IDS);
const BaseUrl = Type.String({ format: 'uri', pattern: '^https?://', maxLength: 2048 });
const Settings = Type.Object(
  {
    temperature: Type.Optional(Type.Number({ minimum: 0, maximum: 2 })),
    max_tokens: Type.Optional(Type.Integer({ minimum: 1, maximum: 200_000 })),
    top_p: Type.Optional(Type.Number({ minimum: 0, maximum: 1 })),
    frequency_penalty: Type.Optional(Type.Number({ minimum: -2, maximum: 2 })),
    presence_penalty: Type.Optional(Type.Number({ minimum: -2, maximum: 2 })),
  },
  { additionalProperties: true, description: 'Model parameters (known ones are range-checked).' },
);

export function llmPresetRoutes(app: App, presets: LlmPresetService): void {
  const masked = (row: PresetRow) => presetView(row, maskSecret(presets.apiKeyOf(row)));

  app.get(
    '/api/v1/organization/llm-presets',
    {
      config: { access: access.area('organization') },
      schema: {
        operationId: 'listLlmPresets',
        tags,
        summary: 'The presets, keys masked',
        response: { 200: Type.Array(PresetOut) },
      },
    },
    async (request) => (await presets.list(principalOf(request))).map(masked),
  );

  app.post(
    '/api/v1/organization/llm-presets',
    {
      config: { access: ADMIN_WRITE },
      schema: {
        operationId: 'createLlmPreset',
        tags,
        summary: 'Create a preset (name unique in the organization)',
        body: Type.Object({
          name: Type.String({ minLength: 1, maxLength: 100 }),
          provider: Provider,
          model: Type.String({ minLength: 1, maxLength: 200 }),
          api_key: Type.Optional(Type.Union([Type.String({ minLength: 1, maxLength: 4096 }), Type.Null()])),
          base_url: Type.Optional(Type.Union([BaseUrl, Type.Null()])),
          settings: Type.Optional(Settings),
        }),
        response: { 201: PresetOut, ...errors({ 409: 'A preset with this name already exists' }) },
      },
    },
    async (request, reply) => {
      const body = request.body;
      const row = await presets.create(principalOf(request), {
        name: body.name,
        provider: body.provider,
        model: body.model,
        apiKey: body.api_key,
        baseUrl: body.base_url,
        settings: body.settings as Record<string, unknown> | undefined,
      });
      return reply.code(201).send(masked(row));
    },
  );

  app.put(
    '/api/v1/organization/llm-presets/:preset_id',
    {
      config: { access: ADMIN_WRITE },
      schema: {
        operationId: 'updateLlmPreset',
        tags,
        summary:
          'Change a preset (admin only); api_key: a new value replaces it, null removes it, empty or ' +
          'masked keeps it while provider and base_url stay (422 otherwise: send the key again)',
        params: IdParam('preset_id'),
        body: Type.Object({
          name: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
          provider: Type.Optional(Provider),
          model: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
          api_key: Type.Optional(Type.Union([Type.String({ maxLength: 4096 }), Type.Null()])),
          base_url: Type.Optional(Type.Union([BaseUrl, Type.Null()])),
          settings: Type.Optional(Settings),
        }),
        response: {
          200: PresetOut,
          ...errors({
            404: 'Preset not found in your organization',
            409: 'A preset with this name already exists',
          }),
        },
      },
    },
    async (request) => {
      const body = request.body;
      const row = await presets.update(principalOf(request), request.params.preset_id, {
        name: body.name,
        provider: body.provider,
        model: body.model,
        apiKey: body.api_key,
        baseUrl: body.base_url,
        settings: body.settings as Record<string, unknown> | undefined,
      });
      return masked(row);
    },
  );

  app.delete(
    '/api/v1/organization/llm-presets/:preset_id',
    {
      config: { access: ADMIN_WRITE },
      schema: {
        operationId: 'deleteLlmPreset',
        tags,
        summary: 'Delete a preset',
        params: IdParam('preset_id'),
        response: { 204: Type.Null(), ...errors({ 404: 'Preset not found in your organization' }) },
      },
    },
    async (request, reply) => {
      await presets.remove(principalOf(request), request.params.preset_id);
      return noContent(reply);
    },
  );

  app.get(
    '/api/v1/organization/llm-presets/:preset_id/apply',
    {
      // It reveals a secret, so an API key needs read_write although this is a GET.
      config: { access: { role: 'admin', area: 'organization', level: 'read_write' } },
      schema: {
        operationId: 'applyLlmPreset',
        tags,
        summary: 'The preset with its API key in clear, to configure an assistant (admin only)',
        params: IdParam('preset_id'),
        response: { 200: PresetOut, ...errors({ 404: 'Preset not found in your organization' }) },
      },
    },
    async (request) => {
      const { row, apiKey } = await presets.apply(principalOf(request), request.params.preset_id);
      return presetView(row, apiKey);
    },
  );
}
