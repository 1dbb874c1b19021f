/**
 * Reading the app's OpenAPI document in tests: every object in it with its JSON path, its operations,
 * and an Ajv (JSON Schema 2020-12) that resolves the document's `#/components/…` references.
 */
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';

export type Json = Record<string, unknown>;
const addFormats = ((addFormatsModule as unknown as { default?: typeof addFormatsModule }).default ??
  addFormatsModule) as unknown as (ajv: Ajv2020) => Ajv2020;

export const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Every object inside `value`, with the JSON path to it. */
export function* objects(value: unknown, path = ''): Generator<[string, Json]> {
  if (Array.isArray(value)) {
    for (const [i, item] of value.entries()) yield* objects(item, `${path}/${i}`);
  } else if (isObject(value)) {
    yield [path, value];
    for (const [key, item] of Object.entries(value)) yield* objects(item, `${path}/${key}`);
  }
}

const METHODS = ['get', 'put', 'post', 'delete', 'patch'];
/** `METHOD path` and the operation, for every operation of `items` (the paths or the webhooks). */
export function operations(items: unknown): Array<[string, Json]> {
  return Object.entries((items ?? {}) as Record<string, Json>).flatMap(([path, item]) =>
    METHODS.filter((m) => isObject(item[m])).map(
      (m) => [`${m.toUpperCase()} ${path}`, item[m] as Json] as [string, Json],
    ),
  );
}

/** An Ajv that resolves `doc`'s `#/components/schemas/…` references. */
export function documentAjv(doc: Json): {
  ajv: Ajv2020;
  compile(schema: unknown): ReturnType<Ajv2020['compile']>;
} {
  const ajv = addFormats(new Ajv2020({ strict: false, allErrors: true }));
  const rebased = JSON.parse(
    JSON.stringify({ components: doc.components }).replaceAll('"#/components/', '"doc.json#/components/'),
  );
  ajv.addSchema({ $id: 'doc.json', ...rebased });
  let n = 0;
  return {
    ajv,
    compile(schema: unknown) {
      const text = JSON.stringify(schema).replaceAll('"#/components/', '"doc.json#/components/');
      n += 1;
      return ajv.compile({ ...JSON.parse(text), $id: `check-${n}.json` });
    },
  };
}
