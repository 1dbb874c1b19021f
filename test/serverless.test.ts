/**
 * Serverless function discovery: POST /api/serverless/list-functions against the cloud function
 * simulator over real loopback HTTP (the SDK signs with SigV4; the simulator recomputes every
 * signature). Parameters as query, form fields and JSON (and which wins); the region; pagination
 * with every field mapped; every error row of the API (400 missing / refused / denied, 500 failed /
 * slow / unreachable / unreadable) with `success: false`; the organization's rate limit (also under
 * concurrency); who may call it; and that the credentials end up in no table and no log line. The
 * tests share one platform; each takes a fresh organization unless it says otherwise, so the rate
 * limit of 10 per minute never mixes tests.
 */
import { randomBytes } from 'node:crypto';
import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { takeRateWindow } from '../src/db/rate-windows.js';
import { freePort } from '../src/lib/net.js';
import { LambdaSimulator, type SimulatedFunction } from '../src/sim/lambda.js';
import { Factories, type TestUser } from './support/factories.js';
import { mailSettled, startTestPlatform, type TestPlatform, waitFor } from './support/harness.js';
import { awayFromMinuteEdge } from './support/rate-windows.js';

const URL_PATH = '/api/serverless/list-functions';
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const FIELDS = [
  'function_name',
  'description',
  'runtime',
  'timeout',
  'memory_size',
  'code_size',
  'handler',
  'version',
  'last_modified',
].sort();

// Secrets with characters that need encoding in a query string and a form.
const GOOD = { accessKeyId: 'AKIAGOOD0000000001', secretAccessKey: 'good/Secret+Key=0123456789abcdefGHIJ' };
const BIG = { accessKeyId: 'AKIABIG00000000002', secretAccessKey: 'big/Secret+Key=0123456789abcdefGHIJKL' };
const DENIED = { accessKeyId: 'AKIADENIED00000003', secretAccessKey: 'denied/Secret+0123456789abcdefGHIJKL' };

const sim = new LambdaSimulator();
let t: TestPlatform;
let f: Factories;
let bigFunctions: SimulatedFunction[];

beforeAll(async () => {
  await sim.start(0);
  sim.addAccount(GOOD);
  sim.addAccount(BIG);
  sim.addAccount({ ...DENIED, denied: true });
  sim.addFunctions(GOOD.accessKeyId, 'us-east-1', [
    {
      FunctionName: 'lookup-order',
      Description: 'Looks an order up by number',
      Runtime: 'nodejs20.x',
      Handler: 'index.handler',
      Timeout: 15,
      MemorySize: 256,
      CodeSize: 48_213,
      LastModified: '2026-10-01T08:30:15.123+0000',
    },
    {
      FunctionName: 'book-appointment',
      Description: '',
      Runtime: 'python3.12',
      Handler: 'app.lambda_handler',
      Timeout: 900,
      MemorySize: 10_240,
      CodeSize: 5_242_880,
      LastModified: '2026-11-20T23:59:59.999+0000',
    },
    {
      // A container-image function: no runtime, no handler.
      FunctionName: 'image-worker',
      Description: 'Built from an image',
      Runtime: undefined,
      Handler: undefined,
      PackageType: 'Image',
      Timeout: 60,
      MemorySize: 2048,
      CodeSize: 0,
      LastModified: '2026-01-02T03:04:05.000+0000',
    },
  ]);
  sim.addFunctions(GOOD.accessKeyId, 'eu-west-1', [
    {
      FunctionName: 'eu-only',
      Description: 'Lives in Ireland',
      LastModified: '2026-06-15T12:00:00.000+0000',
    },
  ]);
  bigFunctions = sim.addGeneratedFunctions(BIG.accessKeyId, 'us-east-1', 250, 'big');
  t = await startTestPlatform({
    LAMBDA_ENDPOINT_URL: sim.baseUrl,
    SERVERLESS_LIST_TIMEOUT_SECONDS: '2',
    LOG_LEVEL: 'trace',
  });
  f = new Factories(t);
});
afterAll(async () => {
  await t.close();
  await sim.stop();
});

type Params = Record<string, string>;

