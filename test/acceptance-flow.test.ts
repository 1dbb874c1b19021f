/**
 * The foundation's acceptance path: register → verify with the token from the mail file → login →
 * create an API key → GET /users/me with the key, the JWT and the cookie; a cookie-only POST without
 * X-CSRF-Token is refused.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sessionCookieOf } from './support/factories.js';
import { startTestPlatform, type TestPlatform, verificationToken } from './support/harness.js';

let t: TestPlatform;
beforeAll(async () => {
  t = await startTestPlatform();
});
afterAll(() => t.close());

describe('register, verify, login, key, and the three ways in', () => {
  it('walks the whole flow', async () => {
    const email = 'flow.user@example.test';
    const register = await t.app.inject({
      method: 'POST',
      url: '/api/v1/auth/register',
      payload: { email, password: 'a long password', first_name: 'Flow', last_name: 'User' },
    });
    expect(register.statusCode).toBe(201);
    expect(register.json().user.is_verified).toBe(false);

    // The verification mail is written by the job-queue worker as an .eml file.
    const token = await verificationToken(t, email);
    const verify = await t.app.inject({
      method: 'POST',
      url: '/api/v1/auth/verify-email',
      payload: { token },
    });
    expect(verify.statusCode).toBe(200);
    expect(verify.json().user.is_verified).toBe(true);

    const login = await t.app.inject({
      method: 'POST',
      url: '/api/v1/auth/login',
      payload: { email, password: 'a long password' },
    });
    expect(login.statusCode).toBe(200);
    const { access_token: jwt, csrf_token: csrf } = login.json();
    const cookie = sessionCookieOf(login);
    const setCookie = String(login.headers['set-cookie']);
    expect(setCookie).toMatch(/HttpOnly/i);
    expect(setCookie).toMatch(/SameSite=Lax/i);

    const created = await t.app.inject({
      method: 'POST',
      url: '/api/v1/users/me/api-keys',
      headers: { authorization: `Bearer ${jwt}` },
      payload: { name: 'flow key', permissions: { assistants: 'read_write' } },
    });
    expect(created.statusCode).toBe(201);
    const key: string = created.json().key;
    expect(key).toMatch(/^sk_[0-9A-Za-z]{32,}$/);
    expect(created.json().api_key.key_prefix).toBe(key.slice(0, 12));

    for (const [via, headers, cookies] of [
      ['api key', { authorization: `Bearer ${key}` }, {}],
      ['jwt', { authorization: `Bearer ${jwt}` }, {}],
      ['cookie', {}, { sb_session: cookie }],
    ] as const) {
      const me = await t.app.inject({ method: 'GET', url: '/api/v1/users/me', headers, cookies });
      expect(me.statusCode, via).toBe(200);
      expect(me.json().email, via).toBe(email);
      expect(me.json().role, via).toBe('admin');
    }

    const withoutCsrf = await t.app.inject({
      method: 'POST',
      url: '/api/v1/users/me/api-keys',
      cookies: { sb_session: cookie },
      payload: { name: 'via cookie' },
    });
    expect(withoutCsrf.statusCode).toBe(403);
    expect(withoutCsrf.json().detail).toMatch(/CSRF/);

    const withCsrf = await t.app.inject({
      method: 'POST',
      url: '/api/v1/users/me/api-keys',
      cookies: { sb_session: cookie },
      headers: { 'x-csrf-token': csrf },
      payload: { name: 'via cookie' },
    });
    expect(withCsrf.statusCode).toBe(201);
  });
});
