/**
 * The HTTP layer every route shares (decisions §1, §2): X-Request-Id, the error envelope for
 * Fastify's own failures (404, 413, 415, malformed JSON) and for unexpected ones (500), /health,
 * /metrics, /openapi.json, /docs, and that logs never hold a credential.
 *
 * One platform for the file (default configuration) plus one started with a small body limit and a
 * metrics token; the tests of each block share its database.
 */
import { randomBytes } from 'node:crypto';
import { Writable } from 'node:stream';
import Fastify, { type FastifyBaseLogger, type LightMyRequestResponse } from 'fastify';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { invalidField } from '../src/domains/errors.js';
import { AppError, installErrorHandling } from '../src/http/errors.js';
import { VERSION } from '../src/version.js';
import { Factories, uniqueEmail } from './support/factories.js';
import { startTestPlatform, type TestPlatform, verificationToken, waitFor } from './support/harness.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[1-8][0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

/** Marks of a stack trace or of SQL; none may appear in an error body. */
const LEAKS: RegExp[] = [
  /\bat\s+(?:async\s+)?[\w$.<>[\]]*\s*\(?(?:file:\/\/|node:|\/)[^\s)]*:\d+(?::\d+)?/,
  /\.(?:ts|js|mjs|cjs):\d+/,
  /node_modules|\/work\/|\/src\//,
  /\b(?:Type|Range|Reference|Syntax)?Error:/,
  /\bselect\b[\s\S]*\bfrom\b/i,
  /\binsert\s+into\b/i,
  /\bupdate\s+"?\w+"?\s+set\b/i,
  /\bdelete\s+from\b/i,
  /\bduplicate key\b|\bviolates\b|\bconstraint\b|\brelation\s+"/i,
  /\bpg_|\bdrizzle\b|\bpglite\b/i,
];

function expectCleanBody(response: LightMyRequestResponse, label: string): void {
  for (const pattern of LEAKS) expect(response.body, `${label}: ${pattern}`).not.toMatch(pattern);
}

/** Asserts the `{detail: string}` envelope with no stack trace or SQL in it. */
function expectErrorBody(response: LightMyRequestResponse, status: number, label = ''): string {
  expect(response.statusCode, `${label} ${response.body}`).toBe(status);
  expect(response.headers['content-type'], label).toMatch(/^application\/json/);
  const body = response.json();
  expect(Object.keys(body), label).toEqual(['detail']);
  expect(typeof body.detail, label).toBe('string');
  expect(body.detail.length, label).toBeGreaterThan(0);
  expectCleanBody(response, label);
  return body.detail;
}