/** Sends the parameters the way `via` says: query string, form fields or JSON body. */
function listFunctions(
  headers: Record<string, string>,
  params: Params,
  via: 'query' | 'form' | 'json' = 'query',
  extra: { query?: Params } = {},
): Promise<LightMyRequestResponse> {
  const query = new URLSearchParams(via === 'query' ? { ...extra.query, ...params } : extra.query);
  const url = query.size > 0 ? `${URL_PATH}?${query}` : URL_PATH;
  if (via === 'form') {
    return t.app.inject({
      method: 'POST',
      url,
      headers: { ...headers, 'content-type': 'application/x-www-form-urlencoded' },
      payload: new URLSearchParams(params).toString(),
    });
  }
  if (via === 'json') return t.app.inject({ method: 'POST', url, headers, payload: params });
  return t.app.inject({ method: 'POST', url, headers });
}

const credentialsOf = (account: { accessKeyId: string; secretAccessKey: string }) => ({
  access_key: account.accessKeyId,
  secret_key: account.secretAccessKey,
});

/** A `{success: false, detail, message}` answer with `status`, its detail matching `detail`. */
function expectFailure(response: LightMyRequestResponse, status: number, detail?: RegExp): void {
  expect(response.statusCode, response.body).toBe(status);
  const body = response.json();
  expect(Object.keys(body).sort()).toEqual(['detail', 'message', 'success']);
  expect(body.success).toBe(false);
  expect(typeof body.message).toBe('string');
  expect(body.message.length).toBeGreaterThan(0);
  if (typeof body.detail === 'string') {
    expect(body.message).toBe(body.detail);
    if (detail) expect(body.detail).toMatch(detail);
  } else {
    expect(Array.isArray(body.detail)).toBe(true);
    if (detail) expect(body.message).toMatch(detail);
  }
}

/** The sim's requests made after `mark` (an index into `sim.requests`). */
const requestsSince = (mark: number) => sim.requests.slice(mark);

