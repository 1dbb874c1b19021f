/**
 * Request validation: what a request may hold before any handler (or the database) sees it.
 *
 * - JSON bodies carry real types, so they are validated without coercion: with coercion a nullable
 *   field would quietly turn `0` or `false` into `null` (Ajv coerces into the `null` branch of a
 *   union). Path, query and header values arrive as strings and are coerced to the schema's types —
 *   but a number must be written as plain decimal digits first (`integer-text.ts`): Ajv's coercion
 *   would take `0x10`, `1e1`, `+16` or ` 16` for 16.
 * - Integers are 32-bit unless their schema says otherwise, and dates lie in the years 0001–9999
 *   (`bounds.ts`): values beyond what the database columns hold are a 422, not a failed statement.
 * - No string anywhere — path, query, body, object keys, form fields — holds U+0000, which
 *   PostgreSQL cannot store in text (`nul.ts`).
 * - A route's validators are compiled when the route first validates a request, not at start-up
 *   (`compiledOnFirstUse`): compiling all of them took most of the app's start-up, and a process
 *   usually serves a fraction of its routes soon after it starts.
 */
import { Ajv, type Options, type ValidateFunction } from 'ajv';
import addFormatsModule from 'ajv-formats';
import type { FastifyInstance, FastifySchema } from 'fastify';
import { boundedSchema, DATE_FORMATS } from './bounds.js';
import { strictNumberText } from './integer-text.js';
import { installNulGuard } from './nul.js';

// ajv-formats is CommonJS; its default export arrives wrapped under ESM.
const addFormats = ((addFormatsModule as unknown as { default?: typeof addFormatsModule }).default ??
  addFormatsModule) as unknown as (ajv: Ajv) => Ajv;

const common: Options = { allErrors: true, removeAdditional: false, useDefaults: true, strict: false };

function withFormats(ajv: Ajv): Ajv {
  addFormats(ajv);
  // The standard formats, restricted to the years a timestamp column and an ISO string share.
  for (const [name, format] of Object.entries(DATE_FORMATS)) ajv.addFormat(name, format);
  return ajv;
}

const REQUEST_PARTS = ['body', 'querystring', 'params', 'headers'] as const;

export function installValidation(app: FastifyInstance): void {
  const body = withFormats(new Ajv({ ...common, coerceTypes: false }));
  const strings = withFormats(new Ajv({ ...common, coerceTypes: 'array' }));
  app.setValidatorCompiler<FastifySchema>(({ schema, httpPart }) =>
    compiledOnFirstUse(() =>
      httpPart === 'body'
        ? body.compile(schema as object)
        : strictNumberText(strings.compile(schema as object), schema as object),
    ),
  );
  // Bounds are written into the route's schema, so the OpenAPI document states them too.
  app.addHook('onRoute', (route) => {
    const schema = route.schema as Record<string, unknown> | undefined;
    if (!schema) return;
    const bounded: Record<string, unknown> = { ...schema };
    for (const part of REQUEST_PARTS) if (schema[part]) bounded[part] = boundedSchema(schema[part]);
    route.schema = bounded as FastifySchema;
  });
  installNulGuard(app);
}

/**
 * A validator that compiles itself on its first call. A schema that cannot be compiled then fails
 * its route's first request (a 500) instead of the start-up; every route's tests send it requests.
 */
export function compiledOnFirstUse(compile: () => ValidateFunction): ValidateFunction {
  let compiled: ValidateFunction | undefined;
  const validate = ((data: unknown, ...context: unknown[]) => {
    compiled ??= compile();
    const valid = (compiled as (...args: unknown[]) => boolean)(data, ...context);
    validate.errors = compiled.errors;
    return valid;
  }) as ValidateFunction;
  // Fastify hands Ajv its data context (the request as the parent, so that coercion and defaults can
  // replace a whole request part) only to functions that carry Ajv's `schemaEnv`; this one passes
  // the context on to the compiled function, which is Ajv's or strictNumberText's around it.
  Object.defineProperty(validate, 'schemaEnv', { value: true });
  return validate;
}
