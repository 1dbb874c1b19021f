/**
 * `tools_settings.custom_tools`: the tools an assistant's model may call in a live call beyond the
 * built-in ones — an HTTP endpoint of the customer's, or a function in the organization's cloud
 * account (voice/tools/custom-tools.ts runs them). The schema says each tool's shape and defaults;
 * `customToolIssues` says what a schema cannot: unique names, none a built-in's, a usable JSON
 * Schema of parameters, header names we do not set ourselves. Tools stored before this shape existed
 * (a `name` and anything else) stay readable: the answer's schema takes them as they are.
 */
import { type Static, Type } from 'typebox';
import { literalUnion } from '../../lib/schema.js';
import type { ValidationIssue } from '../errors.js';

/** The tools the platform itself offers a call; a custom tool may not take their names. */
export const BUILT_IN_TOOL_NAMES = [
  'end_call',
  'transfer_call',
  'update_context',
  'collect_digits',
  'send_digits',
] as const;

export const HTTP_TOOL_METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] as const;

const DEFAULT_PARAMETERS = { type: 'object', properties: {} };

const ToolName = Type.String({
  minLength: 1,
  maxLength: 64,
  pattern: '^[A-Za-z0-9_-]+$',
  description: 'The name the model calls it by: letters, digits, _ and - (up to 64)',
});

export const CustomTool = Type.Object(
  {
    name: ToolName,
    description: Type.String({
      minLength: 1,
      maxLength: 1024,
      description: 'What the tool does and when to use it: the model decides from this',
    }),
    type: literalUnion(['http', 'function'], {
      description: "http: a request to an endpoint; function: a function in the organization's cloud account",
    }),
    parameters: Type.Object(
      {},
      {
        additionalProperties: true,
        default: DEFAULT_PARAMETERS,
        description: 'A JSON Schema of an object: the arguments the model fills in',
      },
    ),
    filler_message: Type.Optional(
      Type.String({
        maxLength: 500,
        description:
          'Said while the tool runs longer than 1.5 s (default "One moment, please."; "" for nothing)',
      }),
    ),
    timeout_seconds: Type.Integer({
      minimum: 1,
      maximum: 30,
      default: 10,
      description: 'Seconds the tool may take before the call goes on without it (1 to 30)',
    }),
    http: Type.Optional(
      Type.Object(
        {
          url: Type.String({
            format: 'uri',
            pattern: '^https?://',
            maxLength: 2048,
            description: 'The endpoint called with the arguments (http or https)',
          }),
          method: literalUnion(HTTP_TOOL_METHODS, { default: 'POST', description: 'The HTTP method' }),
          headers: Type.Optional(
            Type.Object(
              {},
              {
                additionalProperties: Type.String({ maxLength: 4096 }),
                maxProperties: 20,
                description:
                  'Sent with every request; values are secrets (sealed at rest, masked when shown)',
              },
            ),
          ),
        },
        { additionalProperties: false },
      ),
    ),
    function: Type.Optional(
      Type.Object(
        {
          function_name: Type.String({
            minLength: 1,
            maxLength: 170,
            pattern: '^[A-Za-z0-9_:.$-]+$',
            description: 'A name, ARN or partial ARN, optionally with a :version or alias',
          }),
          region: Type.Optional(
            Type.String({
              pattern: '^[a-z]{2}(-[a-z]+)+-\\d{1,2}$',
              maxLength: 32,
              description: "Default: the organization's cloud_functions region, else us-east-1",
            }),
          ),
        },
        { additionalProperties: false },
      ),
    ),
  },
  { additionalProperties: false, title: 'CustomTool' },
);
export type CustomTool = Static<typeof CustomTool>;

/** A tool as stored before the shape above existed: shown as it is. */
const OlderCustomTool = Type.Object({ name: Type.String() }, { additionalProperties: true });

export const CustomTools = Type.Array(CustomTool, { maxItems: 50, default: [] });
/** The answer's: today's shape, or an older stored tool as it is. */
export const CustomToolsOut = Type.Array(Type.Union([CustomTool, OlderCustomTool]));

/** Header names the platform sets itself (the signature, the body's framing) or that name the peer. */
const RESERVED_HEADER = /^(x-switchboard-.*|host|content-length|content-type|transfer-encoding|connection)$/i;
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

type Json = Record<string, unknown>;
const isObject = (value: unknown): value is Json =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * What is wrong with the custom tools being saved, beyond their schema. `schemaProblem` says why a
 * value is no usable JSON Schema (the assistants service's checker), or nothing.
 */
export function customToolIssues(
  tools: unknown,
  schemaProblem: (schema: object) => string | undefined,
): ValidationIssue[] {
  if (!Array.isArray(tools)) return [];
  const issues: ValidationIssue[] = [];
  const issue = (loc: Array<string | number>, msg: string, type = 'value_error') =>
    issues.push({ loc: ['body', 'tools_settings', 'custom_tools', ...loc], msg, type });
  const seen = new Set<string>();
  tools.forEach((tool: unknown, index) => {
    if (!isObject(tool)) return;
    const name = String(tool.name);
    if ((BUILT_IN_TOOL_NAMES as readonly string[]).includes(name)) {
      issue([index, 'name'], `${name} is a built-in tool; choose another name`);
    } else if (seen.has(name)) {
      issue([index, 'name'], `Another custom tool is already named ${name}`);
    }
    seen.add(name);

    const parameters = tool.parameters;
    if (isObject(parameters)) {
      const problem = schemaProblem(parameters);
      if (problem) issue([index, 'parameters'], `Not a valid JSON Schema: ${problem}`);
      else if (parameters.type !== 'object')
        issue([index, 'parameters', 'type'], 'parameters must describe an object (type: "object")');
    }

    const kind = tool.type === 'http' ? 'http' : 'function';
    const other = kind === 'http' ? 'function' : 'http';
    if (!isObject(tool[kind])) issue([index, kind], `A ${kind} tool needs ${kind}`, 'missing');
    if (tool[other] !== undefined)
      issue([index, other], `${other} belongs to ${other} tools; this one is ${kind}`, 'extra_forbidden');

    const headers = isObject(tool.http) ? tool.http.headers : undefined;
    if (isObject(headers)) {
      for (const header of Object.keys(headers)) {
        if (!HEADER_NAME.test(header) || header.length > 100)
          issue([index, 'http', 'headers', header], 'Not a header name');
        else if (RESERVED_HEADER.test(header))
          issue([index, 'http', 'headers', header], `${header} is set by the platform`);
      }
    }
  });
  return issues;
}

/** The tool URLs the request gives, for the outbound-target policy (target-fields.ts). */
export function customToolUrls(tools: unknown): Array<{ loc: Array<string | number>; url: string }> {
  if (!Array.isArray(tools)) return [];
  return tools.flatMap((tool: unknown, index) => {
    const url = isObject(tool) && isObject(tool.http) ? tool.http.url : undefined;
    return typeof url === 'string'
      ? [{ loc: ['body', 'tools_settings', 'custom_tools', index, 'http', 'url'], url }]
      : [];
  });
}
