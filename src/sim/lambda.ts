/**
 * A local cloud function API: the part of the Lambda REST API (2015-03-31) that function discovery
 * uses, `GET /2015-03-31/functions/?Marker=&MaxItems=`, served the way the real service serves it.
 * Every request must carry an AWS Signature Version 4 `Authorization` header; the simulator
 * recomputes the signature from the secret registered for the access key id (canonical request →
 * string to sign → HMAC-SHA256 key derivation) and answers the real error shapes: 403
 * `UnrecognizedClientException` for an unknown key, 403 `InvalidSignatureException` for a wrong
 * secret or a tampered request, 403 `AccessDeniedException` for a key registered as denied, 500
 * `ServiceException` on demand. Functions belong to an account and a region (the region is the one
 * in the signature's credential scope) and are served in pages chained by `NextMarker`. Functions
 * are also invoked (lambda-invoke.ts): each may have a handler, a JavaScript function of the event,
 * which runs here. Every request is recorded, with what the signature said and whether the client
 * gave up waiting.
 */
import { createHash, randomUUID, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { closeServer, listenOnLoopback } from '../lib/net.js';
import { INVOKE_PATH, invokedName, runInvocation, type SimulatedHandler } from './lambda-invoke.js';
import {
  amzDate,
  canonicalRequest,
  expectedSignature,
  parseAmzDate,
  parseAuthorization,
  sha256Hex,
} from './sigv4.js';

export type { SimulatedHandler } from './lambda-invoke.js';

/** A function as ListFunctions returns it (FunctionConfiguration, the fields that matter here). */
export interface SimulatedFunction {
  FunctionName: string;
  FunctionArn: string;
  Runtime?: string;
  Role: string;
  Handler?: string;
  CodeSize: number;
  Description: string;
  Timeout: number;
  MemorySize: number;
  /** As the service writes it: `2026-11-20T10:00:00.000+0000`. */
  LastModified: string;
  CodeSha256: string;
  Version: string;
  PackageType: 'Zip' | 'Image';
  Architectures: string[];
}

export interface SimulatedAccount {
  accessKeyId: string;
  secretAccessKey: string;
  /** The account's number, used in ARNs. */
  accountId: string;
  /** Signed requests are refused with AccessDeniedException (no lambda:ListFunctions permission). */
  denied: boolean;
  /** Functions per region. */
  functions: Map<string, SimulatedFunction[]>;
  /** The code of functions, by `<region>:<name>` (a function without any answers a starter reply). */
  handlers: Map<string, SimulatedHandler>;
}

export interface LambdaRequest {
  method: string;
  path: string;
  /** Path and query, as requested. */
  url: string;
  query: Record<string, string>;
  headers: IncomingMessage['headers'];
  /** From the signature's credential scope, when the Authorization header could be read. */
  accessKeyId?: string;
  region?: string;
  service?: string;
  /** True when the recomputed signature matched. */
  signatureValid: boolean;
  /** What the simulator answered (set when it answers). */
  status?: number;
  errorType?: string;
  /** True when the client closed the connection before the answer. */
  aborted: boolean;
  at: number;
}

const SERVICE = 'lambda';
const LIST_PATH = /^\/2015-03-31\/functions\/?$/;
const MAX_SKEW_MS = 15 * 60_000;
/** ListFunctions accepts MaxItems 1 to 10,000 and never returns more than 50 at once. */
const SERVICE_PAGE_CAP = 50;

interface Answer {
  status: number;
  body: unknown;
  errorType?: string;
  functionError?: string;
  /** `body` is sent as is (text), not as JSON. */
  raw?: boolean;
}

/** An error as the service sends it: the type in `x-amzn-ErrorType`, the message in the body. */
function failure(status: number, errorType: string, message: string, field = 'message'): Answer {
  return { status, errorType, body: { [field]: message } };
}

export class LambdaSimulator {
  readonly requests: LambdaRequest[] = [];
  readonly accounts = new Map<string, SimulatedAccount>();
  /** Largest page the simulator serves (the real service: 50). A smaller `MaxItems` wins. */
  pageSize = SERVICE_PAGE_CAP;
  /** Milliseconds before each answer: a slow service (ends early when the client gives up). */
  delayMs = 0;
  #failures: Array<{ status: number; errorType: string; message: string } | { garbled: true }> = [];
  #server: Server | undefined;
  #baseUrl = '';
  #accountCounter = 0;

  get baseUrl(): string {
    return this.#baseUrl;
  }

  async start(port = 0): Promise<string> {
    this.#server = createServer((req, res) => void this.#serve(req, res));
    const listening = await listenOnLoopback(this.#server, port);
    this.#baseUrl = `http://127.0.0.1:${listening}`;
    return this.#baseUrl;
  }

  async stop(): Promise<void> {
    await closeServer(this.#server);
  }

  /** Registers credentials the simulator accepts; `denied` keys are refused with AccessDeniedException. */
  addAccount(credentials: {
    accessKeyId: string;
    secretAccessKey: string;
    denied?: boolean;
  }): SimulatedAccount {
    this.#accountCounter += 1;
    const account: SimulatedAccount = {
      ...credentials,
      denied: credentials.denied ?? false,
      accountId: String(100_000_000_000 + this.#accountCounter),
      functions: new Map(),
      handlers: new Map(),
    };
    this.accounts.set(credentials.accessKeyId, account);
    return account;
  }

  /**
   * Adds functions to an account in `region`; partial ones are completed with typical values. `run`
   * is a function's code: what an invocation answers.
   */
  addFunctions(
    accessKeyId: string,
    region: string,
    functions: Array<Partial<SimulatedFunction> & { FunctionName: string; run?: SimulatedHandler }>,
  ): SimulatedFunction[] {
    const account = this.accounts.get(accessKeyId);
    if (!account) throw new Error(`No account ${accessKeyId}`);
    const list = account.functions.get(region) ?? [];
    const added = functions
      .map(({ run, ...f }) => {
        if (run) account.handlers.set(`${region}:${f.FunctionName}`, run);
        return f;
      })
      .map((f) => ({
        FunctionArn: `arn:aws:lambda:${region}:${account.accountId}:function:${f.FunctionName}`,
        Runtime: 'nodejs20.x',
        Role: `arn:aws:iam::${account.accountId}:role/lambda-basic`,
        Handler: 'index.handler',
        CodeSize: 1024,
        Description: '',
        Timeout: 3,
        MemorySize: 128,
        LastModified: '2026-11-20T10:00:00.000+0000',
        CodeSha256: createHash('sha256').update(f.FunctionName).digest('base64'),
        Version: '$LATEST',
        PackageType: 'Zip' as const,
        Architectures: ['x86_64'],
        ...f,
      }));
    list.push(...added);
    account.functions.set(region, list);
    return added;
  }

  /** `count` functions named `<prefix>-0001`… with varied runtimes, sizes and dates. */
  addGeneratedFunctions(
    accessKeyId: string,
    region: string,
    count: number,
    prefix = 'fn',
  ): SimulatedFunction[] {
    const runtimes = ['nodejs20.x', 'python3.12', 'java21', 'provided.al2023', 'ruby3.3'];
    return this.addFunctions(
      accessKeyId,
      region,
      Array.from({ length: count }, (_, i) => ({
        FunctionName: `${prefix}-${String(i + 1).padStart(4, '0')}`,
        Description: i % 3 === 0 ? '' : `Function number ${i + 1}`,
        Runtime: runtimes[i % runtimes.length],
        Handler: i % 2 === 0 ? 'index.handler' : 'app.main',
        Timeout: 3 + (i % 900),
        MemorySize: 128 * (1 + (i % 80)),
        CodeSize: 1000 + i * 37,
        LastModified: `2026-${String(1 + (i % 12)).padStart(2, '0')}-${String(1 + (i % 28)).padStart(2, '0')}T${String(i % 24).padStart(2, '0')}:15:30.${String(i % 1000).padStart(3, '0')}+0000`,
      })),
    );
  }

  /** The next `count` signed, authorised requests answer `status` (500: ServiceException). */
  failNext(
    count: number,
    status = 500,
    errorType = 'ServiceException',
    message = 'Simulated service failure',
  ): void {
    for (let i = 0; i < count; i++) this.#failures.push({ status, errorType, message });
  }

  /** The next `count` signed, authorised requests answer 200 with a body that is not JSON. */
  garbleNext(count: number): void {
    for (let i = 0; i < count; i++) this.#failures.push({ garbled: true });
  }

  /** The invocations that reached a function (signed, authorised, not failed). */
  invocations(): LambdaRequest[] {
    return this.requests.filter(
      (r) => r.status !== undefined && INVOKE_PATH.test(r.path) && r.signatureValid && !r.errorType,
    );
  }

  /** The list requests that reached the function listing (signed, authorised, not failed). */
  listRequests(): LambdaRequest[] {
    return this.requests.filter((r) => r.status === 200);
  }

  async #serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const rawBody = Buffer.concat(chunks);
    const url = new URL(req.url ?? '/', 'http://sim');
    const recorded: LambdaRequest = {
      method: req.method ?? 'GET',
      path: url.pathname,
      url: req.url ?? '/',
      query: Object.fromEntries(url.searchParams),
      headers: req.headers,
      signatureValid: false,
      aborted: false,
      at: Date.now(),
    };
    this.requests.push(recorded);
    res.on('close', () => {
      if (!res.writableFinished) recorded.aborted = true;
    });
    if (this.delayMs > 0) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, this.delayMs);
        res.once('close', () => {
          clearTimeout(timer);
          resolve();
        });
      });
      if (recorded.aborted) return;
    }
    const answer = await this.#answer(req, recorded, rawBody);
    if (recorded.aborted) return;
    recorded.status = answer.status;
    recorded.errorType = answer.errorType;
    const headers: Record<string, string> = {
      'content-type': 'application/json',
      'x-amzn-requestid': randomUUID(),
    };
    if (answer.errorType) headers['x-amzn-errortype'] = answer.errorType;
    if (answer.functionError) headers['x-amz-function-error'] = answer.functionError;
    if (answer.status === 202 || answer.status === 204) {
      res.writeHead(answer.status, headers).end();
      return;
    }
    if (answer.raw) headers['content-type'] = 'text/html';
    res.writeHead(answer.status, headers);
    res.end(answer.raw ? String(answer.body) : JSON.stringify(answer.body));
  }

  async #answer(req: IncomingMessage, recorded: LambdaRequest, rawBody: Buffer): Promise<Answer> {
    const authorization = parseAuthorization(req.headers.authorization);
    if (!authorization)
      return failure(403, 'MissingAuthenticationTokenException', 'Missing Authentication Token');
    recorded.accessKeyId = authorization.accessKeyId;
    recorded.region = authorization.region;
    recorded.service = authorization.service;
    const account = this.accounts.get(authorization.accessKeyId);
    if (!account) {
      return failure(
        403,
        'UnrecognizedClientException',
        'The security token included in the request is invalid.',
      );
    }
    if (authorization.service !== SERVICE) {
      return failure(
        403,
        'InvalidSignatureException',
        `Credential should be scoped to correct service: '${SERVICE}'. `,
      );
    }
    const headerDate = req.headers['x-amz-date'];
    const signedAt = parseAmzDate(typeof headerDate === 'string' ? headerDate : undefined);
    if (signedAt === undefined || !authorization.signedHeaders.includes('host')) {
      return failure(
        403,
        'IncompleteSignatureException',
        "Authorization header requires the 'host' header and a valid 'X-Amz-Date' header to be signed.",
      );
    }
    const now = Date.now();
    if (Math.abs(now - signedAt) > MAX_SKEW_MS) {
      return failure(
        403,
        'InvalidSignatureException',
        `Signature expired: ${headerDate} is now earlier than ${amzDate(now - MAX_SKEW_MS)} (${amzDate(now)} - 15 min.)`,
      );
    }
    const bodyHash = sha256Hex(rawBody);
    const declaredHash = req.headers['x-amz-content-sha256'];
    const payloadHash = typeof declaredHash === 'string' ? declaredHash : bodyHash;
    const canonical = canonicalRequest({
      method: recorded.method,
      url: recorded.url,
      headers: req.headersDistinct,
      signedHeaders: authorization.signedHeaders,
      payloadHash,
    });
    const expected = expectedSignature(
      account.secretAccessKey,
      authorization,
      headerDate as string,
      canonical,
    );
    const given = Buffer.from(authorization.signature, 'hex');
    const matches =
      given.length === expected.length &&
      timingSafeEqual(given, expected) &&
      (headerDate as string).startsWith(authorization.date) &&
      payloadHash === bodyHash;
    if (!matches) {
      return failure(
        403,
        'InvalidSignatureException',
        'The request signature we calculated does not match the signature you provided. Check your AWS Secret Access Key and signing method. Consult the service documentation for details.',
      );
    }
    recorded.signatureValid = true;
    const invoked = INVOKE_PATH.exec(recorded.path);
    if (account.denied) {
      const action = invoked ? 'lambda:InvokeFunction' : 'lambda:ListFunctions';
      return failure(
        403,
        'AccessDeniedException',
        `User: arn:aws:iam::${account.accountId}:user/discovery is not authorized to perform: ${action} on resource: * because no identity-based policy allows the ${action} action`,
        'Message',
      );
    }
    const injected = this.#failures.shift();
    if (injected && 'garbled' in injected)
      return { status: 200, body: '<html>Bad gateway</html>', raw: true };
    if (injected) {
      return {
        status: injected.status,
        errorType: injected.errorType,
        body: { Type: 'Service', Message: injected.message },
      };
    }
    if (recorded.method === 'POST' && invoked) {
      return this.#invoke(account, authorization.region, invokedName(invoked[1]!), req, rawBody);
    }
    if (recorded.method !== 'GET' || !LIST_PATH.test(recorded.path)) {
      return failure(
        404,
        'UnknownOperationException',
        `No operation for ${recorded.method} ${recorded.path}`,
      );
    }
    return this.#list(account, authorization.region, recorded.query);
  }

  async #invoke(
    account: SimulatedAccount,
    region: string,
    name: string,
    req: IncomingMessage,
    rawBody: Buffer,
  ): Promise<Answer> {
    const fn = (account.functions.get(region) ?? []).find((f) => f.FunctionName === name);
    if (!fn) {
      return failure(
        404,
        'ResourceNotFoundException',
        `Function not found: arn:aws:lambda:${region}:${account.accountId}:function:${name}`,
        'Message',
      );
    }
    const type = req.headers['x-amz-invocation-type'];
    return runInvocation({
      functionName: name,
      region,
      timeoutSeconds: fn.Timeout,
      handler: account.handlers.get(`${region}:${name}`),
      rawBody,
      invocationType: typeof type === 'string' ? type : undefined,
    });
  }

  #list(account: SimulatedAccount, region: string, query: Record<string, string>): Answer {
    const functions = account.functions.get(region) ?? [];
    let start = 0;
    if (query.Marker !== undefined && query.Marker !== '') {
      const decoded = /^m1:(\d+)$/.exec(Buffer.from(query.Marker, 'base64url').toString('utf8'));
      if (!decoded) return failure(400, 'InvalidParameterValueException', 'Invalid Marker');
      start = Number(decoded[1]);
    }
    let size = this.pageSize;
    if (query.MaxItems !== undefined) {
      const maxItems = Number(query.MaxItems);
      if (!Number.isInteger(maxItems) || maxItems < 1 || maxItems > 10_000) {
        return failure(
          400,
          'InvalidParameterValueException',
          `1 validation error detected: Value '${query.MaxItems}' at 'maxItems' failed to satisfy constraint: Member must have value between 1 and 10000`,
        );
      }
      size = Math.min(size, maxItems);
    }
    const page = functions.slice(start, start + size);
    const next =
      start + size < functions.length ? Buffer.from(`m1:${start + size}`).toString('base64url') : undefined;
    return { status: 200, body: next ? { Functions: page, NextMarker: next } : { Functions: page } };
  }
}
