/**
 * Turns the document @fastify/swagger builds from the route schemas into one a generator reads
 * well: every schema with a PascalCase `title` becomes `components.schemas[title]`, used through
 * `$ref` (nested ones too), and closed sets written as unions of string literals become enums.
 * Titles are annotations, so request validation (which uses the TypeBox schemas, not this
 * document) is unchanged. Two different schemas under one title throw: a generated client would
 * otherwise get one type for two shapes.
 */

type Json = Record<string, unknown>;

const NAME = /^[A-Z][A-Za-z0-9]*$/;
const REF = '#/components/schemas/';

/** Keywords whose value is one schema, an array of schemas, or a map of schemas. */
const ONE = ['items', 'additionalProperties', 'not', 'if', 'then', 'else', 'contains', 'propertyNames'];
const MANY = ['anyOf', 'oneOf', 'allOf', 'prefixItems'];
const MAP = ['properties', 'patternProperties', '$defs', 'definitions', 'dependentSchemas'];

const isObject = (value: unknown): value is Json =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** Applies `visit` to every sub-schema of `schema` (bottom-up: children first), replacing each. */
function mapSchema(schema: unknown, visit: (schema: Json) => Json): unknown {
  if (!isObject(schema)) return schema;
  const out: Json = { ...schema };
  for (const key of ONE) if (isObject(out[key])) out[key] = mapSchema(out[key], visit);
  for (const key of MANY)
    if (Array.isArray(out[key])) out[key] = (out[key] as unknown[]).map((s) => mapSchema(s, visit));
  for (const key of MAP)
    if (isObject(out[key]))
      out[key] = Object.fromEntries(
        Object.entries(out[key] as Json).map(([name, s]) => [name, mapSchema(s, visit)]),
      );
  return visit(out);
}

/**
 * A union whose branches are all string literals (`{type:'string', enum:[x]}` or `const`) becomes
 * one `{type:'string', enum:[…]}`; when a `null` branch sits beside them, the literals merge into
 * one enum branch next to it. Anything else is left as it is.
 */
export function literalUnionAsEnum(input: Json): Json {
  // A lone literal is written as @fastify/swagger writes it (`enum` of one), whoever built it.
  const schema = 'const' in input ? constAsEnum(input) : input;
  const branches = schema.anyOf;
  if (!Array.isArray(branches) || branches.length === 0) return schema;
  const literal = (b: unknown): unknown[] | undefined => {
    if (!isObject(b) || b.type !== 'string') return undefined;
    const keys = Object.keys(b).filter((k) => k !== 'type');
    if (keys.length === 1 && keys[0] === 'const') return [b.const];
    if (keys.length === 1 && keys[0] === 'enum' && Array.isArray(b.enum)) return b.enum;
    return undefined;
  };
  const isNull = (b: unknown) => isObject(b) && b.type === 'null' && Object.keys(b).length === 1;
  const values: unknown[] = [];
  let nulls = 0;
  for (const branch of branches) {
    const found = literal(branch);
    if (found) values.push(...found);
    else if (isNull(branch)) nulls += 1;
    else return schema;
  }
  if (values.length === 0) return schema;
  const { anyOf: _, ...rest } = schema;
  const merged = { type: 'string', enum: [...new Set(values)] };
  return nulls > 0 ? { ...rest, anyOf: [merged, { type: 'null' }] } : { ...rest, ...merged };
}

function constAsEnum(schema: Json): Json {
  const { const: value, ...rest } = schema;
  return { ...rest, enum: [value] };
}

/** JSON with sorted keys: two schemas are the same exactly when these strings are equal. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (isObject(value))
    return `{${Object.keys(value)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical(value[k])}`)
      .join(',')}}`;
  return JSON.stringify(value);
}

/**
 * The part of a named schema that must agree between its uses: all but its own description and
 * examples (@fastify/swagger moves a body's examples out to its media object, a nested use keeps them).
 */
function identity(schema: Json): string {
  const { description: _d, examples: _e, example: _x, ...rest } = schema;
  return canonical(rest);
}

export class NamedSchemas {
  readonly components: Record<string, Json> = {};
  readonly #identities = new Map<string, { identity: string; where: string }>();

  /** Seeds `components` with the defining form of a schema, so its own description is the one kept. */
  define(schema: Json, where = 'definition'): void {
    this.normalise(schema, where);
  }

