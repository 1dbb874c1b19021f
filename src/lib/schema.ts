/**
 * TypeBox helpers shared by every schema and view, HTTP or not: timestamps, nullables, open objects,
 * and written-out defaults. The HTTP layer's own schemas (error envelopes, path ids) are in
 * http/schemas.ts.
 */
import { type TLiteral, type TSchema, type TSchemaOptions, type TUnion, Type } from 'typebox';

/** Timestamps leave as ISO 8601 strings (fast-json-stringify formats `Date` values for `date-time`). */
export const Timestamp = Type.String({ format: 'date-time' });
export const NullableTimestamp = Type.Union([Timestamp, Type.Null()]);

/** `schema` or null. */
export const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()]);

/** A JSON object with any fields (settings, preferences…). */
export const OpenObject = Type.Object({}, { additionalProperties: true });

/** JSON form of a timestamp column. */
export function iso(value: Date): string;
export function iso(value: Date | null): string | null;
export function iso(value: Date | null): string | null {
  return value === null ? null : value.toISOString();
}

/** The parts of a JSON schema that defaults live in. */
interface Node {
  properties?: Record<string, Node>;
  anyOf?: Node[];
  oneOf?: Node[];
  allOf?: Node[];
  items?: Node;
  default?: unknown;
}

const isPlainObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** `value` as Ajv's `useDefaults` leaves it after validating against `schema` (object properties only). */
function withDefaults(value: Record<string, unknown>, schema: Node): Record<string, unknown> {
  const out = { ...value };
  for (const [name, property] of Object.entries((schema.properties ?? {}) as Record<string, Node>)) {
    if (out[name] === undefined && property.default !== undefined)
      out[name] = structuredClone(property.default);
    const inner = out[name];
    if (isPlainObject(inner) && property.properties) out[name] = withDefaults(inner, property);
  }
  return out;
}

/**
 * Writes every object `default` inside `schema` out in full — the value Ajv's `useDefaults` makes of
 * it, its properties' own defaults filled in — so that each default is valid against the schema it
 * sits on (a `{}` default of an object with required fields is not), while a request gets exactly
 * what it got before. Mutates `schema` (at definition time) and returns it.
 */
export function completeDefaults<T extends TSchema>(schema: T): T {
  const visit = (node: Node) => {
    for (const child of Object.values(node.properties ?? {})) visit(child);
    for (const key of ['anyOf', 'oneOf', 'allOf'] as const) for (const child of node[key] ?? []) visit(child);
    if (isPlainObject(node.items)) visit(node.items);
    if (isPlainObject(node.default) && node.properties) node.default = withDefaults(node.default, node);
  };
  visit(schema as Node);
  return schema;
}

/**
 * A closed set of strings (provider ids, statuses, kinds) as a union of literals: the list is written
 * once as an `as const` array and the handler's static type is still the exact literals. The JSON
 * schema is the `anyOf` of `const`s a hand-written `Type.Union([Type.Literal(…), …])` gives (the
 * OpenAPI document turns it into an enum).
 */

type Literals<T extends readonly string[]> = { -readonly [K in keyof T]: TLiteral<T[K] & string> };

export function literalUnion<const T extends readonly string[]>(
  values: T,
  options?: TSchemaOptions,
): TUnion<Literals<T>> {
  // TypeBox cannot see through `map` to the tuple's literals: the cast restores what it builds.
  return Type.Union(
    values.map((value) => Type.Literal(value)),
    options,
  ) as unknown as TUnion<Literals<T>>;
}
