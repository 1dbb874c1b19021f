/**
 * POST /api/serverless/list-functions: the functions of a customer's cloud account, for configuring
 * function tools. The parameters may come as query parameters, form fields
 * (application/x-www-form-urlencoded) or a JSON body; a parameter in the body wins over the same one
 * in the query. The route lives in its own scope, which parses forms and answers errors with
 * `success: false` and a `message` added to the platform's envelope.
 */
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifySchemaCompiler } from 'fastify';
import { Type } from 'typebox';
import { access } from '../../http/access.js';
import { principalOf } from '../../http/auth.js';
import { installSuccessFlagErrors } from '../../http/errors.js';
import { errorsWith } from '../../http/responses.js';
import { SuccessFlagErrorBody } from '../../http/schemas.js';
import type { App } from '../../http/types.js';
import { DEFAULT_REGION, type ListFunctionsInput, type ServerlessService } from './service.js';
import { functionView, ListOut } from './views.js';

const tags = ['serverless'];

type Validator = ReturnType<FastifySchemaCompiler<unknown>>;

const Parameters = Type.Object(
  {
    access_key: Type.Optional(
      Type.String({ maxLength: 256, description: 'Access key id of the cloud account (required).' }),
    ),
    secret_key: Type.Optional(
      Type.String({ maxLength: 1024, description: 'Secret access key (required). Used for this call only.' }),
    ),
    region: Type.Optional(
      Type.String({ maxLength: 64, description: `Region to list (default \`${DEFAULT_REGION}\`).` }),
    ),
  },
  { additionalProperties: true },
);

/** Form fields; a field given several times keeps every value (and then fails the schema). */
function formFields(raw: string): Record<string, string | string[]> {
  const fields: Record<string, string | string[]> = {};
  for (const [name, value] of new URLSearchParams(raw)) {
    const current = fields[name];
    fields[name] = current === undefined ? value : [current, value].flat();
  }
  return fields;
}

/** Query parameters, overridden field by field by the body's (form or JSON). */
function parametersOf(query: ListFunctionsInput, body: ListFunctionsInput | undefined): ListFunctionsInput {
  const pick = (name: keyof ListFunctionsInput) => body?.[name] ?? query[name];
  return { access_key: pick('access_key'), secret_key: pick('secret_key'), region: pick('region') };
}

export async function serverlessRoutes(app: App, serverless: ServerlessService): Promise<void> {
  await app.register(async (plain) => {
    const scope = plain.withTypeProvider<TypeBoxTypeProvider>();
    installSuccessFlagErrors(scope);
    scope.addContentTypeParser(
      'application/x-www-form-urlencoded',
      { parseAs: 'string' },
      (_request, body, done) => done(null, formFields(body as string)),
    );
    scope.post(
      '/api/serverless/list-functions',
      {
        // Nothing is stored, so reading the assistants area (function tools are assistant
        // configuration) is enough for an API key.
        config: { access: access.area('assistants', 'read'), validationStatus: 400 },
        schema: {
          operationId: 'listServerlessFunctions',
          tags,
          summary: 'List every function of a cloud account (all pages), to configure function tools',
          description: `Parameters as query parameters, form fields (application/x-www-form-urlencoded) or a JSON body (the body may be left out); the body wins over the query. \`access_key\` and \`secret_key\` are required (400 otherwise) and are used for this call only: never stored, never logged. Errors other than 401 and 403 carry \`success: false\` and a \`message\`. 429 beyond the organization's listings per minute (default 10); 500 when the cloud fails or the listing takes longer than the deadline (default 30 s).`,
          consumes: ['application/json', 'application/x-www-form-urlencoded'],
          querystring: Parameters,
          body: Parameters,
          response: {
            200: ListOut,
            ...errorsWith(SuccessFlagErrorBody, {
              400: 'Missing or invalid parameters; credentials refused or denied by the cloud',
              413: 'Body larger than the limit (BODY_LIMIT_BYTES)',
              415: 'Unsupported media type: send application/json or application/x-www-form-urlencoded',
              429: 'Too many listings for the organization, or API key rate limit',
              500: 'The listing failed or took too long',
            }),
          },
        },
        // The body is optional (the parameters may all be in the query): an absent one is valid.
        validatorCompiler: (route) => {
          const validate = scope.validatorCompiler!(route);
          if (route.httpPart !== 'body') return validate;
          const optional: Validator = (data: unknown) => {
            if (data === null || data === undefined) return true;
            const valid = validate(data);
            optional.errors = (validate as Validator).errors;
            return valid;
          };
          return optional;
        },
      },
      async (request) => {
        const result = await serverless.listFunctions(
          principalOf(request),
          parametersOf(request.query, request.body as ListFunctionsInput | undefined),
        );
        const count = result.functions.length;
        return {
          success: true as const,
          message: `Found ${count} function${count === 1 ? '' : 's'} in ${result.region}`,
          functions: result.functions.map(functionView),
        };
      },
    );
  });
}