  /**
   * `schema` with every named sub-schema (and itself, when named) replaced by a `$ref`. A use whose
   * description differs from the component's keeps it beside the `$ref` (allowed in OpenAPI 3.1),
   * unless `impliedDescription` says the surrounding object already carries it.
   */
  normalise(schema: unknown, where: string, impliedDescription?: string): unknown {
    return mapSchema(schema, (node) => {
      const merged = literalUnionAsEnum(node);
      const title = merged.title;
      if (typeof title !== 'string' || !NAME.test(title)) return merged;
      const id = identity(merged);
      const known = this.#identities.get(title);
      if (!known) {
        this.#identities.set(title, { identity: id, where });
        this.components[title] = merged;
      } else if (known.identity !== id) {
        throw new Error(
          `Two different schemas are titled "${title}" (at ${known.where} and at ${where}): give one of them another title`,
        );
      } else if (merged.examples && !this.components[title]?.examples) {
        this.components[title] = { ...this.components[title], examples: merged.examples };
      }
      const ref: Json = { $ref: `${REF}${title}` };
      const description = merged.description;
      if (
        typeof description === 'string' &&
        description !== this.components[title]?.description &&
        description !== impliedDescription
      )
        ref.description = description;
      return ref;
    });
  }
}

const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];

/** Every schema of the operations of `items` (paths or webhooks) is normalised in place. */
export function normaliseOperations(named: NamedSchemas, items: Record<string, Json>, kind: string): void {
  for (const [path, item] of Object.entries(items)) {
    for (const method of METHODS) {
      const operation = item[method];
      if (!isObject(operation)) continue;
      const at = `${kind} ${method.toUpperCase()} ${path}`;
      for (const parameter of (operation.parameters as Json[] | undefined) ?? [])
        if (parameter.schema) parameter.schema = named.normalise(parameter.schema, `${at} ${parameter.name}`);
      const body = operation.requestBody as Json | undefined;
      normaliseContent(named, body?.content, `${at} body`, body?.description as string | undefined);
      for (const [status, response] of Object.entries((operation.responses as Json | undefined) ?? {})) {
        if (!isObject(response)) continue;
        normaliseContent(named, response.content, `${at} ${status}`, response.description as string);
        for (const header of Object.values((response.headers as Json | undefined) ?? {}))
          if (isObject(header) && header.schema)
            header.schema = named.normalise(header.schema, `${at} ${status} header`);
      }
    }
  }
}

function normaliseContent(named: NamedSchemas, content: unknown, at: string, description?: string): void {
  if (!isObject(content)) return;
  for (const media of Object.values(content)) {
    if (!isObject(media) || !isObject(media.schema)) continue;
    // @fastify/swagger moved a body's one example to the media object; the component keeps it too.
    if ('example' in media && !media.schema.examples)
      media.schema = { ...media.schema, examples: [media.example] };
    media.schema = named.normalise(media.schema, at, description);
  }
}

/**
 * The error answers nearly every operation shares — same status, same description, same envelope —
 * are written once under `components.responses` and used through `$ref`, the way named schemas are.
 * A route that says more about such a status (its own description) keeps its own answer.
 */
const SHARED_RESPONSES: Record<string, string> = {
  '400': 'BadRequest',
  '401': 'Unauthorized',
  '413': 'PayloadTooLarge',
  '415': 'UnsupportedMediaType',
  '422': 'ValidationFailed',
  '429': 'RateLimited',
};

export function shareCommonResponses(paths: Record<string, Json>): Record<string, Json> {
  const uses = new Map<string, { status: string; response: Json; places: Json[] }>();
  for (const item of Object.values(paths))
    for (const operation of Object.values(item)) {
      const responses = (operation as Json).responses as Json | undefined;
      for (const [status, response] of Object.entries(responses ?? {})) {
        if (!SHARED_RESPONSES[status]) continue;
        const key = `${status} ${JSON.stringify(response)}`;
        const use = uses.get(key) ?? { status, response: response as Json, places: [] };
        use.places.push(responses as Json);
        uses.set(key, use);
      }
    }
  // Per status, the answer most operations give is the shared one (ties: the first met).
  const chosen = new Map<string, { response: Json; places: Json[] }>();
  for (const use of uses.values()) {
    const current = chosen.get(use.status);
    if (use.places.length > 1 && (!current || use.places.length > current.places.length))
      chosen.set(use.status, use);
  }
  const shared: Record<string, Json> = {};
  for (const [status, use] of [...chosen].sort(([a], [b]) => a.localeCompare(b))) {
    const name = SHARED_RESPONSES[status]!;
    shared[name] = use.response;
    for (const responses of use.places) responses[status] = { $ref: `#/components/responses/${name}` };
  }
  return shared;
}