describe('listing', () => {
  let user: TestUser;
  beforeAll(async () => {
    user = await f.user();
  });

  it('answers 200 {success, message, functions} with every field mapped, parameters in the query', async () => {
    const mark = sim.requests.length;
    const response = await listFunctions(user.headers, credentialsOf(GOOD), 'query');
    expect(response.statusCode, response.body).toBe(200);
    const body = response.json();
    expect(Object.keys(body).sort()).toEqual(['functions', 'message', 'success']);
    expect(body.success).toBe(true);
    expect(body.message).toBe('Found 3 functions in us-east-1');
    expect(body.functions).toEqual([
      {
        function_name: 'lookup-order',
        description: 'Looks an order up by number',
        runtime: 'nodejs20.x',
        timeout: 15,
        memory_size: 256,
        code_size: 48_213,
        handler: 'index.handler',
        version: '$LATEST',
        last_modified: '2026-10-01T08:30:15.123Z',
      },
      {
        function_name: 'book-appointment',
        description: '',
        runtime: 'python3.12',
        timeout: 900,
        memory_size: 10_240,
        code_size: 5_242_880,
        handler: 'app.lambda_handler',
        version: '$LATEST',
        last_modified: '2026-11-20T23:59:59.999Z',
      },
      {
        function_name: 'image-worker',
        description: 'Built from an image',
        runtime: '',
        timeout: 60,
        memory_size: 2048,
        code_size: 0,
        handler: '',
        version: '$LATEST',
        last_modified: '2026-01-02T03:04:05.000Z',
      },
    ]);
    // One signed request, verified by the simulator, scoped to the default region.
    const seen = requestsSince(mark);
    expect(seen).toHaveLength(1);
    expect(seen[0]).toMatchObject({
      method: 'GET',
      path: '/2015-03-31/functions',
      accessKeyId: GOOD.accessKeyId,
      region: 'us-east-1',
      service: 'lambda',
      signatureValid: true,
      status: 200,
    });
  });

  it('takes the parameters as form fields', async () => {
    const response = await listFunctions(
      user.headers,
      { ...credentialsOf(GOOD), region: 'eu-west-1' },
      'form',
    );
    expect(response.statusCode, response.body).toBe(200);
    expect(response.json().message).toBe('Found 1 function in eu-west-1');
    expect(response.json().functions.map((fn: { function_name: string }) => fn.function_name)).toEqual([
      'eu-only',
    ]);
  });

  it('takes the parameters as a JSON body', async () => {
    const response = await listFunctions(user.headers, credentialsOf(GOOD), 'json');
    expect(response.statusCode, response.body).toBe(200);
    expect(response.json().functions).toHaveLength(3);
  });

  it('lists the region given, signing for it; us-east-1 when none (or an empty one) is given', async () => {
    const mark = sim.requests.length;
    const given = await listFunctions(user.headers, { ...credentialsOf(GOOD), region: 'eu-west-1' }, 'query');
    expect(given.statusCode, given.body).toBe(200);
    expect(given.json().functions.map((fn: { function_name: string }) => fn.function_name)).toEqual([
      'eu-only',
    ]);
    const empty = await listFunctions(user.headers, { ...credentialsOf(GOOD), region: '' }, 'form');
    expect(empty.statusCode, empty.body).toBe(200);
    expect(empty.json().message).toMatch(/in us-east-1$/);
    const elsewhere = await listFunctions(
      user.headers,
      { ...credentialsOf(GOOD), region: 'ap-southeast-2' },
      'json',
    );
    expect(elsewhere.statusCode, elsewhere.body).toBe(200);
    expect(elsewhere.json()).toEqual({
      success: true,
      message: 'Found 0 functions in ap-southeast-2',
      functions: [],
    });
    expect(requestsSince(mark).map((r) => r.region)).toEqual(['eu-west-1', 'us-east-1', 'ap-southeast-2']);
    // The region is part of what is signed: the credential scope names it.
    expect(String(requestsSince(mark)[0]!.headers.authorization)).toContain(
      `Credential=${GOOD.accessKeyId}/`,
    );
    expect(String(requestsSince(mark)[0]!.headers.authorization)).toMatch(
      /\/eu-west-1\/lambda\/aws4_request/,
    );
  });

  it('lets a body parameter win over the same query parameter, and merges the others', async () => {
    const mark = sim.requests.length;
    const response = await listFunctions(user.headers, { region: 'eu-west-1' }, 'json', {
      query: { ...credentialsOf(GOOD), region: 'us-east-1' },
    });
    expect(response.statusCode, response.body).toBe(200);
    expect(response.json().message).toBe('Found 1 function in eu-west-1');
    expect(requestsSince(mark).map((r) => r.region)).toEqual(['eu-west-1']);
    const form = await listFunctions(user.headers, { secret_key: 'wrong-secret' }, 'form', {
      query: credentialsOf(GOOD),
    });
    expectFailure(form, 400, /Invalid credentials/);
  });
});

describe('pagination', () => {
  it('reads every page (250 functions, 50 a page) and maps every field of every function', async () => {
    const user = await f.user();
    const mark = sim.requests.length;
    const response = await listFunctions(user.headers, credentialsOf(BIG), 'form');
    expect(response.statusCode, response.body).toBe(200);
    const body = response.json();
    expect(body.message).toBe('Found 250 functions in us-east-1');
    expect(body.functions).toHaveLength(250);
    body.functions.forEach((fn: Record<string, unknown>, i: number) => {
      const source = bigFunctions[i]!;
      expect(Object.keys(fn).sort()).toEqual(FIELDS);
      expect(fn).toEqual({
        function_name: source.FunctionName,
        description: source.Description,
        runtime: source.Runtime,
        timeout: source.Timeout,
        memory_size: source.MemorySize,
        code_size: source.CodeSize,
        handler: source.Handler,
        version: '$LATEST',
        last_modified: new Date(source.LastModified).toISOString(),
      });
      expect(fn.last_modified).toMatch(ISO);
    });
    expect(new Set(body.functions.map((fn: { function_name: string }) => fn.function_name)).size).toBe(250);
    // Five pages, each asking for 50, each after the first carrying the previous page's marker.
    const pages = requestsSince(mark);
    expect(pages).toHaveLength(5);
    expect(pages.every((p) => p.status === 200 && p.signatureValid && p.query.MaxItems === '50')).toBe(true);
    expect(pages[0]!.query.Marker).toBeUndefined();
    expect(pages.slice(1).every((p) => typeof p.query.Marker === 'string' && p.query.Marker !== '')).toBe(
      true,
    );
    expect(new Set(pages.map((p) => p.query.Marker)).size).toBe(5);
  });

  it('follows the service when it serves smaller pages than asked for', async () => {
    const user = await f.user();
    sim.pageSize = 20;
    try {
      const mark = sim.requests.length;
      const response = await listFunctions(user.headers, credentialsOf(BIG), 'json');
      expect(response.statusCode, response.body).toBe(200);
      expect(response.json().functions.map((fn: { function_name: string }) => fn.function_name)).toEqual(
        bigFunctions.map((fn) => fn.FunctionName),
      );
      expect(requestsSince(mark)).toHaveLength(13);
    } finally {
      sim.pageSize = 50;
    }
  });
});

