/** /api/v1/assistants: voice agent configurations. */

import { Type } from 'typebox';
import { access } from '../../http/access.js';
import { principalOf } from '../../http/auth.js';
import { SkipLimitQuery, skipLimitOf } from '../../http/pagination.js';
import { errors, noContent } from '../../http/responses.js';
import { IdParam } from '../../http/schemas.js';
import type { App } from '../../http/types.js';
import { AssistantCreate, AssistantOut, AssistantUpdate } from './schemas.js';
import type { AssistantService } from './service.js';
import { assistantView } from './views.js';

const tags = ['assistants'];

export function assistantRoutes(app: App, assistants: AssistantService): void {
  app.post(
    '/api/v1/assistants',
    {
      config: { access: access.area('assistants') },
      schema: {
        operationId: 'createAssistant',
        tags,
        summary: 'Create an assistant; every omitted setting takes its documented default',
        body: AssistantCreate,
        response: { 201: AssistantOut, ...errors({ 409: 'An assistant with this name already exists' }) },
      },
    },
    async (request, reply) =>
      reply.code(201).send(assistantView(await assistants.create(principalOf(request), request.body))),
  );

  app.get(
    '/api/v1/assistants',
    {
      config: { access: access.area('assistants') },
      schema: {
        operationId: 'listAssistants',
        tags,
        summary: "The organization's assistants (total in X-Total-Count)",
        querystring: Type.Object({
          ...SkipLimitQuery,
          active_only: Type.Optional(Type.Boolean({ default: false })),
        }),
        response: { 200: Type.Array(AssistantOut) },
      },
    },
    async (request, reply) => {
      const { assistants: views, total } = await assistants.list(principalOf(request), {
        ...skipLimitOf(request.query),
        activeOnly: request.query.active_only ?? false,
      });
      reply.header('X-Total-Count', total);
      return views.map(assistantView);
    },
  );

  app.get(
    '/api/v1/assistants/:assistant_id',
    {
      config: { access: access.area('assistants') },
      schema: {
        operationId: 'getAssistant',
        tags,
        summary: 'One assistant, secrets masked',
        params: IdParam('assistant_id'),
        response: { 200: AssistantOut, ...errors({ 404: 'Assistant not found in your organization' }) },
      },
    },
    async (request) => assistantView(await assistants.get(principalOf(request), request.params.assistant_id)),
  );

  app.put(
    '/api/v1/assistants/:assistant_id',
    {
      config: { access: access.area('assistants') },
      schema: {
        operationId: 'updateAssistant',
        tags,
        summary: 'Change the fields named; a nested object given replaces the stored one (after validation)',
        params: IdParam('assistant_id'),
        body: AssistantUpdate,
        response: {
          200: AssistantOut,
          ...errors({
            404: 'Assistant not found in your organization',
            409: 'An assistant with this name already exists',
          }),
        },
      },
    },
    async (request) =>
      assistantView(await assistants.update(principalOf(request), request.params.assistant_id, request.body)),
  );

  app.delete(
    '/api/v1/assistants/:assistant_id',
    {
      config: { access: access.area('assistants') },
      schema: {
        operationId: 'deleteAssistant',
        tags,
        summary: 'Delete an assistant',
        params: IdParam('assistant_id'),
        response: {
          204: Type.Null(),
          ...errors({
            404: 'Assistant not found in your organization',
            409: 'The assistant is in use (phone numbers, campaigns or graphs route to it)',
          }),
        },
      },
    },
    async (request, reply) => {
      await assistants.remove(principalOf(request), request.params.assistant_id);
      return noContent(reply);
    },
  );
}
