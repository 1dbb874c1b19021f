/**
 * What the API says about each assistant setting, read from its own OpenAPI document (fetched once
 * per page load): the schema of a dotted path (`llm_settings.temperature`, `tools_settings.custom_tools.0.name`),
 * its help text, and the default that applies when the field is left empty — the create schema's for
 * a top-level field (`idle_timeout`: 10), the nested schema's inside an object (`temperature`: 0.7).
 */

/** The slice of JSON Schema the editor reads. */
export interface FieldSchema {
  type?: string;
  enum?: string[];
  anyOf?: FieldSchema[];
  properties?: Record<string, FieldSchema>;
  additionalProperties?: boolean | FieldSchema;
  items?: FieldSchema;
  description?: string;
  default?: unknown;
  minimum?: number;
  maximum?: number;
  maxLength?: number;
  format?: string;
  $ref?: string;
}

export interface FieldDocs {
  /** The schema at `path` (nullable unwrapped), undefined when the API has no such field. */
  schema(path: string): FieldSchema | undefined;
  /** Whether the field accepts null (`idle_message`: null means "say nothing"). */
  nullable(path: string): boolean;
  description(path: string): string | undefined;
  /** The default applying to an empty field, or undefined when it has none. */
  defaultOf(path: string): unknown;
}

interface OpenApiDocument {
  components: { schemas: Record<string, FieldSchema> };
}

let fetched: Promise<OpenApiDocument> | undefined;

/** The API's document, fetched once (it is public and does not change while the page is open). */
export function openApiDocument(): Promise<OpenApiDocument> {
  fetched ??= fetch('/openapi.json').then((response) => {
    if (!response.ok) throw new Error(`Could not read the API's description (${response.status})`);
    return response.json() as Promise<OpenApiDocument>;
  });
  fetched.catch(() => {
    fetched = undefined;
  });
  return fetched;
}

function withoutNull(schema: FieldSchema | undefined): FieldSchema | undefined {
  const branches = schema?.anyOf?.filter((branch) => branch.type !== 'null');
  if (schema && branches?.length === 1) {
    const { anyOf: _, ...rest } = schema;
    return { ...branches[0], ...rest };
  }
  return schema;
}

/** `{ $ref: '#/components/schemas/CustomTool' }` → that schema (named schemas are shared, not inlined). */
function resolved(
  schemas: Record<string, FieldSchema>,
  schema: FieldSchema | undefined,
): FieldSchema | undefined {
  const name = schema?.$ref?.split('/').at(-1);
  return name ? schemas[name] : schema;
}

function child(
  schemas: Record<string, FieldSchema>,
  schema: FieldSchema | undefined,
  key: string,
): FieldSchema | undefined {
  const node = withoutNull(resolved(schemas, schema));
  if (!node) return undefined;
  if (/^\d+$/.test(key) && node.items) return resolved(schemas, node.items);
  if (node.properties?.[key]) return resolved(schemas, node.properties[key]);
  return typeof node.additionalProperties === 'object'
    ? resolved(schemas, node.additionalProperties)
    : undefined;
}

/** Where `path` leads inside `root`, with the unwrapped schema and whether null is allowed there. */
function walkIn(schemas: Record<string, FieldSchema>, root: FieldSchema | undefined, path: string) {
  const raw = path.split('.').reduce<FieldSchema | undefined>((node, key) => child(schemas, node, key), root);
  return {
    raw,
    schema: withoutNull(raw),
    nullable: Boolean(raw?.anyOf?.some((branch) => branch.type === 'null')),
  };
}

export function fieldDocs(document: OpenApiDocument): FieldDocs {
  const { schemas } = document.components;
  const update = schemas.AssistantUpdate;
  const create = schemas.AssistantCreate;
  const walk = (root: FieldSchema | undefined, path: string) => walkIn(schemas, root, path);
  return {
    schema: (path) => walk(update, path).schema,
    nullable: (path) => walk(update, path).nullable,
    description: (path) => walk(update, path).raw?.description ?? walk(update, path).schema?.description,
    defaultOf(path) {
      // Top-level fields: the create schema's default is the one an assistant starts with.
      const top = !path.includes('.');
      const found = walk(top ? create : update, path);
      return found.raw?.default ?? found.schema?.default;
    },
  };
}

/** A default as a person reads it: `0.7`, `“Are you still there?”`, `on`, `none`. */
export function shownDefault(value: unknown): string | undefined {
  if (value === undefined) return undefined;
  if (value === null) return 'none';
  if (typeof value === 'boolean') return value ? 'on' : 'off';
  if (typeof value === 'string') return `“${value}”`;
  if (Array.isArray(value) && value.length === 0) return 'none';
  if (typeof value === 'object' && Object.keys(value).length === 0) return undefined;
  return JSON.stringify(value);
}

/** `max_tokens` → `Max tokens`: the label a field gets when its group does not name it. */
export function labelOf(key: string): string {
  const words = key.replace(/_/g, ' ');
  return words.charAt(0).toUpperCase() + words.slice(1);
}
