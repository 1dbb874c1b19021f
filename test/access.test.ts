/**
 * Every route access option (public, any credential, signed-in user, JWT only, admin, verified,
 * API key area and level), enforced by the real authenticator on real principals. The routes live
 * on a small app of this test because the foundation has no admin-only or JWT-only route yet.
 */
import fastifyCookie from '@fastify/cookie';
import Fastify, { type FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Access, access } from '../src/http/access.js';
import { installAuthentication, principalOf } from '../src/http/auth.js';
import { installErrorHandling } from '../src/http/errors.js';
import { Factories, type TestApiKey, type TestUser } from './support/factories.js';
import { startTestPlatform, type TestPlatform } from './support/harness.js';

let t: TestPlatform;
let app: FastifyInstance;
let admin: TestUser;
let member: TestUser;
let unverified: TestUser;
let readKey: TestApiKey;
let writeKey: TestApiKey;
let noAreaKey: TestApiKey;

const routes: Record<string, Access> = {
  '/public': access.public,
  '/any': access.authenticated,
  '/user': access.user,
  '/jwt': access.jwtOnly,
  '/admin': access.admin,
  '/verified': { verified: true },
  '/calls': access.area('calls'),
  '/calls-write': access.area('calls', 'read_write'),
};

beforeAll(async () => {
  t = await startTestPlatform();
  const factories = new Factories(t);
  admin = await factories.user();
  member = await factories.member(admin.organizationId, 'user');
  unverified = await factories.user({ verified: false });
  readKey = await factories.apiKey(admin, { permissions: { calls: 'read' } });
  writeKey = await factories.apiKey(admin, { permissions: { calls: 'read_write' } });
  noAreaKey = await factories.apiKey(admin, { permissions: { sms: 'read_write' } });

  app = Fastify();
  await app.register(fastifyCookie);
  installAuthentication(app, t.platform.authenticator);
  installErrorHandling(app);
  for (const [url, declared] of Object.entries(routes)) {
    const handler = async (request: Parameters<typeof principalOf>[0]) =>
      declared.public ? { ok: true } : { via: principalOf(request).via, role: principalOf(request).role };
    app.get(url, { config: { access: declared } }, handler);
    app.post(url, { config: { access: declared } }, handler);
  }
  await app.ready();
});
afterAll(async () => {
  await app.close();
  await t.close();
});

async function call(
  method: 'GET' | 'POST',
  url: string,
  who: { headers?: object; cookies?: Record<string, string> },
) {
  return app.inject({ method, url, headers: who.headers as Record<string, string>, cookies: who.cookies });
}

const cookieOf = (user: TestUser) => ({
  cookies: { sb_session: user.sessionCookie },
  headers: { 'x-csrf-token': user.csrfToken },
});

describe('route access options', () => {
  it('public routes need nothing; every other option needs a credential', async () => {
    expect((await call('GET', '/public', {})).statusCode).toBe(200);
    for (const url of Object.keys(routes).filter((u) => u !== '/public')) {
      const response = await call('GET', url, {});
      expect(response.statusCode, url).toBe(401);
      expect(response.headers['www-authenticate']).toBe('Bearer');
    }
  });

  it('any credential: API key, JWT and cookie all pass', async () => {
    expect((await call('GET', '/any', readKey)).json().via).toBe('api_key');
    expect((await call('GET', '/any', admin)).json().via).toBe('jwt');
    expect((await call('GET', '/any', cookieOf(admin))).json().via).toBe('cookie');
  });

  it('signed-in user: JWT and cookie pass, an API key is refused with 403', async () => {
    expect((await call('GET', '/user', admin)).statusCode).toBe(200);
    expect((await call('GET', '/user', cookieOf(admin))).statusCode).toBe(200);
    const byKey = await call('GET', '/user', readKey);
    expect(byKey.statusCode).toBe(403);
    expect(byKey.json().detail).toMatch(/signed-in user/);
  });

  it('JWT only: the cookie and API keys are refused with 403', async () => {
    expect((await call('GET', '/jwt', admin)).statusCode).toBe(200);
    for (const who of [cookieOf(admin), readKey]) {
      const response = await call('GET', '/jwt', who);
      expect(response.statusCode).toBe(403);
      expect(response.json().detail).toMatch(/JWT bearer access token/);
    }
  });

  it('admin role: an admin passes, a plain member gets 403 on every way in', async () => {
    expect((await call('POST', '/admin', admin)).statusCode).toBe(200);
    expect((await call('POST', '/admin', member)).statusCode).toBe(403);
    expect((await call('POST', '/admin', cookieOf(member))).statusCode).toBe(403);
    expect((await call('POST', '/admin', member)).json().detail).toBe('Admin role required');
  });

  it('verified user: an unverified user gets 403', async () => {
    expect((await call('POST', '/verified', admin)).statusCode).toBe(200);
    const response = await call('POST', '/verified', unverified);
    expect(response.statusCode).toBe(403);
    expect(response.json().detail).toMatch(/Verify your email/);
  });

  it('API key area: read allows GET only, read_write allows both, another area allows neither', async () => {
    expect((await call('GET', '/calls', readKey)).statusCode).toBe(200);
    expect((await call('POST', '/calls', readKey)).statusCode).toBe(403);
    expect((await call('GET', '/calls', writeKey)).statusCode).toBe(200);
    expect((await call('POST', '/calls', writeKey)).statusCode).toBe(200);
    expect((await call('GET', '/calls', noAreaKey)).statusCode).toBe(403);
    expect((await call('GET', '/calls-write', readKey)).statusCode).toBe(403);
    expect((await call('GET', '/calls-write', writeKey)).statusCode).toBe(200);
    // Areas bind API keys only: a signed-in user is judged by role.
    expect((await call('POST', '/calls', member)).statusCode).toBe(200);
  });

  it('a route that declares no access fails the start', async () => {
    const careless = Fastify();
    installAuthentication(careless, t.platform.authenticator);
    expect(() => careless.get('/forgotten', async () => ({}))).toThrow(/does not declare config.access/);
    await careless.close();
  });
});
