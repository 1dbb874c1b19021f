/**
 * Request validation. JSON bodies carry real types, so they are validated without coercion: with
 * coercion a nullable field would quietly turn `0` or `false` into `null` (Ajv coerces into the
 * `null` branch of a union). Path, query and header values arrive as strings and are coerced to the
 * schema's types.
 */
import { Ajv, type Options } from 'ajv';
import addFormatsModule from 'ajv-formats';
import type { FastifyInstance, FastifySchema } from 'fastify';

// ajv-formats is CommonJS; its default export arrives wrapped under ESM.
const addFormats = ((addFormatsModule as unknown as { default?: typeof addFormatsModule }).default ??
  addFormatsModule) as unknown as (ajv: Ajv) => Ajv;

const common: Options = { allErrors: true, removeAdditional: false, useDefaults: true, strict: false };

export function installValidation(app: FastifyInstance): void {
  const body = addFormats(new Ajv({ ...common, coerceTypes: false }));
  const strings = addFormats(new Ajv({ ...common, coerceTypes: 'array' }));
  app.setValidatorCompiler<FastifySchema>(({ schema, httpPart }) =>
    (httpPart === 'body' ? body : strings).compile(schema as object),
  );
}
