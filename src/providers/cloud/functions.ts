/**
 * Cloud functions: lists the functions a customer's cloud account holds, so that function tools can
 * be configured, and invokes one synchronously when a call's model uses such a tool. One small
 * interface; the adapter speaks the Lambda API through the official SDK
 * (`@aws-sdk/client-lambda` v3), at the public endpoint of the region or at the configured
 * `LAMBDA_ENDPOINT_URL` (the local simulator in tests and development). Credentials are passed per
 * call and live only as long as the call: no client, cache or log line keeps them.
 */
import { Agent as HttpAgent } from 'node:http';
import { Agent as HttpsAgent } from 'node:https';
import {
  type FunctionConfiguration,
  InvokeCommand,
  LambdaClient,
  paginateListFunctions,
} from '@aws-sdk/client-lambda';
import { ProviderError } from '../errors.js';

const PROVIDER = 'cloud_functions';

export interface CloudCredentials {
  accessKeyId: string;
  secretAccessKey: string;
}

/** A function as discovery reports it, in the units of the platform API. */
export interface CloudFunction {
  name: string;
  description: string;
  runtime: string;
  timeoutSeconds: number;
  memoryMb: number;
  codeSizeBytes: number;
  handler: string;
  version: string;
  /** ISO 8601 (UTC) when the service's value could be read; the service's own text otherwise. */
  lastModified: string;
}

/** Why a listing failed, in our words: the service decides the answer from this alone. */
export type CloudFailure =
  /** The cloud does not know the key, or the secret does not match it. */
  | 'invalid_credentials'
  /** The credentials are valid but may not list functions. */
  | 'access_denied'
  /** The caller's signal aborted the listing (its time was up). */
  | 'aborted'
  /** The function to invoke does not exist in the account and region. */
  | 'not_found'
  /** Anything else: the service failed, could not be reached, or answered something unreadable. */
  | 'failed';

export class CloudFunctionsError extends ProviderError {
  constructor(
    readonly failure: CloudFailure,
    message: string,
    options: { status?: number; code?: string; cause?: unknown } = {},
  ) {
    super(message, {
      provider: PROVIDER,
      retryable: failure === 'failed' || failure === 'aborted',
      ...options,
    });
    this.name = 'CloudFunctionsError';
  }
}

/** What a synchronous invocation answered. */
export interface Invocation {
  /** The function's result as its JSON text (its error's, when it failed). */
  payload: string;
  /** Set when the function itself failed (`Unhandled`: it threw or timed out; `Handled`). */
  functionError?: string;
}

export interface CloudFunctions {
  /** Every function of the account in `region`, all pages read. Throws CloudFunctionsError. */
  list(
    credentials: CloudCredentials,
    region: string,
    options: { signal: AbortSignal },
  ): Promise<CloudFunction[]>;
  /**
   * Runs `functionName` with `payload` as its event and waits for its result (RequestResponse); tried
   * once, since a function may do something twice. Throws CloudFunctionsError when it could not run.
   */
  invoke(
    credentials: CloudCredentials,
    region: string,
    functionName: string,
    payload: unknown,
    options: { signal: AbortSignal },
  ): Promise<Invocation>;
}

/** Error names of the cloud that mean the credentials themselves are wrong. */
const INVALID_CREDENTIALS = new Set([
  'UnrecognizedClientException',
  'InvalidSignatureException',
  'IncompleteSignatureException',
  'MissingAuthenticationTokenException',
  'InvalidClientTokenId',
  'SignatureDoesNotMatch',
  'ExpiredTokenException',
]);
const ACCESS_DENIED = new Set(['AccessDeniedException', 'AccessDenied']);

interface SdkError {
  name?: string;
  message?: string;
  $metadata?: { httpStatusCode?: number };
}

export class LambdaFunctions implements CloudFunctions {
  readonly #endpoint: string | undefined;
  readonly #maxAttempts: number;
  readonly #pageSize: number;
  // Shared by the per-call clients, so connections to the endpoint are reused between listings.
  readonly #httpAgent = new HttpAgent({ keepAlive: true, maxSockets: 50 });
  readonly #httpsAgent = new HttpsAgent({ keepAlive: true, maxSockets: 50 });

  constructor(
    options: {
      /** Base URL of the API; unset: the public endpoint of each region. */
      endpoint?: string;
      /** Attempts per page request: 2 retries a transient failure (5xx, throttling, reset) once. */
      maxAttempts?: number;
      /** Functions asked for per page (the service sends at most 50). */
      pageSize?: number;
    } = {},
  ) {
    this.#endpoint = options.endpoint;
    this.#maxAttempts = options.maxAttempts ?? 2;
    this.#pageSize = options.pageSize ?? 50;
  }