/** The JSON log lines written so far. */
function logLines(t: TestPlatform): Array<Record<string, unknown>> {
  return t.logs
    .join('')
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

/** Reads one sample of a Prometheus text exposition (0 when the series does not exist yet). */
function sample(exposition: string, name: string, labels: Record<string, string>): number {
  for (const line of exposition.split('\n')) {
    if (!line.startsWith(`${name}{`)) continue;
    const open = line.indexOf('{');
    const close = line.lastIndexOf('}');
    const found: Record<string, string> = {};
    for (const match of line.slice(open + 1, close).matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) {
      found[match[1]!] = match[2]!;
    }
    if (Object.entries(labels).every(([key, value]) => found[key] === value)) {
      return Number(line.slice(close + 1).trim());
    }
  }
  return 0;
}

let t: TestPlatform;
let f: Factories;
beforeAll(async () => {
  t = await startTestPlatform();
  f = new Factories(t);
});
afterAll(() => t.close());

describe('X-Request-Id', () => {
  it('is a fresh UUID on every response, success or error', async () => {
    const responses = await Promise.all([
      t.app.inject({ method: 'GET', url: '/health' }),
      t.app.inject({ method: 'GET', url: '/openapi.json' }),
      t.app.inject({ method: 'GET', url: '/metrics' }),
      t.app.inject({ method: 'GET', url: '/no/such/route' }),
      t.app.inject({ method: 'GET', url: '/api/v1/users/me' }),
      t.app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: {} }),
      t.app.inject({
        method: 'POST',
        url: '/api/v1/auth/login',
        headers: { 'content-type': 'application/json' },
        payload: '{"email":',
      }),
      t.app.inject({
        method: 'POST',
        url: '/api/v1/auth/login',
        headers: { 'content-type': 'application/xml' },
        payload: '<login/>',
      }),
    ]);
    const ids = responses.map((response) => response.headers['x-request-id']);
    for (const [index, id] of ids.entries()) {
      expect(id, `response ${index} (${responses[index]!.statusCode})`).toMatch(UUID);
    }
    expect(new Set(ids).size).toBe(ids.length);
    expect(responses.map((r) => r.statusCode)).toEqual([200, 200, 200, 404, 401, 422, 422, 415]);
  });

  it('echoes a sane incoming X-Request-Id and uses it in the log', async () => {
    const incoming = `trace-${randomBytes(6).toString('hex')}.span_7:a-B`;
    const response = await t.app.inject({
      method: 'GET',
      url: '/health',
      headers: { 'x-request-id': incoming },
    });
    expect(response.headers['x-request-id']).toBe(incoming);
    await waitFor(() => logLines(t).some((line) => line.reqId === incoming));

    const longest = 'a'.repeat(128);
    const kept = await t.app.inject({
      method: 'GET',
      url: '/no/such/route',
      headers: { 'x-request-id': longest },
    });
    expect(kept.statusCode).toBe(404);
    expect(kept.headers['x-request-id']).toBe(longest);
  });

  it('replaces an insane incoming X-Request-Id with a UUID', async () => {
    for (const insane of [
      'a'.repeat(129),
      'x'.repeat(300),
      'has spaces in it',
      'semi;colon',
      '<script>alert(1)</script>',
      'quote"s',
      'ünïcode',
    ]) {
      const response = await t.app.inject({
        method: 'GET',
        url: '/health',
        headers: { 'x-request-id': insane },
      });
      expect(response.statusCode).toBe(200);
      expect(response.headers['x-request-id'], insane).toMatch(UUID);
    }
  });
});

