/**
 * Serverless function discovery: lists the functions a customer's cloud account holds, with
 * credentials the caller sends for this one call (used, never stored or logged). The order of the
 * checks: the parameters (400), the organization's rate (429), then the cloud, under one deadline
 * for every page (500 when it passes).
 */
import type { Db } from '../../db/client.js';
import { takeRateWindow } from '../../db/rate-windows.js';
import {
  type CloudFunction,
  type CloudFunctions,
  CloudFunctionsError,
} from '../../providers/cloud/functions.js';
import { badRequest, type DomainError, internalError, rateLimited } from '../errors.js';
import type { Principal } from '../identity/principal.js';

export const DEFAULT_REGION = 'us-east-1';

/** Region names as the cloud spells them: us-east-1, eu-central-2, us-gov-west-1, us-isob-east-1… */
const REGION = /^[a-z]{2}(-[a-z]+)+-\d{1,2}$/;

export interface ListFunctionsInput {
  access_key?: string;
  secret_key?: string;
  region?: string;
}

export interface ListFunctionsResult {
  region: string;
  functions: CloudFunction[];
}

export interface ServerlessLogger {
  warn(details: object, message: string): void;
}

export interface ServerlessServiceDeps {
  db: Db;
  functions: CloudFunctions;
  log: ServerlessLogger;
  /** Deadline of one listing, every page included (SERVERLESS_LIST_TIMEOUT_SECONDS). */
  timeoutMs: number;
  /** Listings per organization per minute (SERVERLESS_LIST_RATE_PER_MINUTE). */
  ratePerMinute: number;
}

export class ServerlessService {
  constructor(private readonly deps: ServerlessServiceDeps) {}

  async listFunctions(principal: Principal, input: ListFunctionsInput): Promise<ListFunctionsResult> {
    const accessKey = input.access_key?.trim() ?? '';
    const secretKey = input.secret_key?.trim() ?? '';
    const missing = [accessKey === '' && 'access_key', secretKey === '' && 'secret_key'].filter(Boolean);
    if (missing.length > 0) {
      throw badRequest(
        `Missing credentials: ${missing.join(' and ')} ${missing.length > 1 ? 'are' : 'is'} required`,
      );
    }
    const region = input.region?.trim() || DEFAULT_REGION;
    if (region.length > 32 || !REGION.test(region)) {
      throw badRequest('region is not a region name (for example us-east-1)');
    }

    const organizationId = principal.organization.id;
    const rate = await takeRateWindow(
      this.deps.db,
      `serverless.list:${organizationId}`,
      this.deps.ratePerMinute,
      60_000,
    );
    if (!rate.allowed) {
      throw rateLimited(
        `Rate limit exceeded: ${rate.limit} function listings per minute per organization`,
        rate.retryAfterSeconds,
      );
    }

    const deadline = new AbortController();
    const timer = setTimeout(() => deadline.abort(), this.deps.timeoutMs);
    try {
      const functions = await this.deps.functions.list(
        { accessKeyId: accessKey, secretAccessKey: secretKey },
        region,
        { signal: deadline.signal },
      );
      return { region, functions };
    } catch (error) {
      throw this.#answer(error, organizationId, region);
    } finally {
      clearTimeout(timer);
    }
  }

  #answer(error: unknown, organizationId: number, region: string): DomainError {
    if (!(error instanceof CloudFunctionsError)) {
      this.deps.log.warn({ organizationId, region, failure: 'unexpected' }, 'serverless listing failed');
      return internalError('Listing functions failed');
    }
    // What is logged is chosen field by field: never the credentials, nor the SDK's request.
    this.deps.log.warn(
      { organizationId, region, failure: error.failure, status: error.status, code: error.options.code },
      'serverless listing failed',
    );
    switch (error.failure) {
      case 'invalid_credentials':
        return badRequest(
          'Invalid credentials: the cloud account does not accept this access key and secret',
        );
      case 'access_denied':
        return badRequest(
          `Access denied: the credentials may not list functions and read their configuration (${error.message})`,
        );
      case 'aborted':
        return internalError(
          `Listing functions failed: the cloud did not finish within ${this.deps.timeoutMs / 1000} seconds`,
        );
      default:
        return internalError(
          `Listing functions failed: ${error.message.charAt(0).toLowerCase()}${error.message.slice(1)}`,
        );
    }
  }
}
