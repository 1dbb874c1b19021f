/**
 * Numbers in paths, query strings and headers must be written as plain decimal digits. Ajv's type
 * coercion reads a string the way JavaScript's `+text` does, so `0x10`, `1e1`, `+16`, ` 16`, `16.`
 * and even the empty string would pass for numbers: `DELETE /assistants/0x10` deleted assistant 16.
 * The compiled validator of those parts is wrapped: a value meant as a number that is not plain
 * decimal text is refused before Ajv coerces it.
 */
import type { ErrorObject, ValidateFunction } from 'ajv';

type Node = Record<string, unknown>;
type NumberKind = { kind: 'integer' | 'number'; negative: boolean };

const TEXT: Record<NumberKind['kind'], RegExp> = {
  integer: /^[0-9]+$/,
  number: /^[0-9]+(?:\.[0-9]+)?$/,
};

/** What `schema` takes as a number, or nothing when it would also take a string as such. */
function numberKindOf(schema: unknown): NumberKind | undefined {
  if (typeof schema !== 'object' || schema === null) return undefined;
  const node = schema as Node;
  const branches = (node.anyOf ?? node.oneOf) as unknown[] | undefined;
  if (branches) {
    const kinds = branches.map((branch) => [(branch as Node).type].flat());
    // A union that also takes text (a number or a name, say) reads the value as text.
    if (kinds.some((types) => types.includes('string'))) return undefined;
    const found = branches.map(numberKindOf).filter((kind): kind is NumberKind => kind !== undefined);
    if (found.length === 0) return undefined;
    return {
      kind: found.some((k) => k.kind === 'number') ? 'number' : 'integer',
      negative: found.some((k) => k.negative),
    };
  }
  const types = [node.type].flat();
  if (types.includes('string')) return undefined;
  const kind = types.includes('number') ? 'number' : types.includes('integer') ? 'integer' : undefined;
  if (!kind) return undefined;
  const minimum = (node.minimum ?? node.exclusiveMinimum) as number | undefined;
  return { kind, negative: minimum === undefined || minimum < 0 };
}

/** The number-valued properties of an object schema (arrays by their items). */
function numberFields(schema: unknown): Map<string, NumberKind> {
  const fields = new Map<string, NumberKind>();
  const properties = ((schema as Node | null)?.properties ?? {}) as Record<string, Node>;
  for (const [name, property] of Object.entries(properties)) {
    const kind = numberKindOf([property.type].flat().includes('array') ? property.items : property);
    if (kind) fields.set(name, kind);
  }
  return fields;
}

function isDecimal(text: string, { kind, negative }: NumberKind): boolean {
  return TEXT[kind].test(negative && text.startsWith('-') ? text.slice(1) : text);
}

function decimalIssue(instancePath: string, name: string, kind: NumberKind): ErrorObject {
  return {
    keyword: 'decimalText',
    instancePath,
    schemaPath: `#/properties/${name}`,
    params: { type: kind.kind },
    message:
      kind.kind === 'integer'
        ? 'Input should be a valid integer, written as decimal digits'
        : 'Input should be a valid number, written as decimal digits',
  };
}

/** `validate` for one request part, refusing number-valued strings that are not plain decimal text. */
export function strictNumberText(validate: ValidateFunction, schema: unknown): ValidateFunction {
  const fields = numberFields(schema);
  if (fields.size === 0) return validate;
  const strict = ((data: unknown, ...rest: unknown[]) => {
    const issues: ErrorObject[] = [];
    if (typeof data === 'object' && data !== null) {
      for (const [name, kind] of fields) {
        const value = (data as Node)[name];
        if (typeof value === 'string') {
          if (!isDecimal(value, kind)) issues.push(decimalIssue(`/${name}`, name, kind));
        } else if (Array.isArray(value)) {
          for (const [index, item] of value.entries())
            if (typeof item === 'string' && !isDecimal(item, kind))
              issues.push(decimalIssue(`/${name}/${index}`, name, kind));
        }
      }
    }
    const valid = (validate as (...args: unknown[]) => boolean)(data, ...rest);
    if (issues.length === 0) {
      strict.errors = validate.errors;
      return valid;
    }
    // The other problems of the request are still told, but not a second one for the same value.
    const refused = new Set(issues.map((issue) => issue.instancePath));
    const others = (validate.errors ?? []).filter(
      (error) =>
        ![...refused].some(
          (path) => error.instancePath === path || error.instancePath.startsWith(`${path}/`),
        ),
    );
    strict.errors = [...issues, ...others];
    return false;
  }) as ValidateFunction;
  return strict;
}