describe('error envelope', () => {
  it('answers an unknown path with 404 {detail}', async () => {
    for (const [method, url] of [
      ['GET', '/nope'],
      ['POST', '/api/v1/does-not-exist'],
      ['DELETE', '/api/v1/users/me'],
      ['GET', '/api/v2/users/me'],
    ] as const) {
      const response = await t.app.inject({ method, url });
      expectErrorBody(response, 404, `${method} ${url}`);
    }
  });

  it('does not repeat the query string of an unknown path', async () => {
    const secret = `q-${randomBytes(8).toString('hex')}`;
    const response = await t.app.inject({ method: 'GET', url: `/nope?token=${secret}` });
    const detail = expectErrorBody(response, 404);
    expect(detail).not.toContain(secret);
  });

  it('answers an unsupported content type with 415 {detail}', async () => {
    for (const type of ['application/xml', 'application/x-www-form-urlencoded', 'multipart/form-data']) {
      const response = await t.app.inject({
        method: 'POST',
        url: '/api/v1/auth/register',
        headers: { 'content-type': type },
        payload: 'email=a@b.test&password=whatever',
      });
      expectErrorBody(response, 415, type);
    }
  });

  it('answers malformed JSON with 422 and a json_invalid issue at body', async () => {
    for (const payload of ['{"email": "a@b.test",', '{not json}', "{'single': 'quotes'}", '[1, 2']) {
      const response = await t.app.inject({
        method: 'POST',
        url: '/api/v1/auth/register',
        headers: { 'content-type': 'application/json' },
        payload,
      });
      expect(response.statusCode, payload).toBe(422);
      const { detail } = response.json();
      expect(detail).toHaveLength(1);
      expect(detail[0]).toMatchObject({ loc: ['body'], type: 'json_invalid' });
      expect(typeof detail[0].msg).toBe('string');
      expectCleanBody(response, payload);
    }
  });

  it('answers schema failures with 422 and FastAPI-style issues', async () => {
    const response = await t.app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: {} });
    expect(response.statusCode).toBe(422);
    const { detail } = response.json();
    expect(Array.isArray(detail)).toBe(true);
    expect(detail.length).toBeGreaterThan(0);
    for (const issue of detail) {
      expect(Object.keys(issue).sort()).toEqual(['loc', 'msg', 'type']);
      expect(issue.loc[0]).toBe('body');
    }
    expect(detail).toContainEqual(expect.objectContaining({ loc: ['body', 'email'], type: 'missing' }));
  });

  it('never puts a stack trace, SQL or internal detail in any error body', async () => {
    const user = await f.user();
    const email = uniqueEmail('dup');
    const register = (password: string) =>
      t.app.inject({
        method: 'POST',
        url: '/api/v1/auth/register',
        payload: { email, password, first_name: 'Dup', last_name: 'Licate' },
      });
    // Concurrent registrations of one email: exactly one wins, the others get a clean 409.
    const parallel = await Promise.all(Array.from({ length: 5 }, () => register('a long password')));
    expect(parallel.map((r) => r.statusCode).sort()).toEqual([201, 409, 409, 409, 409]);

    const failures: Array<[string, LightMyRequestResponse]> = [
      ...parallel
        .filter((r) => r.statusCode === 409)
        .map((r) => ['duplicate register', r] as [string, LightMyRequestResponse]),
      [
        'bad id type',
        await t.app.inject({
          method: 'DELETE',
          url: '/api/v1/users/me/api-keys/not-a-number',
          headers: user.headers,
        }),
      ],
      [
        'id out of int range',
        await t.app.inject({
          method: 'DELETE',
          url: '/api/v1/users/me/api-keys/99999999999999999999',
          headers: user.headers,
        }),
      ],
      [
        'missing key',
        await t.app.inject({
          method: 'DELETE',
          url: '/api/v1/users/me/api-keys/2147483647',
          headers: user.headers,
        }),
      ],
      [
        'injection-looking body',
        await t.app.inject({
          method: 'POST',
          url: '/api/v1/auth/login',
          payload: { email: "x@y.test' OR 1=1; DROP TABLE users; --", password: "' OR '1'='1" },
        }),
      ],
      [
        'wrong password',
        await t.app.inject({
          method: 'POST',
          url: '/api/v1/auth/login',
          payload: { email: user.email, password: 'not the password' },
        }),
      ],
      [
        'bad verification token',
        await t.app.inject({ method: 'GET', url: "/api/v1/auth/verify-email?token=x'%20OR%201=1--" }),
      ],
      [
        'bad refresh token',
        await t.app.inject({
          method: 'POST',
          url: '/api/v1/auth/refresh',
          payload: { refresh_token: 'nope' },
        }),
      ],
      [
        'cookie without CSRF',
        await t.app.inject({
          method: 'POST',
          url: '/api/v1/users/me/api-keys',
          cookies: { sb_session: user.sessionCookie },
          payload: { name: 'k' },
        }),
      ],
      [
        'huge number',
        await t.app.inject({
          method: 'POST',
          url: '/api/v1/users/me/api-keys',
          headers: user.headers,
          payload: { name: 'k', rate_limit: 1e308 },
        }),
      ],
      [
        'bad json',
        await t.app.inject({
          method: 'POST',
          url: '/api/v1/auth/login',
          headers: { 'content-type': 'application/json' },
          payload: '{',
        }),
      ],
      [
        'garbage bearer',
        await t.app.inject({
          method: 'GET',
          url: '/api/v1/users/me',
          headers: { authorization: 'Bearer x' },
        }),
      ],
      ['not found', await t.app.inject({ method: 'GET', url: '/etc/passwd' })],
    ];
    for (const [label, response] of failures) {
      expect(response.statusCode, `${label}: ${response.body}`).toBeGreaterThanOrEqual(400);
      expect(response.statusCode, `${label}: ${response.body}`).toBeLessThan(500);
      expect(response.headers['x-request-id'], label).toMatch(UUID);
      expectCleanBody(response, label);
      const { detail } = response.json();
      expect(typeof detail === 'string' || Array.isArray(detail), label).toBe(true);
    }
  });
});

