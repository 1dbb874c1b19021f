/**
 * Closed sets of strings as TypeBox schemas. The lists live as `as const` arrays (provider ids,
 * statuses); this turns one into a union of literals, so the set is written once and the handler's
 * static type is still the exact literals. The JSON schema is the same `anyOf` of `const`s a
 * hand-written `Type.Union([Type.Literal(…), …])` gives (the OpenAPI document turns it into an enum).
 */
import { type TLiteral, type TSchemaOptions, type TUnion, Type } from 'typebox';

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