  /**
   * A client per call: SDK clients hold their credentials, and these belong to this call only.
   * Everything the SDK would otherwise read from the environment or ~/.aws is pinned here.
   */
  #client(credentials: CloudCredentials, region: string, maxAttempts: number): LambdaClient {
    return new LambdaClient({
      region,
      ...(this.#endpoint ? { endpoint: this.#endpoint } : {}),
      credentials: { accessKeyId: credentials.accessKeyId, secretAccessKey: credentials.secretAccessKey },
      maxAttempts,
      retryMode: 'standard',
      useFipsEndpoint: false,
      useDualstackEndpoint: false,
      ignoreConfiguredEndpointUrls: true,
      requestHandler: { httpAgent: this.#httpAgent, httpsAgent: this.#httpsAgent, connectionTimeout: 5_000 },
    });
  }

  async invoke(
    credentials: CloudCredentials,
    region: string,
    functionName: string,
    payload: unknown,
    options: { signal: AbortSignal },
  ): Promise<Invocation> {
    const client = this.#client(credentials, region, 1);
    try {
      const answer = await client.send(
        new InvokeCommand({
          FunctionName: functionName,
          InvocationType: 'RequestResponse',
          Payload: Buffer.from(JSON.stringify(payload ?? null)),
        }),
        { abortSignal: options.signal },
      );
      const text = answer.Payload ? Buffer.from(answer.Payload).toString('utf8') : '';
      return { payload: text, ...(answer.FunctionError ? { functionError: answer.FunctionError } : {}) };
    } catch (error) {
      const sdk = (error ?? {}) as SdkError;
      if (sdk.name === 'ResourceNotFoundException') {
        throw new CloudFunctionsError('not_found', `No function ${functionName} in ${region}`, {
          status: sdk.$metadata?.httpStatusCode,
          code: sdk.name,
        });
      }
      throw translate(error, options.signal);
    }
  }

  async list(
    credentials: CloudCredentials,
    region: string,
    options: { signal: AbortSignal },
  ): Promise<CloudFunction[]> {
    const client = this.#client(credentials, region, this.#maxAttempts);
    const functions: CloudFunction[] = [];
    try {
      const pages = paginateListFunctions(
        { client, pageSize: this.#pageSize },
        {},
        { abortSignal: options.signal },
      );
      for await (const page of pages) {
        if (!Array.isArray(page.Functions)) {
          throw new CloudFunctionsError('failed', 'The cloud answered a page without a function list');
        }
        for (const item of page.Functions) functions.push(toCloudFunction(item));
      }
    } catch (error) {
      throw translate(error, options.signal);
    }
    // Not client.destroy(): it would destroy the shared agents.
    return functions;
  }

  /** Closes idle connections. */
  close(): void {
    this.#httpAgent.destroy();
    this.#httpsAgent.destroy();
  }
}

function toCloudFunction(item: FunctionConfiguration): CloudFunction {
  return {
    name: item.FunctionName ?? '',
    description: item.Description ?? '',
    // Container-image functions have neither a runtime nor a handler.
    runtime: item.Runtime ?? '',
    timeoutSeconds: Math.trunc(item.Timeout ?? 0),
    memoryMb: Math.trunc(item.MemorySize ?? 0),
    codeSizeBytes: Math.trunc(item.CodeSize ?? 0),
    handler: item.Handler ?? '',
    version: item.Version ?? '$LATEST',
    lastModified: isoTimestamp(item.LastModified),
  };
}

/** `2026-11-20T10:00:00.000+0000` (the service's form) → `2026-11-20T10:00:00.000Z`. */
function isoTimestamp(value: string | undefined): string {
  if (!value) return '';
  const parsed = new Date(value);
  return Number.isNaN(parsed.getTime()) ? value : parsed.toISOString();
}

function translate(error: unknown, signal: AbortSignal): CloudFunctionsError {
  if (error instanceof CloudFunctionsError) return error;
  const sdk = (error ?? {}) as SdkError;
  const name = sdk.name ?? 'Error';
  const status = sdk.$metadata?.httpStatusCode;
  if (signal.aborted || name === 'AbortError') {
    return new CloudFunctionsError('aborted', 'The listing was aborted', { code: name, cause: error });
  }
  if (INVALID_CREDENTIALS.has(name)) {
    return new CloudFunctionsError('invalid_credentials', 'The cloud refused the credentials', {
      status,
      code: name,
    });
  }
  if (ACCESS_DENIED.has(name)) {
    // The cloud's message names the identity and the missing permission: worth showing its owner.
    return new CloudFunctionsError('access_denied', (sdk.message ?? 'Access denied').slice(0, 300), {
      status,
      code: name,
    });
  }
  if (status === 403) {
    // A 403 the SDK could not name (e.g. a signature refused by a proxy in front of the service).
    return new CloudFunctionsError('invalid_credentials', 'The cloud refused the credentials', {
      status,
      code: name,
    });
  }
  const networkCode = (error as { code?: unknown } | undefined)?.code;
  const message =
    status === undefined
      ? `The cloud function API could not be reached (${typeof networkCode === 'string' ? networkCode : name})`
      : status < 300
        ? `The cloud answered a page that could not be read (${name})`
        : `The cloud answered ${status} (${name})`;
  // A network failure's cause helps the operator; a service answer's (which holds the response) is left out.
  return new CloudFunctionsError('failed', message, {
    status,
    code: name,
    ...(status === undefined ? { cause: error } : {}),
  });
}