describe('unexpected errors (a bare Fastify with the error handler)', () => {
  async function bareApp() {
    const logs: string[] = [];
    const sink = new Writable({
      write(chunk, _encoding, done) {
        logs.push(String(chunk));
        done();
      },
    });
    const logger: FastifyBaseLogger = pino({ level: 'info' }, sink);
    const app = Fastify({ loggerInstance: logger });
    installErrorHandling(app);
    app.get('/boom', async () => {
      throw new Error('boom with SELECT * FROM secrets');
    });
    app.get('/boom-sync', () => {
      const error = new TypeError('Cannot read properties of undefined (reading "password_hash")');
      throw error;
    });
    app.get('/database', async () => {
      throw Object.assign(new Error('duplicate key value violates unique constraint "users_email_key"'), {
        code: '23505',
        detail: 'Key (email)=(a@b.test) already exists.',
      });
    });
    app.get('/client-error', async () => {
      throw Object.assign(new Error('insert into audit failed at /work/main/src/x.ts:1:2'), {
        statusCode: 409,
      });
    });
    app.get('/app-error', async () => {
      throw new AppError(429, 'Slow down', { 'Retry-After': '7' });
    });
    app.get('/validation', async () => {
      throw invalidField(['body', 'schedule', 0], 'End must be after start');
    });
    await app.ready();
    return { app, logs };
  }

  it('answers 500 {detail: "Internal server error"} with nothing of the error in it', async () => {
    const { app, logs } = await bareApp();
    try {
      for (const url of ['/boom', '/boom-sync', '/database']) {
        const response = await app.inject({ method: 'GET', url });
        expect(response.statusCode, url).toBe(500);
        expect(response.json(), url).toEqual({ detail: 'Internal server error' });
        for (const leak of [
          'boom',
          'SELECT',
          'secrets',
          'password_hash',
          'duplicate',
          'users_email_key',
          'a@b.test',
        ]) {
          expect(response.body, url).not.toContain(leak);
        }
        expectCleanBody(response, url);
      }
      // The operator still finds the real error in the log.
      const logged = logs.join('');
      expect(logged).toContain('boom with SELECT * FROM secrets');
      expect(logged).toContain('unhandled error');
    } finally {
      await app.close();
    }
  });

  it('keeps the status of a client error but not its text', async () => {
    const { app } = await bareApp();
    try {
      const response = await app.inject({ method: 'GET', url: '/client-error' });
      expect(response.statusCode).toBe(409);
      expect(response.json()).toEqual({ detail: 'Bad request' });
      expectCleanBody(response, 'client-error');
    } finally {
      await app.close();
    }
  });

  it('answers AppError and ValidationFailed with their own status, headers and detail', async () => {
    const { app } = await bareApp();
    try {
      const limited = await app.inject({ method: 'GET', url: '/app-error' });
      expect(limited.statusCode).toBe(429);
      expect(limited.headers['retry-after']).toBe('7');
      expect(limited.json()).toEqual({ detail: 'Slow down' });
      const invalid = await app.inject({ method: 'GET', url: '/validation' });
      expect(invalid.statusCode).toBe(422);
      expect(invalid.json()).toEqual({
        detail: [{ loc: ['body', 'schedule', 0], msg: 'End must be after start', type: 'value_error' }],
      });
    } finally {
      await app.close();
    }
  });
});

describe('GET /health', () => {
  it('reports the database, the queue and the version', async () => {
    const response = await t.app.inject({ method: 'GET', url: '/health' });
    expect(response.statusCode).toBe(200);
    expect(response.json()).toEqual({ status: 'ok', database: 'ok', queue: 'ok', version: VERSION });
    expect(VERSION).toMatch(/^\d+\.\d+\.\d+/);
  });
});