describe('errors', () => {
  it('answers 400 success:false for a missing access_key, without asking the cloud', async () => {
    const user = await f.user();
    const mark = sim.requests.length;
    for (const via of ['query', 'form', 'json'] as const) {
      const response = await listFunctions(user.headers, { secret_key: GOOD.secretAccessKey }, via);
      expectFailure(response, 400, /^Missing credentials: access_key is required$/);
    }
    expect(requestsSince(mark)).toHaveLength(0);
  });

  it('answers 400 success:false for a missing or empty secret_key, and for neither', async () => {
    const user = await f.user();
    const mark = sim.requests.length;
    expectFailure(
      await listFunctions(user.headers, { access_key: GOOD.accessKeyId }, 'query'),
      400,
      /^Missing credentials: secret_key is required$/,
    );
    expectFailure(
      await listFunctions(user.headers, { access_key: GOOD.accessKeyId, secret_key: '' }, 'form'),
      400,
      /^Missing credentials: secret_key is required$/,
    );
    expectFailure(
      await listFunctions(user.headers, { access_key: ' ', secret_key: '  ' }, 'json'),
      400,
      /^Missing credentials: access_key and secret_key are required$/,
    );
    const none = await t.app.inject({ method: 'POST', url: URL_PATH, headers: user.headers });
    expectFailure(none, 400, /^Missing credentials: access_key and secret_key are required$/);
    expect(requestsSince(mark)).toHaveLength(0);
  });

  it('answers 400 success:false for parameters of the wrong type or a region that is not one', async () => {
    const user = await f.user();
    const mark = sim.requests.length;
    const typed = await t.app.inject({
      method: 'POST',
      url: URL_PATH,
      headers: user.headers,
      payload: { access_key: 12345, secret_key: GOOD.secretAccessKey },
    });
    expectFailure(typed, 400, /body\.access_key/);
    expect(typed.json().detail[0]).toMatchObject({ loc: ['body', 'access_key'], type: 'string_type' });
    const region = await listFunctions(
      user.headers,
      { ...credentialsOf(GOOD), region: 'moon.example.com/x' },
      'form',
    );
    expectFailure(region, 400, /region/);
    const notJson = await t.app.inject({
      method: 'POST',
      url: URL_PATH,
      headers: { ...user.headers, 'content-type': 'application/json' },
      payload: '{"access_key": ',
    });
    expectFailure(notJson, 400, /JSON/);
    // A parameter given twice is ambiguous: refused, in the query and in a form.
    const secret = encodeURIComponent(GOOD.secretAccessKey);
    const twiceInQuery = await t.app.inject({
      method: 'POST',
      url: `${URL_PATH}?access_key=${GOOD.accessKeyId}&access_key=AKIAOTHER&secret_key=${secret}`,
      headers: user.headers,
    });
    expectFailure(twiceInQuery, 400, /query\.access_key/);
    const twiceInForm = await t.app.inject({
      method: 'POST',
      url: URL_PATH,
      headers: { ...user.headers, 'content-type': 'application/x-www-form-urlencoded' },
      payload: `access_key=${GOOD.accessKeyId}&secret_key=${secret}&secret_key=${secret}`,
    });
    expectFailure(twiceInForm, 400, /body\.secret_key/);
    const tooLong = await listFunctions(
      user.headers,
      { ...credentialsOf(GOOD), region: 'x'.repeat(65) },
      'form',
    );
    expectFailure(tooLong, 400, /body\.region/);
    expect(requestsSince(mark)).toHaveLength(0);
  });

  it('answers 400 success:false when the cloud does not know the access key', async () => {
    const user = await f.user();
    const mark = sim.requests.length;
    const response = await listFunctions(
      user.headers,
      { access_key: 'AKIAUNKNOWN0000000', secret_key: GOOD.secretAccessKey },
      'form',
    );
    expectFailure(response, 400, /^Invalid credentials/);
    expect(requestsSince(mark).map((r) => r.errorType)).toEqual(['UnrecognizedClientException']);
  });

  it('answers 400 success:false when the secret is wrong (the signature does not match)', async () => {
    const user = await f.user();
    const mark = sim.requests.length;
    const response = await listFunctions(
      user.headers,
      { access_key: GOOD.accessKeyId, secret_key: `${GOOD.secretAccessKey}x` },
      'query',
    );
    expectFailure(response, 400, /^Invalid credentials/);
    expect(requestsSince(mark).map((r) => [r.errorType, r.signatureValid])).toEqual([
      ['InvalidSignatureException', false],
    ]);
  });

  it('answers 400 success:false when the credentials may not list functions', async () => {
    const user = await f.user();
    const response = await listFunctions(user.headers, credentialsOf(DENIED), 'json');
    expectFailure(response, 400, /^Access denied: .*lambda:ListFunctions/);
  });

  it('answers 500 success:false when the cloud fails, after retrying once', async () => {
    const user = await f.user();
    const mark = sim.requests.length;
    sim.failNext(2, 500);
    const response = await listFunctions(user.headers, credentialsOf(GOOD), 'query');
    expectFailure(response, 500, /^Listing functions failed: the cloud answered 500 \(ServiceException\)$/);
    expect(requestsSince(mark).map((r) => r.status)).toEqual([500, 500]);
    // One failure alone is absorbed by the retry.
    sim.failNext(1, 503);
    const retried = await listFunctions(user.headers, credentialsOf(GOOD), 'query');
    expect(retried.statusCode, retried.body).toBe(200);
    expect(requestsSince(mark).map((r) => r.status)).toEqual([500, 500, 503, 200]);
  });

  it('answers 500 success:false when a page is not readable (and does not retry it)', async () => {
    const user = await f.user();
    const mark = sim.requests.length;
    sim.garbleNext(1);
    const response = await listFunctions(user.headers, credentialsOf(BIG), 'json');
    expectFailure(
      response,
      500,
      /^Listing functions failed: the cloud answered a page that could not be read \(SyntaxError\)$/,
    );
    expect(requestsSince(mark).map((r) => r.status)).toEqual([200]);
  });

  it('answers 500 success:false when the listing takes longer than the deadline, and aborts it', async () => {
    const user = await f.user();
    const mark = sim.requests.length;
    sim.delayMs = 5_000;
    try {
      const started = performance.now();
      const response = await listFunctions(user.headers, credentialsOf(GOOD), 'form');
      const elapsed = performance.now() - started;
      expectFailure(response, 500, /^Listing functions failed: the cloud did not finish within 2 seconds$/);
      expect(elapsed).toBeGreaterThanOrEqual(1_900);
      expect(elapsed).toBeLessThan(4_500);
      // The request to the cloud was given up, not left running.
      await waitFor(() => requestsSince(mark)[0]?.aborted);
      expect(requestsSince(mark)).toHaveLength(1);
    } finally {
      sim.delayMs = 0;
    }
  });
});

