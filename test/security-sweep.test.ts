/**
 * The security sweep (ENGINEERING "Tests"): walks the app's own OpenAPI document and proves that
 * every operation which declares security refuses a request without valid credentials with 401
 * `{detail}` — no credentials, garbage bearers, unknown API keys, forged or tampered JWTs, and a
 * garbage session cookie. New routes are swept automatically as soon as they are documented.
 */
import { decodeJwt, SignJWT } from 'jose';
import { beforeAll, describe, expect, it } from 'vitest';
import { deriveKey } from '../src/lib/crypto.js';
import { Factories, type TestUser } from './support/factories.js';
import { TEST_SECRET_KEY, useTestPlatform } from './support/harness.js';
import { documentedOperations, type Operation, urlOf } from './support/openapi-walk.js';

/** `{alg: none}` JWT carrying `claims`: a server that skips the signature check would accept it. */
function unsignedJwt(claims: Record<string, unknown>): string {
  const encode = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
  return `${encode({ alg: 'none', typ: 'JWT' })}.${encode(claims)}.`;
}

// Its close waits for the verification mails of the users below (see the JobQueue.stop report:
// pg-boss completes a job without awaiting it, racing the database close).
const t = useTestPlatform();
let user: TestUser;
let other: TestUser;
let operations: Operation[];
beforeAll(async () => {
  user = await new Factories(t).user();
  other = await new Factories(t).user();
  operations = await documentedOperations(t);
});

const isProtected = (operation: Operation) => operation.security.length > 0;

/** Sends one request to an operation as the sweep does: params 1, `{}` as the body of writes. */
function send(
  operation: Operation,
  headers: Record<string, string> = {},
  cookies: Record<string, string> = {},
) {
  const hasBody = operation.method === 'POST' || operation.method === 'PUT' || operation.method === 'PATCH';
  return t.app.inject({
    method: operation.method,
    url: urlOf(operation, () => '1'),
    headers,
    cookies,
    ...(hasBody ? { payload: {} } : {}),
  });
}

/** Every protected operation answers 401 `{detail: string}` to this request. */
async function sweep(label: string, headers: Record<string, string>, cookies: Record<string, string> = {}) {
  const swept: string[] = [];
  for (const operation of operations.filter(isProtected)) {
    const name = `${label}: ${operation.method} ${operation.path}`;
    const response = await send(operation, headers, cookies);
    expect(response.statusCode, `${name} → ${response.body}`).toBe(401);
    const body = response.json();
    expect(Object.keys(body), name).toEqual(['detail']);
    expect(typeof body.detail, name).toBe('string');
    expect(body.detail.length, name).toBeGreaterThan(0);
    expect(response.headers['www-authenticate'], name).toMatch(/^Bearer/);
    expect(response.headers['x-request-id'], name).toBeTruthy();
    swept.push(`${operation.method} ${operation.path}`);
  }
  return swept;
}

describe('the sweep is not vacuous', () => {
  it('finds at least 8 protected operations and leaves the public ones out', () => {
    const swept = operations.filter(isProtected).map((o) => `${o.method} ${o.path}`);
    expect(swept.length).toBeGreaterThanOrEqual(8);
    // Routes that must be protected are among them, including one with a path parameter.
    for (const name of [
      'GET /api/v1/users/me',
      'GET /api/v1/users/me/api-keys',
      'POST /api/v1/users/me/api-keys',
      'PUT /api/v1/users/me/api-keys/{key_id}',
      'DELETE /api/v1/users/me/api-keys/{key_id}',
      'GET /api/v1/organization',
      'POST /api/v1/auth/logout',
    ]) {
      expect(swept, name).toContain(name);
    }
    // The public ones are documented, and are not swept.
    const all = operations.map((o) => `${o.method} ${o.path}`);
    for (const name of ['GET /health', 'POST /api/v1/auth/login', 'POST /api/v1/auth/register']) {
      expect(all, name).toContain(name);
      expect(swept, name).not.toContain(name);
    }
  });

  it('the public operations really answer without credentials', async () => {
    for (const [method, path] of [
      ['GET', '/health'],
      ['POST', '/api/v1/auth/login'],
      ['POST', '/api/v1/auth/register'],
    ] as const) {
      const operation = operations.find((o) => o.method === method && o.path === path);
      expect(operation, `${method} ${path}`).toBeDefined();
      const response = await send(operation!);
      // 200 for /health, 422 for the empty bodies: anything but 401/403.
      expect([401, 403], `${method} ${path} → ${response.statusCode}`).not.toContain(response.statusCode);
    }
  });

  it('the credentials the sweep forges from are real: the user reaches a protected route', async () => {
    const response = await t.app.inject({ method: 'GET', url: '/api/v1/users/me', headers: user.headers });
    expect(response.statusCode).toBe(200);
  });
});