describe('GET /metrics', () => {
  it('counts requests by route pattern, never by raw URL', async () => {
    const before = (await t.app.inject({ method: 'GET', url: '/metrics' })).body;
    const keyRoute = { method: 'PUT', route: '/api/v1/users/me/api-keys/:key_id', status_code: '401' };
    const verifyRoute = { method: 'GET', route: '/api/v1/auth/verify-email', status_code: '400' };
    const rawId = '987654321';
    const rawToken = `tok${randomBytes(8).toString('hex')}`;
    for (const id of [rawId, '123456789', '555555555']) {
      const response = await t.app.inject({
        method: 'PUT',
        url: `/api/v1/users/me/api-keys/${id}`,
        payload: {},
      });
      expect(response.statusCode).toBe(401);
    }
    const verify = await t.app.inject({ method: 'GET', url: `/api/v1/auth/verify-email?token=${rawToken}` });
    expect(verify.statusCode).toBe(400);
    const unknownPath = `/unknown-${randomBytes(4).toString('hex')}/777`;
    expect((await t.app.inject({ method: 'GET', url: unknownPath })).statusCode).toBe(404);

    const response = await t.app.inject({ method: 'GET', url: '/metrics' });
    expect(response.statusCode).toBe(200);
    expect(response.headers['content-type']).toMatch(/^text\/plain/);
    const text = response.body;
    expect(text).toContain('# TYPE switchboard_http_requests_total counter');
    expect(text).toContain('switchboard_http_request_duration_seconds_bucket');
    expect(sample(text, 'switchboard_http_requests_total', keyRoute)).toBe(
      sample(before, 'switchboard_http_requests_total', keyRoute) + 3,
    );
    expect(sample(text, 'switchboard_http_requests_total', verifyRoute)).toBe(
      sample(before, 'switchboard_http_requests_total', verifyRoute) + 1,
    );
    for (const raw of [rawId, '123456789', rawToken, unknownPath, 'token=']) {
      expect(text, raw).not.toContain(raw);
    }
    const routes = new Set(
      [...text.matchAll(/switchboard_http_requests_total\{[^}]*route="([^"]*)"/g)].map((m) => m[1]),
    );
    for (const route of routes) {
      expect(route, 'route label').not.toMatch(/\?|\/\d+(?:\/|$)/);
    }
    // Node's own process metrics carry the prefix too.
    expect(text).toMatch(/^switchboard_process_cpu_user_seconds_total /m);
  });
});

describe('GET /metrics: background jobs', () => {
  it("counts this process's job runs by job and outcome, with their durations", async () => {
    const labels = { job: 'mail.send', outcome: 'completed' };
    const before = (await t.app.inject({ method: 'GET', url: '/metrics' })).body;
    const done = sample(before, 'switchboard_jobs_total', labels);
    // A registration sends its verification mail as a `mail.send` job.
    const register = await t.app.inject({
      method: 'POST',
      url: '/api/v1/auth/register',
      payload: { email: uniqueEmail('jobs'), password: 'long enough', first_name: 'J', last_name: 'M' },
    });
    expect(register.statusCode).toBe(201);
    const text = await waitFor(async () => {
      const now = (await t.app.inject({ method: 'GET', url: '/metrics' })).body;
      return sample(now, 'switchboard_jobs_total', labels) >= done + 1 ? now : undefined;
    });
    expect(text).toContain('# TYPE switchboard_jobs_total counter');
    expect(
      sample(text, 'switchboard_job_duration_seconds_count', { job: 'mail.send' }),
    ).toBeGreaterThanOrEqual(done + 1);
    expect(sample(text, 'switchboard_jobs_total', { job: 'mail.send', outcome: 'failed' })).toBe(0);
  });
});