describe('an unreachable cloud', () => {
  let dead: TestPlatform;
  beforeAll(async () => {
    // A port that nothing listens on.
    dead = await startTestPlatform({ LAMBDA_ENDPOINT_URL: `http://127.0.0.1:${await freePort()}` });
  });
  afterAll(() => dead.close());

  it('answers 500 success:false', async () => {
    const user = await new Factories(dead).user();
    const response = await dead.app.inject({
      method: 'POST',
      url: `${URL_PATH}?${new URLSearchParams(credentialsOf(GOOD))}`,
      headers: user.headers,
    });
    expectFailure(
      response,
      500,
      /^Listing functions failed: the cloud function API could not be reached \(ECONNREFUSED\)$/,
    );
  });
});

describe('rate limit', () => {
  it('allows 10 listings a minute per organization, answers the 11th 429 with Retry-After', async () => {
    const user = await f.user();
    const member = await f.member(user.organizationId);
    const other = await f.user();
    await awayFromMinuteEdge();
    for (let i = 0; i < 10; i++) {
      // Both members of the organization count against the same limit.
      const response = await listFunctions((i % 2 ? member : user).headers, credentialsOf(GOOD), 'query');
      expect(response.statusCode, `${i}: ${response.body}`).toBe(200);
    }
    const mark = sim.requests.length;
    const refused = await listFunctions(member.headers, credentialsOf(GOOD), 'query');
    expectFailure(refused, 429, /10 function listings per minute/);
    const retryAfter = Number(refused.headers['retry-after']);
    expect(Number.isInteger(retryAfter)).toBe(true);
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(60);
    expect(requestsSince(mark)).toHaveLength(0);
    // Another organization is not affected.
    const elsewhere = await listFunctions(other.headers, credentialsOf(GOOD), 'query');
    expect(elsewhere.statusCode, elsewhere.body).toBe(200);
    // Counted in the shared table, under the organization's bucket.
    const rows = await t.database.executeSql('select count from rate_limit_windows where bucket = $1', [
      `serverless.list:${user.organizationId}`,
    ]);
    expect(rows.rows).toEqual([{ count: 11 }]);
  });

  it('counts concurrent requests exactly: 15 at once, 10 pass', async () => {
    const user = await f.user();
    const responses = await Promise.all(
      Array.from({ length: 15 }, () => listFunctions(user.headers, credentialsOf(GOOD), 'json')),
    );
    const statuses = responses.map((r) => r.statusCode).sort();
    expect(statuses.filter((s) => s === 200)).toHaveLength(10);
    expect(statuses.filter((s) => s === 429)).toHaveLength(5);
  });

  it('counts exactly when the counter itself is called concurrently (20 at once, limit 10)', async () => {
    const bucket = `test.concurrent:${randomBytes(4).toString('hex')}`;
    const decisions = await Promise.all(
      Array.from({ length: 20 }, () => takeRateWindow(t.database.db, bucket, 10, 60_000)),
    );
    expect(decisions.filter((d) => d.allowed)).toHaveLength(10);
    expect(decisions.map((d) => d.remaining).sort((a, b) => a - b)).toEqual([
      ...Array(11).fill(0),
      ...Array.from({ length: 9 }, (_, i) => i + 1),
    ]);
    const rows = await t.database.executeSql('select count from rate_limit_windows where bucket = $1', [
      bucket,
    ]);
    expect(rows.rows).toEqual([{ count: 20 }]);
  });

  it('starts a new window when the old one ends (the counter itself)', async () => {
    const bucket = `test.window:${randomBytes(4).toString('hex')}`;
    const take = () => takeRateWindow(t.database.db, bucket, 2, 1_000);
    // Start right after a window boundary so that three takes fit in one window.
    await new Promise((resolve) => setTimeout(resolve, 1_000 - (Date.now() % 1_000) + 20));
    const first = await take();
    const second = await take();
    const third = await take();
    expect([first.allowed, second.allowed, third.allowed]).toEqual([true, true, false]);
    expect([first.remaining, second.remaining, third.remaining]).toEqual([1, 0, 0]);
    expect(third.retryAfterSeconds).toBe(1);
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    const later = await take();
    expect(later).toMatchObject({ allowed: true, remaining: 1 });
  });
});

