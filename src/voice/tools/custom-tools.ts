/**
 * The custom tools of one call: from the assistant's `tools_settings.custom_tools` and the
 * organization's cloud credentials, the CallTools the session offers the model — each with the
 * definition the model sees (name, description, parameters), its filler, and how it runs (an HTTP
 * request, http-tool.ts; a cloud function, function-tool.ts). A tool that cannot run in this call is
 * left out, and why is returned beside the tools for the call's record: a function tool while the
 * organization has no `cloud_functions` credential, a tool stored in an older shape.
 */
import type { CustomTool } from '../../domains/assistants/custom-tools.js';
import type { AssistantSettings } from '../../domains/assistants/schemas.js';
import type { CloudFunctionsChoice } from '../../domains/runtime/resolve-config.js';
import type { OutboundTargets } from '../../lib/outbound-target.js';
import type { CloudFunctions } from '../../providers/cloud/functions.js';
import { runFunctionTool } from './function-tool.js';
import { type HttpToolMethod, runHttpTool } from './http-tool.js';
import type { CallTool } from './types.js';

/** Where a function tool runs when neither it nor the credential names a region. */
export const DEFAULT_FUNCTION_REGION = 'us-east-1';
const DEFAULT_TIMEOUT_SECONDS = 10;

export interface CustomToolDeps {
  targets: OutboundTargets;
  functions: Pick<CloudFunctions, 'invoke'>;
  /** The organization's webhook signing secret, which signs HTTP tools' requests too. */
  signingSecret(): Promise<string>;
}

/** A tool left out of the call, for the `call.vendor_skipped`-style record. */
export interface SkippedTool {
  name: string;
  reason: string;
}

export interface CustomCallTools {
  tools: CallTool[];
  skipped: SkippedTool[];
}

type Json = Record<string, unknown>;
const isObject = (value: unknown): value is Json =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

export function customCallTools(
  settings: AssistantSettings,
  cloud: CloudFunctionsChoice | null,
  deps: CustomToolDeps,
): CustomCallTools {
  const stored: unknown[] = settings.tools_settings?.custom_tools ?? [];
  const tools: CallTool[] = [];
  const skipped: SkippedTool[] = [];
  for (const item of stored) {
    if (!isObject(item) || typeof item.name !== 'string') continue;
    const tool = item as Partial<CustomTool> & { name: string };
    const skip = (reason: string) => skipped.push({ name: tool.name, reason });
    if (tool.type !== 'http' && tool.type !== 'function') {
      skip(`custom tool ${tool.name} has no type (http or function): save it again in today's shape`);
      continue;
    }
    const definition = {
      name: tool.name,
      description: typeof tool.description === 'string' ? tool.description : '',
      parameters: isObject(tool.parameters) ? tool.parameters : { type: 'object', properties: {} },
    };
    const timeoutMs = (tool.timeout_seconds ?? DEFAULT_TIMEOUT_SECONDS) * 1000;
    const filler = typeof tool.filler_message === 'string' ? { filler: tool.filler_message } : {};

    if (tool.type === 'http') {
      if (!isObject(tool.http) || typeof tool.http.url !== 'string') {
        skip(`custom tool ${tool.name} is an http tool without http.url`);
        continue;
      }
      const spec = {
        name: tool.name,
        url: tool.http.url,
        method: (tool.http.method ?? 'POST') as HttpToolMethod,
        headers: { ...(tool.http.headers ?? {}) } as Record<string, string>,
        timeoutMs,
      };
      tools.push({ definition, ...filler, run: (args, context) => runHttpTool(spec, deps, args, context) });
      continue;
    }

    if (!isObject(tool.function) || typeof tool.function.function_name !== 'string') {
      skip(`custom tool ${tool.name} is a function tool without function.function_name`);
      continue;
    }
    if (!cloud) {
      skip(
        `custom tool ${tool.name} needs the organization's cloud_functions credentials (PUT /api/v1/organization)`,
      );
      continue;
    }
    const spec = {
      name: tool.name,
      functionName: tool.function.function_name,
      region: tool.function.region ?? cloud.region ?? DEFAULT_FUNCTION_REGION,
      timeoutMs,
    };
    const credentials = { accessKeyId: cloud.accessKeyId, secretAccessKey: cloud.secretAccessKey };
    tools.push({
      definition,
      ...filler,
      run: (args, context) =>
        runFunctionTool(spec, { functions: deps.functions, credentials }, args, context),
    });
  }
  return { tools, skipped };
}