describe('GET /openapi.json', () => {
  it('is OpenAPI 3.1 with every operation declaring its security', async () => {
    const response = await t.app.inject({ method: 'GET', url: '/openapi.json' });
    expect(response.statusCode).toBe(200);
    const doc = response.json();
    expect(doc.openapi).toBe('3.1.0');
    expect(doc.info.version).toBe(VERSION);
    expect(Object.keys(doc.components.securitySchemes).sort()).toEqual(['bearerAuth', 'cookieAuth']);
    for (const path of [
      '/health',
      '/api/v1/auth/register',
      '/api/v1/auth/login',
      '/api/v1/auth/refresh',
      '/api/v1/users/me',
      '/api/v1/users/me/api-keys',
      '/api/v1/users/me/api-keys/{key_id}',
      '/api/v1/organization',
    ]) {
      expect(doc.paths, path).toHaveProperty([path]);
    }
    for (const path of Object.keys(doc.paths)) {
      expect(path, 'OpenAPI path templates, not Fastify patterns').not.toContain(':');
    }
    expect(doc.paths).not.toHaveProperty(['/openapi.json']);

    const operation = (path: string, method: string) => doc.paths[path][method];
    for (const [path, method] of [
      ['/health', 'get'],
      ['/metrics', 'get'],
      ['/api/v1/auth/register', 'post'],
      ['/api/v1/auth/login', 'post'],
      ['/api/v1/auth/refresh', 'post'],
      ['/api/v1/auth/verify-email', 'get'],
    ] as const) {
      expect(operation(path, method)?.security, `${method} ${path}`).toEqual([]);
    }
    for (const [path, method] of [
      ['/api/v1/users/me', 'get'],
      ['/api/v1/users/me/api-keys', 'post'],
      ['/api/v1/users/me/api-keys/{key_id}', 'delete'],
      ['/api/v1/organization', 'get'],
      ['/api/v1/auth/logout', 'post'],
    ] as const) {
      const security = operation(path, method)?.security;
      expect(Array.isArray(security) && security.length > 0, `${method} ${path}`).toBe(true);
    }

    let publicCount = 0;
    let protectedCount = 0;
    for (const [path, operations] of Object.entries(
      doc.paths as Record<string, Record<string, Record<string, unknown>>>,
    )) {
      for (const [method, op] of Object.entries(operations)) {
        const label = `${method} ${path}`;
        expect(Array.isArray(op.security), label).toBe(true);
        const security = op.security as Array<Record<string, unknown>>;
        const responses = op.responses as Record<string, unknown>;
        if (security.length === 0) {
          publicCount += 1;
          continue;
        }
        protectedCount += 1;
        for (const requirement of security) {
          for (const scheme of Object.keys(requirement)) {
            expect(doc.components.securitySchemes, label).toHaveProperty([scheme]);
          }
        }
        expect(responses, label).toHaveProperty(['401']);
        expect(responses, label).toHaveProperty(['403']);
      }
    }
    expect(publicCount).toBeGreaterThanOrEqual(6);
    expect(protectedCount).toBeGreaterThanOrEqual(8);
  });

  it('documents request bodies and path parameters from the validating schemas', async () => {
    const doc = (await t.app.inject({ method: 'GET', url: '/openapi.json' })).json();
    const login = doc.paths['/api/v1/auth/login'].post;
    const schema = login.requestBody.content['application/json'].schema;
    expect(schema.properties).toHaveProperty('email');
    expect(schema.properties).toHaveProperty('password');
    expect(schema.required).toEqual(expect.arrayContaining(['email', 'password']));
    const remove = doc.paths['/api/v1/users/me/api-keys/{key_id}'].delete;
    expect(remove.parameters).toContainEqual(
      expect.objectContaining({ name: 'key_id', in: 'path', required: true }),
    );
  });
});

describe('GET /docs', () => {
  it('answers an HTML API reference', async () => {
    let url = '/docs';
    let response = await t.app.inject({ method: 'GET', url });
    for (let hops = 0; response.statusCode >= 300 && response.statusCode < 400 && hops < 5; hops++) {
      const location = String(response.headers.location);
      url = new URL(location, `http://localhost${url}`).pathname;
      response = await t.app.inject({ method: 'GET', url });
    }
    expect(response.statusCode).toBe(200);
    expect(response.headers['content-type']).toMatch(/^text\/html/);
    expect(response.body).toMatch(/<html/i);
    expect(response.headers['x-request-id']).toMatch(UUID);
  });
});