describe('who may list', () => {
  it('refuses a request without credentials with 401 {detail}', async () => {
    const response = await listFunctions({}, credentialsOf(GOOD), 'query');
    expect(response.statusCode).toBe(401);
    expect(response.json()).toEqual({ detail: expect.any(String) });
  });

  it('refuses an API key without the assistants area with 403, accepts one with assistants: read', async () => {
    const user = await f.user();
    const callsOnly = await f.apiKey(user, { permissions: { calls: 'read_write', sms: 'read_write' } });
    const refused = await listFunctions(callsOnly.headers, credentialsOf(GOOD), 'json');
    expect(refused.statusCode, refused.body).toBe(403);
    expect(refused.json()).toEqual({ detail: 'API key lacks read permission for assistants' });
    const reader = await f.apiKey(user, { permissions: { assistants: 'read' } });
    const allowed = await listFunctions(reader.headers, credentialsOf(GOOD), 'json');
    expect(allowed.statusCode, allowed.body).toBe(200);
  });

  it('accepts the dashboard session cookie with its CSRF header, and refuses it without', async () => {
    const user = await f.user();
    const cookies = { sb_session: user.sessionCookie };
    const url = `${URL_PATH}?${new URLSearchParams(credentialsOf(GOOD))}`;
    const without = await t.app.inject({ method: 'POST', url, cookies });
    expect(without.statusCode, without.body).toBe(403);
    const withCsrf = await t.app.inject({
      method: 'POST',
      url,
      cookies,
      headers: { 'x-csrf-token': user.csrfToken },
    });
    expect(withCsrf.statusCode, withCsrf.body).toBe(200);
  });

  it('is documented in the OpenAPI document under the serverless tag', async () => {
    const doc = (await t.app.inject({ method: 'GET', url: '/openapi.json' })).json();
    const operation = doc.paths[URL_PATH].post;
    expect(operation.tags).toEqual(['serverless']);
    expect(operation.security.length).toBeGreaterThan(0);
    expect(Object.keys(operation.requestBody.content).sort()).toEqual([
      'application/json',
      'application/x-www-form-urlencoded',
    ]);
    expect(operation.parameters.map((p: { name: string; in: string }) => `${p.in}:${p.name}`).sort()).toEqual(
      ['query:access_key', 'query:region', 'query:secret_key'],
    );
    expect(Object.keys(operation.responses).sort()).toEqual([
      '200',
      '400',
      '401',
      '403',
      '413',
      '415',
      '429',
      '500',
    ]);
    expect(operation.description).toContain('assistants: read');
  });
});

