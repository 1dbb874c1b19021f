/**
 * The simulated cloud function API's Invoke (`POST /2015-03-31/functions/{name}/invocations`), as
 * the real service answers a synchronous (RequestResponse) invocation: the function's return value
 * as the JSON body with 200; a function that throws, or runs past its `Timeout`, still answers 200,
 * with `X-Amz-Function-Error: Unhandled` and `{errorType, errorMessage, trace}`; an unknown function
 * 404 `ResourceNotFoundException`. The functions run here: each simulated function may have a
 * handler, a JavaScript function of the event (tests and `npm run sim` give them); one without
 * answers as the console's starter code does.
 */

/** A simulated function's code: gets the invocation's event (its JSON payload), returns its result. */
export type SimulatedHandler = (
  event: unknown,
  context: { functionName: string; region: string },
) => unknown | Promise<unknown>;

export interface InvokeAnswer {
  status: number;
  body: unknown;
  errorType?: string;
  /** `X-Amz-Function-Error`: the function itself failed (the status is still 200). */
  functionError?: string;
}

/** `{name}`, `{arn}` or `{name}:{qualifier}`, as the path carries it: the function's name. */
export function invokedName(encoded: string): string {
  const name = decodeURIComponent(encoded);
  const arn = /^arn:[^:]+:lambda:[^:]+:\d+:function:([^:]+)(:.+)?$/.exec(name);
  if (arn) return arn[1]!;
  return name.split(':')[0]!;
}

export const INVOKE_PATH = /^\/2015-03-31\/functions\/([^/]+)\/invocations\/?$/;

/** Runs `handler` on the request's payload, as the service would, within `timeoutSeconds`. */
export async function runInvocation(options: {
  functionName: string;
  region: string;
  timeoutSeconds: number;
  handler: SimulatedHandler | undefined;
  rawBody: Buffer;
  invocationType: string | undefined;
}): Promise<InvokeAnswer> {
  const type = options.invocationType ?? 'RequestResponse';
  if (type !== 'RequestResponse' && type !== 'Event' && type !== 'DryRun') {
    return {
      status: 400,
      errorType: 'InvalidParameterValueException',
      body: { message: `Unsupported invocation type ${type}` },
    };
  }
  let event: unknown = {};
  if (options.rawBody.length > 0) {
    try {
      event = JSON.parse(options.rawBody.toString('utf8'));
    } catch {
      return {
        status: 400,
        errorType: 'InvalidRequestContentException',
        body: { message: 'Could not parse request body into json' },
      };
    }
  }
  if (type === 'DryRun') return { status: 204, body: '' };
  const handler =
    options.handler ?? (() => ({ statusCode: 200, body: JSON.stringify('Hello from Lambda!') }));
  const run = Promise.resolve().then(() =>
    handler(event, { functionName: options.functionName, region: options.region }),
  );
  if (type === 'Event') {
    run.catch(() => undefined);
    return { status: 202, body: '' };
  }
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<'timeout'>((resolve) => {
    timer = setTimeout(() => resolve('timeout'), options.timeoutSeconds * 1000);
  });
  try {
    const result = await Promise.race([run, timedOut]);
    if (result === 'timeout') {
      return {
        status: 200,
        functionError: 'Unhandled',
        body: {
          errorType: 'Sandbox.Timedout',
          errorMessage: `RequestId: sim Error: Task timed out after ${options.timeoutSeconds.toFixed(2)} seconds`,
        },
      };
    }
    return { status: 200, body: result === undefined ? null : result };
  } catch (error) {
    const failure = error instanceof Error ? error : new Error(String(error));
    return {
      status: 200,
      functionError: 'Unhandled',
      body: {
        errorType: failure.name || 'Error',
        errorMessage: failure.message,
        trace: (failure.stack ?? '').split('\n').slice(0, 5),
      },
    };
  } finally {
    clearTimeout(timer);
  }
}
