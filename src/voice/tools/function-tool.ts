/**
 * A custom function tool: one synchronous invocation of a function in the organization's cloud
 * account (providers/cloud/functions.ts) per call of the tool, with `{tool, arguments, call_id}` as
 * its event. What the function returns is given to the model as text (up to MAX_ANSWER_BYTES). A
 * function that fails, or cannot be run — refused credentials, no such function, no answer in time —
 * is an `ok: false` outcome in words the model can pass on; the failure's kind is recorded, never the
 * credentials.
 */
import {
  type CloudCredentials,
  type CloudFunctions,
  CloudFunctionsError,
} from '../../providers/cloud/functions.js';
import { MAX_ANSWER_BYTES } from './http-tool.js';
import type { ToolContext, ToolOutcome } from './types.js';

export interface FunctionToolSpec {
  name: string;
  functionName: string;
  region: string;
  timeoutMs: number;
}

export interface FunctionToolDeps {
  functions: Pick<CloudFunctions, 'invoke'>;
  credentials: CloudCredentials;
}

/** The function's error object (`{errorType, errorMessage}`) in a sentence. */
function functionFailure(payload: string): string {
  try {
    const error = JSON.parse(payload) as { errorType?: unknown; errorMessage?: unknown };
    const type = typeof error.errorType === 'string' ? error.errorType : 'Error';
    const message = typeof error.errorMessage === 'string' ? error.errorMessage : '';
    return `${type}${message ? `: ${message}` : ''}`.slice(0, 500);
  } catch {
    return payload.slice(0, 500);
  }
}

/** Invokes the tool's function once with `args`. Never throws for the cloud's or the function's failures. */
export async function runFunctionTool(
  spec: FunctionToolSpec,
  deps: FunctionToolDeps,
  args: Record<string, unknown>,
  context: ToolContext,
): Promise<ToolOutcome> {
  const record = (extra: Record<string, unknown>) => ({
    type: 'function',
    function_name: spec.functionName,
    region: spec.region,
    ...extra,
  });
  const deadline = AbortSignal.timeout(spec.timeoutMs);
  const signal = AbortSignal.any([context.signal, deadline]);
  try {
    const answer = await deps.functions.invoke(
      deps.credentials,
      spec.region,
      spec.functionName,
      { tool: spec.name, arguments: args, call_id: context.callId },
      { signal },
    );
    if (answer.functionError) {
      return {
        ok: false,
        result: `The ${spec.name} tool failed: ${functionFailure(answer.payload)}`,
        record: record({ error: 'function_error', function_error: answer.functionError }),
      };
    }
    const bytes = Buffer.byteLength(answer.payload);
    const truncated = bytes > MAX_ANSWER_BYTES;
    const text = truncated
      ? `${Buffer.from(answer.payload).subarray(0, MAX_ANSWER_BYTES).toString('utf8')}\n[truncated: the answer was longer than ${MAX_ANSWER_BYTES / 1024} KB]`
      : answer.payload;
    return {
      ok: true,
      result: text === '' || text === 'null' ? '(no result)' : text,
      record: record({ bytes, ...(truncated ? { truncated: true } : {}) }),
    };
  } catch (error) {
    if (!(error instanceof CloudFunctionsError)) throw error;
    const failure = deadline.aborted ? 'timeout' : error.failure;
    const words: Record<string, string> = {
      timeout: `did not answer within ${Math.round(spec.timeoutMs / 1000)} seconds`,
      aborted: 'was cancelled',
      invalid_credentials: "could not run: the cloud account refused the organization's credentials",
      access_denied: 'could not run: the credentials may not invoke the function',
      not_found: `could not run: there is no function ${spec.functionName} in ${spec.region}`,
      failed: 'could not run: the cloud function service failed',
    };
    return {
      ok: false,
      result: `The ${spec.name} tool ${words[failure] ?? words.failed}.`,
      record: record({ error: failure, ...(error.status ? { cloud_status: error.status } : {}) }),
    };
  }
}