describe('credentials', () => {
  it('are never logged: not in the URL, the body, or the failure reports', async () => {
    const user = await f.user();
    const tag = randomBytes(6).toString('hex');
    const account = { accessKeyId: `AKIALOG${tag}`.toUpperCase(), secretAccessKey: `logSecret/${tag}+x=y` };
    sim.addAccount(account);
    const wrong = `wrongSecret${tag}`;
    const unknown = `AKIAUNKNOWN${tag}`.toUpperCase();
    const before = t.logs.length;
    const ids: string[] = [];
    const answers: number[] = [];
    for (const [params, via] of [
      [credentialsOf(account), 'query'],
      [credentialsOf(account), 'form'],
      [credentialsOf(account), 'json'],
      [{ access_key: account.accessKeyId, secret_key: wrong }, 'query'],
      [{ access_key: unknown, secret_key: account.secretAccessKey }, 'form'],
      [{ access_key: account.accessKeyId }, 'query'],
      [{ ...credentialsOf(account), region: 'not a region' }, 'json'],
    ] as const) {
      const response = await listFunctions(user.headers, params, via);
      ids.push(String(response.headers['x-request-id']));
      answers.push(response.statusCode);
    }
    sim.failNext(2, 500);
    const failed = await listFunctions(user.headers, credentialsOf(account), 'query');
    ids.push(String(failed.headers['x-request-id']));
    answers.push(failed.statusCode);
    expect(answers).toEqual([200, 200, 200, 400, 400, 400, 400, 500]);

    const written = t.logs.slice(before).join('\n');
    // The requests were logged (with their URLs), and the failures reported…
    for (const id of ids) expect(written).toContain(id);
    expect(written).toContain(`${URL_PATH}?access_key=[REDACTED]&secret_key=[REDACTED]`);
    expect(written).toContain('serverless listing failed');
    // …and nothing in them holds a credential, in any encoding.
    for (const secret of [account.secretAccessKey, account.accessKeyId, wrong, unknown]) {
      for (const form of new Set([
        secret,
        encodeURIComponent(secret),
        new URLSearchParams({ s: secret }).toString().slice(2),
      ])) {
        expect(written, form).not.toContain(form);
      }
    }
  });

  it('are stored nowhere: a listing writes nothing but its rate counter, and no table holds them', async () => {
    const user = await f.user();
    const tag = randomBytes(6).toString('hex');
    const account = {
      accessKeyId: `AKIASTORE${tag}`.toUpperCase(),
      secretAccessKey: `storeSecret/${tag}+x=y`,
    };
    sim.addAccount(account);
    sim.addGeneratedFunctions(account.accessKeyId, 'us-east-1', 3);
    const tables = (
      await t.database.executeSql(
        `select table_schema, table_name from information_schema.tables
         where table_type = 'BASE TABLE' and table_schema not in ('pg_catalog', 'information_schema')
         order by 1, 2`,
      )
    ).rows.map((r) => `"${String(r.table_schema)}"."${String(r.table_name)}"`);
    expect(tables).toContain('"public"."rate_limit_windows"');
    const contentsOf = async () => {
      const digests = new Map<string, string>();
      for (const table of tables.filter((name) => name.startsWith('"public".'))) {
        const result = await t.database.executeSql(
          `select coalesce(md5(string_agg(r::text, '|' order by r::text)), '') as digest from ${table} as r`,
        );
        digests.set(table, String(result.rows[0]?.digest));
      }
      return digests;
    };
    // Let the registration's own background work (its verification mail) finish first.
    await mailSettled(t);
    // And the API-key use counters of earlier tests, which are written in batches once a second.
    await t.platform.apiKeyUsage.flush();
    const before = await contentsOf();
    for (const via of ['query', 'form', 'json'] as const) {
      const response = await listFunctions(user.headers, credentialsOf(account), via);
      expect(response.statusCode, response.body).toBe(200);
    }
    const wrong = await listFunctions(
      user.headers,
      { ...credentialsOf(account), secret_key: `x${tag}` },
      'form',
    );
    expect(wrong.statusCode).toBe(400);
    const after = await contentsOf();
    const changed = [...before.keys()].filter((table) => before.get(table) !== after.get(table));
    expect(changed).toEqual(['"public"."rate_limit_windows"']);

    // Every row of every table, job queue included, searched as text.
    const holding = async (needle: string) => {
      const found: string[] = [];
      for (const table of tables) {
        const result = await t.database.executeSql(
          `select count(*)::int as n from ${table} as r where position($1 in r::text) > 0`,
          [needle],
        );
        if (Number(result.rows[0]?.n) > 0) found.push(table);
      }
      return found;
    };
    // The search finds what is stored (the control)…
    expect(await holding(user.email)).toContain('"public"."users"');
    // …and not the credentials.
    for (const secret of [account.secretAccessKey, account.accessKeyId, `x${tag}`]) {
      expect(await holding(secret), secret).toEqual([]);
    }
  });
});

describe('the simulator', () => {
  it('really checks signatures: a signed request replayed with another query is refused', async () => {
    const user = await f.user();
    const mark = sim.requests.length;
    expect((await listFunctions(user.headers, credentialsOf(GOOD), 'query')).statusCode).toBe(200);
    const signed = requestsSince(mark)[0]!;
    const headers = Object.fromEntries(
      Object.entries(signed.headers).filter(
        ([name]) => !['host', 'connection', 'content-length'].includes(name),
      ),
    ) as Record<string, string>;
    const replay = (url: string) => fetch(`${sim.baseUrl}${url}`, { headers });
    const same = await replay(signed.url);
    expect(same.status).toBe(200);
    const tampered = await replay(signed.url.replace('MaxItems=50', 'MaxItems=49'));
    expect(tampered.status).toBe(403);
    expect(tampered.headers.get('x-amzn-errortype')).toBe('InvalidSignatureException');
    const unsigned = await fetch(`${sim.baseUrl}${signed.url}`);
    expect(unsigned.status).toBe(403);
    expect(unsigned.headers.get('x-amzn-errortype')).toBe('MissingAuthenticationTokenException');
  });
});