describe('log redaction', () => {
  it('logs every request without any credential, cookie, password or URL token', async () => {
    const tag = randomBytes(6).toString('hex');
    const secrets = {
      jwt: `eyJhbGciOiJIUzI1NiJ9.secretjwt${tag}.signature${tag}`,
      apiKey: `sk_secretApiKey${tag}`,
      cookie: `00000000-0000-4000-8000-000000000000.cookieSecret${tag}`,
      csrf: `csrfSecret${tag}`,
      password: `passwordSecret${tag}`,
      urlToken: `abcUrlToken${tag}`,
      urlApiKey: `urlApiKey${tag}`,
      refresh: `refreshSecret${tag}`,
    };

    const requests = [
      { method: 'GET', url: '/api/v1/users/me', headers: { authorization: `Bearer ${secrets.jwt}` } },
      { method: 'GET', url: '/api/v1/users/me', headers: { authorization: `Bearer ${secrets.apiKey}` } },
      { method: 'GET', url: '/api/v1/users/me', headers: { cookie: `sb_session=${secrets.cookie}` } },
      {
        method: 'POST',
        url: '/api/v1/users/me/api-keys',
        headers: { cookie: `sb_session=${secrets.cookie}`, 'x-csrf-token': secrets.csrf },
        payload: { name: 'k' },
      },
      {
        method: 'POST',
        url: '/api/v1/auth/login',
        payload: { email: 'nobody@example.test', password: secrets.password },
      },
      {
        method: 'POST',
        url: '/api/v1/auth/login',
        payload: { email: 'not-an-email', password: secrets.password },
      },
      { method: 'GET', url: `/api/v1/auth/verify-email?token=${secrets.urlToken}` },
      { method: 'GET', url: `/api/v1/users/me?api_key=${secrets.urlApiKey}&x=1` },
      { method: 'POST', url: '/api/v1/auth/refresh', payload: { refresh_token: secrets.refresh } },
    ] as const;
    const ids: string[] = [];
    for (const request of requests) {
      const response = await t.app.inject(request);
      expect(response.statusCode, `${request.method} ${request.url}`).toBeGreaterThanOrEqual(400);
      ids.push(String(response.headers['x-request-id']));
    }

    // A real user's real credentials, used successfully, and the token of the verification mail.
    const email = uniqueEmail('logs');
    const password = `realPassword${tag}`;
    const registered = await t.app.inject({
      method: 'POST',
      url: '/api/v1/auth/register',
      payload: { email, password, first_name: 'Log', last_name: 'Check' },
    });
    expect(registered.statusCode).toBe(201);
    const verification = await verificationToken(t, email);
    const verified = await t.app.inject({
      method: 'GET',
      url: `/api/v1/auth/verify-email?token=${verification}`,
    });
    ids.push(String(verified.headers['x-request-id']));
    const user = await f.login({ email, password });
    const me = await t.app.inject({ method: 'GET', url: '/api/v1/users/me', headers: user.headers });
    expect(me.statusCode).toBe(200);
    ids.push(String(me.headers['x-request-id']));
    const key = await f.apiKey(user);
    const withKey = await t.app.inject({ method: 'GET', url: '/api/v1/users/me', headers: key.headers });
    expect(withKey.statusCode).toBe(200);
    const withCookie = await t.app.inject({
      method: 'POST',
      url: '/api/v1/auth/logout',
      cookies: { sb_session: user.sessionCookie },
      headers: { 'x-csrf-token': user.csrfToken },
    });
    expect(withCookie.statusCode).toBeLessThan(300);
    ids.push(String(withKey.headers['x-request-id']), String(withCookie.headers['x-request-id']));

    // Every request was logged, start and end.
    await waitFor(() =>
      ids.every((id) => logLines(t).some((line) => line.reqId === id && line.msg === 'request completed')),
    );
    const lines = logLines(t);
    for (const id of ids) {
      const incoming = lines.find((line) => line.reqId === id && line.msg === 'incoming request');
      expect(incoming, id).toBeDefined();
      expect((incoming!.req as { url: string }).url, id).toMatch(/^\//);
    }
    const urls = lines.map((line) => (line.req as { url?: string } | undefined)?.url).filter(Boolean);
    expect(urls).toContain('/api/v1/auth/verify-email?token=[REDACTED]');
    expect(urls).toContain('/api/v1/users/me?api_key=[REDACTED]&x=1');

    const everything = t.logs.join('');
    const realSecrets = {
      password,
      verification,
      accessToken: user.accessToken,
      refreshToken: user.refreshToken,
      sessionCookie: user.sessionCookie,
      csrfToken: user.csrfToken,
      apiKey: key.key,
    };
    for (const [name, value] of Object.entries({ ...secrets, ...realSecrets })) {
      expect(value.length, name).toBeGreaterThanOrEqual(12);
      expect(everything.includes(value), `${name} appears in the log`).toBe(false);
    }
    expect(everything).not.toMatch(/"authorization"|"cookie"|"x-csrf-token"/i);
  });
});

describe('a platform with BODY_LIMIT_BYTES=2048 and METRICS_TOKEN', () => {
  const metricsToken = `metrics-${randomBytes(12).toString('hex')}`;
  let small: TestPlatform;
  beforeAll(async () => {
    small = await startTestPlatform({ BODY_LIMIT_BYTES: '2048', METRICS_TOKEN: metricsToken });
  });
  afterAll(() => small.close());
  /** `value` as JSON, padded with trailing whitespace to exactly `bytes` bytes. */
  function padTo(bytes: number, value: unknown): string {
    const json = JSON.stringify(value);
    expect(Buffer.byteLength(json)).toBeLessThan(bytes);
    return json + ' '.repeat(bytes - Buffer.byteLength(json));
  }

  it('answers a body over the limit with 413 {detail}', async () => {
    const response = await small.app.inject({
      method: 'POST',
      url: '/api/v1/auth/register',
      payload: {
        email: 'big@example.test',
        password: 'a long password',
        first_name: 'x'.repeat(4096),
        last_name: 'Big',
      },
    });
    expectErrorBody(response, 413);
    expect(response.headers['x-request-id']).toMatch(UUID);
    expect(response.body).not.toContain('xxxxxxxx');
  });

  it('still accepts a body under the limit', async () => {
    const response = await small.app.inject({
      method: 'POST',
      url: '/api/v1/auth/register',
      headers: { 'content-type': 'application/json' },
      payload: padTo(2000, {
        email: uniqueEmail('small'),
        password: 'a long password',
        first_name: 'S',
        last_name: 'S',
      }),
    });
    expect(response.statusCode, response.body).toBe(201);
  });

  it('measures the body, not its content: valid JSON padded just past the limit gets 413', async () => {
    const response = await small.app.inject({
      method: 'POST',
      url: '/api/v1/auth/register',
      headers: { 'content-type': 'application/json' },
      payload: padTo(2049, {
        email: uniqueEmail('edge'),
        password: 'a long password',
        first_name: 'E',
        last_name: 'E',
      }),
    });
    expectErrorBody(response, 413);
  });

  it('refuses /metrics without the bearer token, and serves it with it', async () => {
    const cases: Array<[string, Record<string, string>]> = [
      ['no header', {}],
      ['wrong token', { authorization: 'Bearer wrong-token' }],
      ['token prefix', { authorization: `Bearer ${metricsToken.slice(0, -1)}` }],
      ['token as basic', { authorization: `Basic ${metricsToken}` }],
      ['bare token', { authorization: metricsToken }],
    ];
    for (const [label, headers] of cases) {
      const response = await small.app.inject({ method: 'GET', url: '/metrics', headers });
      const detail = expectErrorBody(response, 401, label);
      expect(detail, label).not.toContain(metricsToken);
      expect(response.body, label).not.toContain('switchboard_http_requests_total');
    }
    const ok = await small.app.inject({
      method: 'GET',
      url: '/metrics',
      headers: { authorization: `Bearer ${metricsToken}` },
    });
    expect(ok.statusCode).toBe(200);
    expect(ok.headers['content-type']).toMatch(/^text\/plain/);
    expect(ok.body).toContain('switchboard_http_requests_total');
  });

  it('does not guard /metrics on the platform without a token', async () => {
    const response = await t.app.inject({ method: 'GET', url: '/metrics' });
    expect(response.statusCode).toBe(200);
    expect(t.config.metricsToken).toBeUndefined();
  });
});
