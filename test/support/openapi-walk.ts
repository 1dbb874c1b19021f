/**
 * Walks the app's own OpenAPI document for the sweeps that must cover every operation: the security
 * sweep (every protected operation refuses a request without credentials) and the input sweeps
 * (NUL characters, non-decimal integers, out-of-range numbers and dates: never a 5xx). A route is
 * swept as soon as it is documented.
 */
import type { TestPlatform } from './harness.js';

export type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
const METHODS: readonly string[] = ['get', 'post', 'put', 'patch', 'delete'];

/** A JSON schema as the document gives it (after `$ref`s are followed). */
export type Schema = Record<string, unknown>;

export interface Parameter {
  name: string;
  in: 'path' | 'query' | 'header' | 'cookie';
  schema: Schema;
}

export interface Operation {
  method: Method;
  /** The OpenAPI path template, e.g. `/api/v1/users/me/api-keys/{key_id}`. */
  path: string;
  security: unknown[];
  parameters: Parameter[];
  /** The request body's schema per media type. */
  body: Record<string, Schema>;
}

export interface OpenApiDocument {
  paths: Record<string, Record<string, Record<string, unknown>>>;
  components?: { schemas?: Record<string, Schema> };
}

/** Every documented operation of the running app. */
export async function documentedOperations(t: TestPlatform): Promise<Operation[]> {
  const response = await t.app.inject({ method: 'GET', url: '/openapi.json' });
  if (response.statusCode !== 200) throw new Error(`openapi.json answered ${response.statusCode}`);
  const doc = response.json() as OpenApiDocument;
  const operations: Operation[] = [];
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const [method, operation] of Object.entries(item)) {
      if (!METHODS.includes(method)) continue;
      const parameters = ((operation.parameters as Parameter[] | undefined) ?? []).map((p) => ({
        ...p,
        schema: deref(doc, p.schema ?? {}),
      }));
      const content = (operation.requestBody as { content?: Record<string, { schema?: Schema }> } | undefined)
        ?.content;
      const body: Record<string, Schema> = {};
      for (const [type, media] of Object.entries(content ?? {})) body[type] = deref(doc, media.schema ?? {});
      operations.push({
        method: method.toUpperCase() as Method,
        path,
        security: (operation.security as unknown[] | undefined) ?? [],
        parameters,
        body,
      });
    }
  }
  return operations;
}

/** Follows `#/components/schemas/…` references, all the way down. */
export function deref(doc: OpenApiDocument, schema: unknown, depth = 0): Schema {
  if (depth > 12 || typeof schema !== 'object' || schema === null) return (schema ?? {}) as Schema;
  if (Array.isArray(schema)) return schema.map((s) => deref(doc, s, depth + 1)) as unknown as Schema;
  const ref = (schema as { $ref?: string }).$ref;
  if (ref) {
    const name = ref.replace('#/components/schemas/', '');
    return deref(doc, doc.components?.schemas?.[name] ?? {}, depth + 1);
  }
  const out: Schema = {};
  for (const [key, value] of Object.entries(schema)) out[key] = deref(doc, value, depth + 1);
  return out;
}

/** A value a parameter accepts: its first allowed value when it has a closed set, else `1`. */
export function sampleOf(schema: Schema): string {
  const branches = (schema.anyOf ?? schema.oneOf) as Schema[] | undefined;
  if (branches?.[0]) return sampleOf(branches[0]);
  if (Array.isArray(schema.enum) && schema.enum.length > 0) return String(schema.enum[0]);
  if (schema.const !== undefined) return String(schema.const);
  return '1';
}

/**
 * The URL of an operation with each path parameter filled by `fill` (already URL-encoded), or by a
 * value it accepts, so that the other parameters are not what a request is refused for.
 */
export function urlOf(
  operation: Operation,
  fill: (name: string) => string | undefined = () => undefined,
): string {
  return operation.path.replace(/\{([^}]+)\}/g, (_whole, name: string) => {
    const parameter = operation.parameters.find((p) => p.in === 'path' && p.name === name);
    return fill(name) ?? encodeURIComponent(sampleOf(parameter?.schema ?? {}));
  });
}

export type LeafKind = 'string' | 'integer' | 'number' | 'date' | 'open-object';

/** A place in a body where a value goes: its path (names, and 0 for array items) and its kind. */
export interface Leaf {
  path: Array<string | number>;
  kind: LeafKind;
  schema: Schema;
}

/** The kinds a schema accepts at one place (a union may accept several). */
export function kindsOf(schema: Schema): LeafKind[] {
  const branches = (schema.anyOf ?? schema.oneOf) as Schema[] | undefined;
  if (branches) return [...new Set(branches.flatMap(kindsOf))];
  const types = [schema.type].flat().filter((t): t is string => typeof t === 'string');
  const kinds: LeafKind[] = [];
  if (types.includes('string'))
    kinds.push(schema.format === 'date-time' || schema.format === 'date' ? 'date' : 'string');
  if (types.includes('integer')) kinds.push('integer');
  if (types.includes('number')) kinds.push('number');
  return kinds;
}

/** Every value place of a body schema (properties, array items, union branches), up to a depth. */
export function leavesOf(schema: Schema, path: Array<string | number> = [], depth = 0): Leaf[] {
  if (depth > 8) return [];
  const leaves: Leaf[] = [];
  const branches = (schema.anyOf ?? schema.oneOf ?? schema.allOf) as Schema[] | undefined;
  if (branches) {
    for (const branch of branches) leaves.push(...leavesOf(branch, path, depth + 1));
    return unique(leaves);
  }
  const types = [schema.type].flat();
  if (types.includes('object')) {
    const properties = (schema.properties ?? {}) as Record<string, Schema>;
    for (const [name, property] of Object.entries(properties))
      leaves.push(...leavesOf(property, [...path, name], depth + 1));
    if (schema.additionalProperties !== false && path.length > 0)
      leaves.push({ path, kind: 'open-object', schema });
  }
  if (types.includes('array') && schema.items)
    leaves.push(...leavesOf(schema.items as Schema, [...path, 0], depth + 1));
  for (const kind of kindsOf({ ...schema, anyOf: undefined, oneOf: undefined }))
    leaves.push({ path, kind, schema });
  return unique(leaves);
}

function unique(leaves: Leaf[]): Leaf[] {
  const seen = new Set<string>();
  return leaves.filter((leaf) => {
    const key = `${JSON.stringify(leaf.path)}:${leaf.kind}`;
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

/** A body holding only `value` at `path` (objects and arrays made along the way). */
export function bodyWith(path: Array<string | number>, value: unknown): unknown {
  if (path.length === 0) return value;
  const [head, ...rest] = path;
  if (typeof head === 'number') return [bodyWith(rest, value)];
  return { [head as string]: bodyWith(rest, value) };
}