describe('every protected operation refuses', () => {
  it('a request without credentials', async () => {
    const swept = await sweep('no credentials', {});
    expect(swept.length).toBeGreaterThanOrEqual(8);
  });

  it('Authorization: Bearer garbage', async () => {
    const swept = await sweep('garbage bearer', { authorization: 'Bearer garbage' });
    expect(swept.length).toBeGreaterThanOrEqual(8);
  });

  it('an API key that does not exist', async () => {
    await sweep('unknown key', { authorization: 'Bearer sk_notarealkey' });
    await sweep('unknown well-formed key', { authorization: `Bearer sk_${'A1b2C3d4'.repeat(5)}` });
  });

  it('malformed Authorization headers', async () => {
    for (const authorization of ['Bearer', 'Bearer ', 'Basic dXNlcjpwYXNz', 'Token abc', 'garbage']) {
      await sweep(`authorization "${authorization}"`, { authorization });
    }
  });

  it('a session cookie that does not exist, even with a CSRF token', async () => {
    await sweep('garbage cookie', {}, { sb_session: 'garbage' });
    await sweep(
      'well-formed unknown cookie',
      { 'x-csrf-token': 'anything' },
      { sb_session: `00000000-0000-4000-8000-000000000000.${'x'.repeat(43)}` },
    );
  });

  it('a JWT with the real claims but signed with another key', async () => {
    const claims = decodeJwt(user.accessToken);
    expect(claims.sub).toBe(String(user.id));
    const forged = await new SignJWT({ ...claims })
      .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
      .sign(new TextEncoder().encode('not-the-server-secret-key-0123456789'));
    await sweep('forged JWT', { authorization: `Bearer ${forged}` });
  });

  it('an unsigned (alg none) JWT with the real claims', async () => {
    await sweep('alg none', { authorization: `Bearer ${unsignedJwt(decodeJwt(user.accessToken))}` });
  });

  it('the real JWT with a tampered payload or signature', async () => {
    const [header, payload, signature] = user.accessToken.split('.') as [string, string, string];
    const claims = decodeJwt(user.accessToken);
    const escalated = Buffer.from(JSON.stringify({ ...claims, org: (claims.org as number) + 1 })).toString(
      'base64url',
    );
    await sweep('tampered payload', { authorization: `Bearer ${header}.${escalated}.${signature}` });
    const flipped = `${signature.slice(0, -2)}${signature.endsWith('AA') ? 'BB' : 'AA'}`;
    await sweep('tampered signature', { authorization: `Bearer ${header}.${payload}.${flipped}` });
  });

  it('JWTs signed with the server key but not valid for a live session', async () => {
    // Signed exactly as the server signs (same derived key), so only the claims decide.
    const key = deriveKey(TEST_SECRET_KEY, 'jwt-access-token');
    const claims = decodeJwt(user.accessToken) as Record<string, unknown> & { sid: string; org: number };
    const now = Math.floor(Date.now() / 1000);
    const sign = (payload: Record<string, unknown>) =>
      new SignJWT(payload).setProtectedHeader({ alg: 'HS256', typ: 'JWT' }).sign(key);
    // The control: the same signing with the real claims is accepted.
    const control = await sign({ ...claims });
    const accepted = await t.app.inject({
      method: 'GET',
      url: '/api/v1/users/me',
      headers: { authorization: `Bearer ${control}` },
    });
    expect(accepted.statusCode, accepted.body).toBe(200);

    const variants: Record<string, Record<string, unknown>> = {
      expired: { ...claims, iat: now - 7200, exp: now - 60 },
      'other audience': { ...claims, aud: 'someone-else' },
      'other issuer': { ...claims, iss: 'someone-else' },
      'unknown session': { ...claims, sid: '00000000-0000-4000-8000-000000000000' },
      'another user on this session': { ...claims, sub: String(other.id) },
      'an organization the user is not in': { ...claims, org: other.organizationId },
      'no session claim': { ...claims, sid: undefined },
    };
    for (const [label, payload] of Object.entries(variants)) {
      await sweep(label, { authorization: `Bearer ${await sign(payload)}` });
    }
  });

  it('the JWT and cookie of a signed-out session', async () => {
    const session = await new Factories(t).login(user);
    const logout = await t.app.inject({
      method: 'POST',
      url: '/api/v1/auth/logout',
      headers: session.headers,
    });
    expect(logout.statusCode, logout.body).toBeLessThan(300);
    await sweep('signed-out JWT', session.headers);
    await sweep(
      'signed-out cookie',
      { 'x-csrf-token': session.csrfToken },
      { sb_session: session.sessionCookie },
    );
  });
});
