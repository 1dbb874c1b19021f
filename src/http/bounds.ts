/**
 * What a request value may be so that the database can hold it, stated in the request schemas
 * themselves (and so in the OpenAPI document): an integer is 32-bit — the `integer` columns ids and
 * counts live in — unless its schema gives bounds of its own, and a date or timestamp lies in the
 * years 0001–9999, which PostgreSQL, JavaScript's `Date` and ISO 8601 strings all share. Beyond
 * those a value would fail its statement (SQLSTATE class 22) instead of being refused with a 422.
 */
import type { FormatDefinition } from 'ajv';
import { fullFormats } from 'ajv-formats/dist/formats.js';

export const INT32_MIN = -2_147_483_648;
export const INT32_MAX = 2_147_483_647;

type Node = Record<string, unknown>;

/** Sub-schemas that hold a schema, or a list or map of them. */
const NESTED_ONE = ['items', 'additionalProperties', 'not', 'contains'];
const NESTED_LIST = ['anyOf', 'oneOf', 'allOf', 'prefixItems'];
const NESTED_MAP = ['properties', 'patternProperties'];

/** A copy of `schema` in which every integer without bounds of its own is 32-bit. */
export function boundedSchema<T>(schema: T): T {
  if (typeof schema !== 'object' || schema === null || Array.isArray(schema)) return schema;
  const node = schema as Node;
  const copy: Node = { ...node };
  const types = [node.type].flat();
  if (types.includes('integer')) {
    if (node.minimum === undefined && node.exclusiveMinimum === undefined) copy.minimum = INT32_MIN;
    if (node.maximum === undefined && node.exclusiveMaximum === undefined) copy.maximum = INT32_MAX;
  }
  for (const key of NESTED_ONE) if (isNode(node[key])) copy[key] = boundedSchema(node[key]);
  for (const key of NESTED_LIST)
    if (Array.isArray(node[key])) copy[key] = (node[key] as unknown[]).map((item) => boundedSchema(item));
  for (const key of NESTED_MAP) {
    if (!isNode(node[key])) continue;
    const map: Node = {};
    for (const [name, value] of Object.entries(node[key] as Node)) map[name] = boundedSchema(value);
    copy[key] = map;
  }
  return copy as T;
}

function isNode(value: unknown): value is Node {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

// ajv-formats' own checks (RFC 3339), which take the year 0000: refused here.
const standard = fullFormats as Record<'date' | 'date-time', { validate: (text: string) => boolean }>;
const fromYearOne = (text: string) => !text.startsWith('0000');

/** The `date` and `date-time` formats, replacing ajv-formats' own. */
export const DATE_FORMATS: Record<'date' | 'date-time', FormatDefinition<string>> = {
  date: { type: 'string', validate: (text) => standard.date.validate(text) && fromYearOne(text) },
  'date-time': {
    type: 'string',
    validate: (text) => standard['date-time'].validate(text) && fromYearOne(text),
  },
};
