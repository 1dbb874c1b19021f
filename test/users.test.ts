/**
 * /api/v1/users/me (GET, PUT), /api/v1/users/me/change-password and /api/v1/users (the member list):
 * happy paths, every validation rule, credentials and ways in (API keys are refused where a signed-in
 * user is required, and need the `organization` area for the member list), organization scoping,
 * email re-verification, stored preferences, and the end of every other session on a password change.
 * One platform for the whole file; the tests share its database (every test makes its own users).
 */
import { randomBytes } from 'node:crypto';
import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Permissions } from '../src/domains/identity/principal.js';
import { insertMembership, updateUser } from '../src/domains/identity/store.js';
import { expectError, expectValidation } from './support/assertions.js';
import { Factories, type TestUser, uniqueEmail } from './support/factories.js';
import { type Mail, startTestPlatform, type TestPlatform, waitFor } from './support/harness.js';

let t: TestPlatform;
let f: Factories;
beforeAll(async () => {
  t = await startTestPlatform();
  f = new Factories(t);
});
afterAll(() => t.close());

const ME = '/api/v1/users/me';
const CHANGE_PASSWORD = '/api/v1/users/me/change-password';
const USERS = '/api/v1/users';
const LOGIN = '/api/v1/auth/login';
const REFRESH = '/api/v1/auth/refresh';
const VERIFY = '/api/v1/auth/verify-email';

const ALL_AREAS: Permissions = {
  assistants: 'read_write',
  calls: 'read_write',
  campaigns: 'read_write',
  graphs: 'read_write',
  sms: 'read_write',
  phone_numbers: 'read_write',
  organization: 'read_write',
};

interface Credentials {
  headers?: Record<string, string>;
  cookies?: Record<string, string>;
}

function call(method: 'GET' | 'PUT' | 'POST', url: string, payload?: unknown, credentials: Credentials = {}) {
  return t.app.inject({
    method,
    url,
    ...(payload === undefined ? {} : { payload: payload as object }),
    ...(credentials.headers ? { headers: credentials.headers } : {}),
    ...(credentials.cookies ? { cookies: credentials.cookies } : {}),
  });
}

const get = (url: string, credentials: Credentials = {}) => call('GET', url, undefined, credentials);
const put = (url: string, payload: unknown, credentials: Credentials = {}) =>
  call('PUT', url, payload, credentials);
const post = (url: string, payload: unknown, credentials: Credentials = {}) =>
  call('POST', url, payload, credentials);

const bearer = (token: string) => ({ headers: { authorization: `Bearer ${token}` } });
const cookieOnly = (cookie: string) => ({ cookies: { sb_session: cookie } });
const cookieWithCsrf = (cookie: string, csrf: string) => ({
  cookies: { sb_session: cookie },
  headers: { 'x-csrf-token': csrf },
});

function newPassword(): string {
  return `pw-${randomBytes(8).toString('hex')}`;
}

function expect401(response: LightMyRequestResponse): void {
  expectError(response, 401);
}

function verifyMailsTo(email: string): Mail[] {
  return t.mails().filter((m) => m.to === email && /Verify/.test(m.subject));
}

function tokenOf(mail: Mail): string {
  const token = /console\/verify\?token=([A-Za-z0-9_-]+)/.exec(mail.body)?.[1];
  if (!token) throw new Error(`No token in ${mail.file}`);
  return token;
}

async function profile(user: TestUser) {
  const response = await get(ME, { headers: user.headers });
  expect(response.statusCode, response.body).toBe(200);
  return response.json();
}

const PROFILE_KEYS = [
  'created_at',
  'email',
  'email_verified_at',
  'first_name',
  'id',
  'is_verified',
  'last_name',
  'organization_id',
  'organizations',
  'preferences',
  'role',
  'updated_at',
];

describe('GET /api/v1/users/me', () => {
  it('returns the profile to a JWT, the session cookie and an API key (any area)', async () => {
    const user = await f.user({ organizationName: 'Profile Org' });
    const { key } = await f.apiKey(user, { permissions: {} });
    for (const [via, credentials] of [
      ['jwt', { headers: user.headers }],
      ['cookie', cookieOnly(user.sessionCookie)],
      ['api key', bearer(key)],
    ] as const) {
      const response = await get(ME, credentials);
      expect(response.statusCode, `${via}: ${response.body}`).toBe(200);
      const body = response.json();
      expect(Object.keys(body).sort(), via).toEqual(PROFILE_KEYS);
      expect(body, via).toMatchObject({
        id: user.id,
        email: user.email,
        first_name: 'Test',
        last_name: 'User',
        is_verified: true,
        email_verified_at: expect.any(String),
        preferences: {},
        organization_id: user.organizationId,
        role: 'admin',
        organizations: [
          { id: user.organizationId, name: 'Profile Org', slug: expect.any(String), role: 'admin' },
        ],
      });
      expect(response.body, via).not.toContain(user.password);
      expect(response.body, via).not.toMatch(/password|scrypt/i);
    }
  });

  it('answers 401 without credentials, with a garbage bearer and with a garbage cookie', async () => {
    expect401(await get(ME));
    expect401(await get(ME, bearer('garbage')));
    expect401(await get(ME, bearer('sk_garbagegarbagegarbagegarbagegarbage')));
    expect401(await get(ME, cookieOnly('garbage')));
  });
});

describe('PUT /api/v1/users/me', () => {
  it('changes the names (trimmed) and answers the updated profile, which GET shows too', async () => {
    const user = await f.user();
    const response = await put(
      ME,
      { first_name: '  Ada ', last_name: 'Lovelace  ' },
      { headers: user.headers },
    );
    expect(response.statusCode, response.body).toBe(200);
    const body = response.json();
    expect(Object.keys(body).sort()).toEqual(PROFILE_KEYS);
    expect(body).toMatchObject({
      id: user.id,
      email: user.email,
      first_name: 'Ada',
      last_name: 'Lovelace',
      is_verified: true,
      organization_id: user.organizationId,
      role: 'admin',
    });
    expect(await profile(user)).toMatchObject({
      first_name: 'Ada',
      last_name: 'Lovelace',
      email: user.email,
    });

    // A field left out is left alone.
    const onlyLast = await put(ME, { last_name: 'Byron' }, { headers: user.headers });
    expect(onlyLast.statusCode, onlyLast.body).toBe(200);
    expect(onlyLast.json()).toMatchObject({ first_name: 'Ada', last_name: 'Byron', is_verified: true });
  });

  it('accepts names of exactly 100 characters', async () => {
    const user = await f.user();
    const name = 'n'.repeat(100);
    const response = await put(ME, { first_name: name, last_name: name }, { headers: user.headers });
    expect(response.statusCode, response.body).toBe(200);
    expect(response.json()).toMatchObject({ first_name: name, last_name: name });
  });

  it('stores preferences and returns them; they are replaced by the next preferences and kept otherwise', async () => {
    const user = await f.user();
    const preferences = { timezone: 'Europe/London', theme: 'dark', digest: { daily: true, hour: 7 } };
    const response = await put(ME, { preferences }, { headers: user.headers });
    expect(response.statusCode, response.body).toBe(200);
    expect(response.json().preferences).toEqual(preferences);
    expect((await profile(user)).preferences).toEqual(preferences);

    // A change that does not name preferences keeps them.
    const names = await put(ME, { first_name: 'Grace' }, { headers: user.headers });
    expect(names.json().preferences).toEqual(preferences);
    expect((await profile(user)).preferences).toEqual(preferences);

    // New preferences replace the stored ones as a whole.
    const replaced = await put(
      ME,
      { preferences: { timezone: 'America/New_York' } },
      { headers: user.headers },
    );
    expect(replaced.statusCode, replaced.body).toBe(200);
    expect(replaced.json().preferences).toEqual({ timezone: 'America/New_York' });
    expect((await profile(user)).preferences).toEqual({ timezone: 'America/New_York' });

    // Preferences without a time zone are allowed too.
    const noZone = await put(ME, { preferences: { theme: 'light' } }, { headers: user.headers });
    expect(noZone.statusCode, noZone.body).toBe(200);
    expect((await profile(user)).preferences).toEqual({ theme: 'light' });
  });

  it.each(['UTC', 'Asia/Kolkata', 'America/Argentina/Buenos_Aires', 'Pacific/Chatham'])(
    'accepts the IANA time zone %s',
    async (timezone) => {
      const user = await f.user();
      const response = await put(ME, { preferences: { timezone } }, { headers: user.headers });
      expect(response.statusCode, response.body).toBe(200);
      expect((await profile(user)).preferences).toEqual({ timezone });
    },
  );

  it.each(['Mars/Olympus_Mons', 'Europe/Londres', 'Not a zone', 'GMT+25'])(
    'answers 422 at body.preferences.timezone for the unknown time zone %j, and stores nothing',
    async (timezone) => {
      const user = await f.user();
      await put(ME, { preferences: { timezone: 'Europe/Paris' } }, { headers: user.headers });
      const response = await put(
        ME,
        { first_name: 'Changed', preferences: { timezone } },
        { headers: user.headers },
      );
      expectValidation(response, ['body', 'preferences', 'timezone']);
      const after = await profile(user);
      expect(after.preferences).toEqual({ timezone: 'Europe/Paris' });
      expect(after.first_name).toBe('Test');
    },
  );

  it('answers 422 at body.preferences.timezone for an empty, over-long or non-string time zone', async () => {
    const user = await f.user();
    for (const timezone of ['', `Europe/${'x'.repeat(60)}`, 42, true, null, ['UTC'], { zone: 'UTC' }]) {
      const response = await put(ME, { preferences: { timezone } }, { headers: user.headers });
      expectValidation(response, ['body', 'preferences', 'timezone']);
    }
    expect((await profile(user)).preferences).toEqual({});
  });

  it('answers 422 at body.preferences when preferences is not an object', async () => {
    const user = await f.user();
    for (const preferences of ['UTC', 7, null, ['timezone']]) {
      expectValidation(await put(ME, { preferences }, { headers: user.headers }), ['body', 'preferences']);
    }
  });

  it('answers 422 for empty, over-long or non-string names, and changes nothing', async () => {
    const user = await f.user();
    for (const field of ['first_name', 'last_name']) {
      expectValidation(
        await put(ME, { [field]: '' }, { headers: user.headers }),
        ['body', field],
        'string_too_short',
      );
      expectValidation(
        await put(ME, { [field]: 'x'.repeat(101) }, { headers: user.headers }),
        ['body', field],
        'string_too_long',
      );
      for (const value of [null, 5, ['Ada'], { name: 'Ada' }]) {
        expectValidation(await put(ME, { [field]: value }, { headers: user.headers }), ['body', field]);
      }
    }
    // One bad field refuses the whole change.
    expectValidation(await put(ME, { first_name: 'Fine', last_name: '' }, { headers: user.headers }), [
      'body',
      'last_name',
    ]);
    expect(await profile(user)).toMatchObject({ first_name: 'Test', last_name: 'User' });
  });

  it('answers 422 for a name of only spaces instead of storing an empty name', async () => {
    const user = await f.user();
    const response = await put(ME, { first_name: '   ' }, { headers: user.headers });
    expectValidation(response, ['body', 'first_name']);
    expect((await profile(user)).first_name).toBe('Test');
  });

  it.each(['not-an-email', 'two@@example.test', 'no-domain@', '@example.test', 'spaces in@example.test', ''])(
    'answers 422 at body.email for the malformed email %j',
    async (email) => {
      const user = await f.user();
      expectValidation(await put(ME, { email }, { headers: user.headers }), ['body', 'email']);
      expect(await profile(user)).toMatchObject({ email: user.email, is_verified: true });
    },
  );

  it('answers 422 for an email over 254 characters, and for a non-string email', async () => {
    const user = await f.user();
    expectValidation(await put(ME, { email: `${'a'.repeat(250)}@example.test` }, { headers: user.headers }), [
      'body',
      'email',
    ]);
    expectValidation(await put(ME, { email: 12 }, { headers: user.headers }), ['body', 'email']);
    expect((await profile(user)).email).toBe(user.email);
  });

  it('answers 422 json_invalid for malformed JSON', async () => {
    const user = await f.user();
    const response = await t.app.inject({
      method: 'PUT',
      url: ME,
      headers: { ...user.headers, 'content-type': 'application/json' },
      payload: '{"first_name": "Ada",',
    });
    expect(response.statusCode, response.body).toBe(422);
    expect(response.json()).toEqual({
      detail: [{ loc: ['body'], msg: expect.any(String), type: 'json_invalid' }],
    });
  });

  it('makes a changed email unverified and mails a verification token to the new address only', async () => {
    const user = await f.user();
    // The registration mail is written first, so the count below is final.
    await waitFor(() => verifyMailsTo(user.email)[0]);
    const oldMails = verifyMailsTo(user.email).length;
    const newEmail = uniqueEmail('moved').replace('moved', 'Moved');
    const response = await put(ME, { email: newEmail }, { headers: user.headers });
    expect(response.statusCode, response.body).toBe(200);
    expect(response.json()).toMatchObject({
      id: user.id,
      email: newEmail.toLowerCase(),
      is_verified: false,
      email_verified_at: null,
    });
    expect(await profile(user)).toMatchObject({ email: newEmail.toLowerCase(), is_verified: false });

    const mail = await waitFor(() => verifyMailsTo(newEmail.toLowerCase())[0]);
    expect(verifyMailsTo(user.email)).toHaveLength(oldMails);

    // The unverified user loses what needs a verified account, at once (no stale cached principal).
    const keyAttempt = await post(
      '/api/v1/users/me/api-keys',
      { name: 'after move' },
      { headers: user.headers },
    );
    expectError(keyAttempt, 403, /[Vv]erify/);

    // The new address signs in; the old one does not.
    expect((await post(LOGIN, { email: newEmail, password: user.password })).statusCode).toBe(200);
    expect401(await post(LOGIN, { email: user.email, password: user.password }));

    // The token from the mail verifies the new address.
    const verified = await post(VERIFY, { token: tokenOf(mail) });
    expect(verified.statusCode, verified.body).toBe(200);
    expect(await profile(user)).toMatchObject({ email: newEmail.toLowerCase(), is_verified: true });
  });

  it('does not let a verification token mailed to the old address verify the new one', async () => {
    // The registration mail's token was never used (the factory verifies directly).
    const user = await f.user();
    const mailedToOldAddress = await waitFor(() => verifyMailsTo(user.email)[0]);
    const oldToken = tokenOf(mailedToOldAddress);

    const newEmail = uniqueEmail('taken-over');
    const response = await put(ME, { email: newEmail }, { headers: user.headers });
    expect(response.statusCode, response.body).toBe(200);
    expect(response.json().is_verified).toBe(false);

    const attempt = await post(VERIFY, { token: oldToken });
    expectError(attempt, 400);
    expect(await profile(user)).toMatchObject({ email: newEmail, is_verified: false });
  });

  it('keeps the verification when the same email is sent again, in another letter case', async () => {
    const user = await f.user();
    await waitFor(() => verifyMailsTo(user.email)[0]);
    const before = verifyMailsTo(user.email).length;
    const upper = await put(ME, { email: user.email.toUpperCase() }, { headers: user.headers });
    expect(upper.statusCode, upper.body).toBe(200);
    expect(upper.json()).toMatchObject({ email: user.email, is_verified: true });
    await new Promise((resolve) => setTimeout(resolve, 1500));
    expect(verifyMailsTo(user.email)).toHaveLength(before);
  });

  it('answers 409 for an email another account has, in any letter case, and changes nothing', async () => {
    const user = await f.user();
    const other = await f.user();
    await waitFor(() => verifyMailsTo(other.email)[0]);
    const mailsToOther = verifyMailsTo(other.email).length;
    for (const email of [other.email, other.email.toUpperCase()]) {
      const response = await put(ME, { email, first_name: 'Thief' }, { headers: user.headers });
      expectError(response, 409, /already exists/);
    }
    expect(await profile(user)).toMatchObject({ email: user.email, first_name: 'Test', is_verified: true });
    expect(await profile(other)).toMatchObject({ email: other.email, is_verified: true });
    // Workers are woken at commit and poll every 0.5 s: give a wrongly queued mail time to appear.
    await new Promise((resolve) => setTimeout(resolve, 1500));
    expect(verifyMailsTo(other.email)).toHaveLength(mailsToOther);
  });

  it('answers 403 to an API key, even one with every area, and changes nothing', async () => {
    const user = await f.user();
    const { key } = await f.apiKey(user, { permissions: ALL_AREAS });
    const response = await put(ME, { first_name: 'ViaKey', email: uniqueEmail('key') }, bearer(key));
    expectError(response, 403, /API key/);
    expect(await profile(user)).toMatchObject({ first_name: 'Test', email: user.email, is_verified: true });
  });

  it('answers 401 without credentials, and 403 for the session cookie without X-CSRF-Token', async () => {
    const user = await f.user();
    expect401(await put(ME, { first_name: 'Nobody' }));
    expect401(await put(ME, { first_name: 'Nobody' }, bearer('garbage')));
    expectError(await put(ME, { first_name: 'Cookie' }, cookieOnly(user.sessionCookie)), 403, /CSRF/);
    expect((await profile(user)).first_name).toBe('Test');

    const withCsrf = await put(
      ME,
      { first_name: 'Cookie' },
      cookieWithCsrf(user.sessionCookie, user.csrfToken),
    );
    expect(withCsrf.statusCode, withCsrf.body).toBe(200);
    expect((await profile(user)).first_name).toBe('Cookie');
  });
});

describe('POST /api/v1/users/me/change-password', () => {
  it('with the right current password: ends every other session, keeps the caller’s, swaps the password', async () => {
    const user = await f.user();
    const other = await f.login(user);
    // A third session in another organization of the user.
    const elsewhere = await f.user();
    await insertMembership(t.database.db, user.id, elsewhere.organizationId, 'user');
    const third = await f.login(user, elsewhere.organizationId);
    const { key } = await f.apiKey(user, { permissions: { organization: 'read' } });

    // Warm every cache first, so the test shows they are emptied.
    for (const credentials of [
      { headers: other.headers },
      cookieOnly(other.sessionCookie),
      { headers: third.headers },
      cookieOnly(third.sessionCookie),
      { headers: user.headers },
      cookieOnly(user.sessionCookie),
      bearer(key),
    ]) {
      expect((await get(ME, credentials)).statusCode).toBe(200);
    }

    const password = newPassword();
    const response = await post(
      CHANGE_PASSWORD,
      { current_password: user.password, new_password: password },
      { headers: user.headers },
    );
    expect(response.statusCode, response.body).toBe(200);
    expect(response.json()).toEqual({ message: expect.any(String), sessions_ended: 2 });
    expect(response.body).not.toContain(password);

    // The other sessions are over: access tokens, cookies and refresh tokens.
    for (const ended of [other, third]) {
      expect401(await get(ME, { headers: ended.headers }));
      expect401(await get(ME, cookieOnly(ended.sessionCookie)));
      expect401(await post(REFRESH, { refresh_token: ended.refreshToken }));
    }

    // The caller's own session keeps working, through all three of its credentials.
    expect((await get(ME, { headers: user.headers })).statusCode).toBe(200);
    expect((await get(ME, cookieOnly(user.sessionCookie))).statusCode).toBe(200);
    const refreshed = await post(REFRESH, { refresh_token: user.refreshToken });
    expect(refreshed.statusCode, refreshed.body).toBe(200);
    // API keys are not sessions.
    expect((await get(ME, bearer(key))).statusCode).toBe(200);

    // The new password signs in; the old one does not.
    expect401(await post(LOGIN, { email: user.email, password: user.password }));
    const login = await post(LOGIN, { email: user.email, password });
    expect(login.statusCode, login.body).toBe(200);
    expect(login.json().user.id).toBe(user.id);
  });

  it('works from the session cookie with X-CSRF-Token, and keeps that cookie session alive', async () => {
    const user = await f.user();
    const other = await f.login(user);
    expectError(
      await post(
        CHANGE_PASSWORD,
        { current_password: user.password, new_password: newPassword() },
        cookieOnly(user.sessionCookie),
      ),
      403,
      /CSRF/,
    );
    // The refused request changed nothing.
    expect((await get(ME, { headers: other.headers })).statusCode).toBe(200);

    const password = newPassword();
    const response = await post(
      CHANGE_PASSWORD,
      { current_password: user.password, new_password: password },
      cookieWithCsrf(user.sessionCookie, user.csrfToken),
    );
    expect(response.statusCode, response.body).toBe(200);
    expect(response.json().sessions_ended).toBe(1);
    expect((await get(ME, cookieOnly(user.sessionCookie))).statusCode).toBe(200);
    expect((await get(ME, { headers: user.headers })).statusCode).toBe(200);
    expect401(await get(ME, { headers: other.headers }));
    expect((await post(LOGIN, { email: user.email, password })).statusCode).toBe(200);
  });

  it('answers 400 for a wrong current password and changes nothing', async () => {
    const user = await f.user();
    const other = await f.login(user);
    const wrong = await post(
      CHANGE_PASSWORD,
      { current_password: `${user.password}-wrong`, new_password: newPassword() },
      { headers: user.headers },
    );
    expectError(wrong, 400, /incorrect/i);
    // An empty current password is not a way around it for an account that has one.
    expectError(
      await post(
        CHANGE_PASSWORD,
        { current_password: '', new_password: newPassword() },
        { headers: user.headers },
      ),
      400,
    );
    expect((await get(ME, { headers: other.headers })).statusCode).toBe(200);
    expect((await post(REFRESH, { refresh_token: other.refreshToken })).statusCode).toBe(200);
    expect((await post(LOGIN, { email: user.email, password: user.password })).statusCode).toBe(200);
  });

  it('lets an account without a password set one with an empty current_password, and not otherwise', async () => {
    const user = await f.user();
    const other = await f.login(user);
    await updateUser(t.database.db, user.id, { passwordHash: null });
    // No password: nothing signs in.
    expect401(await post(LOGIN, { email: user.email, password: user.password }));

    for (const current of [user.password, 'anything at all']) {
      const refused = await post(
        CHANGE_PASSWORD,
        { current_password: current, new_password: newPassword() },
        { headers: user.headers },
      );
      expectError(refused, 400, /empty/);
    }
    expect401(await post(LOGIN, { email: user.email, password: user.password }));

    const password = newPassword();
    const response = await post(
      CHANGE_PASSWORD,
      { current_password: '', new_password: password },
      { headers: user.headers },
    );
    expect(response.statusCode, response.body).toBe(200);
    expect(response.json().sessions_ended).toBe(1);
    expect401(await get(ME, { headers: other.headers }));
    expect((await get(ME, { headers: user.headers })).statusCode).toBe(200);
    const login = await post(LOGIN, { email: user.email, password });
    expect(login.statusCode, login.body).toBe(200);

    // Now the account has a password: an empty current_password no longer works.
    expectError(
      await post(
        CHANGE_PASSWORD,
        { current_password: '', new_password: newPassword() },
        { headers: user.headers },
      ),
      400,
    );
    expect((await post(LOGIN, { email: user.email, password })).statusCode).toBe(200);
  });

  it('accepts a new password of exactly 8 characters', async () => {
    const user = await f.user();
    const password = `8c${randomBytes(3).toString('hex')}`;
    expect(password).toHaveLength(8);
    const response = await post(
      CHANGE_PASSWORD,
      { current_password: user.password, new_password: password },
      { headers: user.headers },
    );
    expect(response.statusCode, response.body).toBe(200);
    expect((await post(LOGIN, { email: user.email, password })).statusCode).toBe(200);
  });

  it('answers 422 for a short, over-long, missing or non-string password, and changes nothing', async () => {
    const user = await f.user();
    const current = user.password;
    const cases: Array<[Record<string, unknown>, string, string?]> = [
      [{ current_password: current, new_password: 'short12' }, 'new_password', 'string_too_short'],
      [{ current_password: current, new_password: '' }, 'new_password', 'string_too_short'],
      [{ current_password: current, new_password: 'x'.repeat(257) }, 'new_password', 'string_too_long'],
      [{ current_password: current }, 'new_password', 'missing'],
      [{ current_password: current, new_password: 12345678 }, 'new_password'],
      [{ current_password: current, new_password: null }, 'new_password'],
      [{ new_password: newPassword() }, 'current_password', 'missing'],
      [
        { current_password: 'x'.repeat(257), new_password: newPassword() },
        'current_password',
        'string_too_long',
      ],
      [{ current_password: null, new_password: newPassword() }, 'current_password'],
    ];
    for (const [payload, field, type] of cases) {
      expectValidation(
        await post(CHANGE_PASSWORD, payload, { headers: user.headers }),
        ['body', field],
        type,
      );
    }
    const empty = await post(CHANGE_PASSWORD, {}, { headers: user.headers });
    expectValidation(empty, ['body', 'current_password'], 'missing');
    expectValidation(empty, ['body', 'new_password'], 'missing');
    expect((await post(LOGIN, { email: user.email, password: current })).statusCode).toBe(200);
  });

  it('answers 401 without credentials and 403 to an API key, and changes nothing', async () => {
    const user = await f.user();
    const { key } = await f.apiKey(user, { permissions: ALL_AREAS });
    const payload = { current_password: user.password, new_password: newPassword() };
    expect401(await post(CHANGE_PASSWORD, payload));
    expect401(await post(CHANGE_PASSWORD, payload, bearer('garbage')));
    expectError(await post(CHANGE_PASSWORD, payload, bearer(key)), 403, /API key/);
    expect((await get(ME, { headers: user.headers })).statusCode).toBe(200);
    expect((await post(LOGIN, { email: user.email, password: user.password })).statusCode).toBe(200);
  });
});

describe('GET /api/v1/users', () => {
  const MEMBER_KEYS = ['email', 'first_name', 'id', 'is_verified', 'joined_at', 'last_name', 'role'];

  async function organizationWithMembers() {
    const admin = await f.user();
    const member = await f.member(admin.organizationId, 'user');
    const second = await f.member(admin.organizationId, 'admin');
    const unverified = await f.member(admin.organizationId, 'user', { verified: false });
    // Another organization, with a member of its own.
    const outsider = await f.user();
    const outsiderMember = await f.member(outsider.organizationId, 'user');
    return { admin, member, second, unverified, outsider, outsiderMember };
  }

  it("lists the organization's members with their roles, ordered by id", async () => {
    const { admin, member, second, unverified, outsider, outsiderMember } = await organizationWithMembers();
    const response = await get(USERS, { headers: admin.headers });
    expect(response.statusCode, response.body).toBe(200);
    const list = response.json();
    expect(list.map((m: { id: number }) => m.id)).toEqual([admin.id, member.id, second.id, unverified.id]);
    for (const entry of list) expect(Object.keys(entry).sort()).toEqual(MEMBER_KEYS);
    expect(list).toEqual([
      {
        id: admin.id,
        email: admin.email,
        first_name: 'Test',
        last_name: 'User',
        role: 'admin',
        is_verified: true,
        joined_at: expect.any(String),
      },
      expect.objectContaining({ id: member.id, email: member.email, role: 'user', is_verified: true }),
      expect.objectContaining({ id: second.id, email: second.email, role: 'admin', is_verified: true }),
      expect.objectContaining({
        id: unverified.id,
        email: unverified.email,
        role: 'user',
        is_verified: false,
      }),
    ]);
    for (const entry of list) expect(Number.isNaN(Date.parse(entry.joined_at))).toBe(false);
    for (const stranger of [outsider, outsiderMember]) {
      expect(response.body).not.toContain(stranger.email);
    }
    expect(response.body).not.toMatch(/password|scrypt/i);
  });

  it('is open to members who are not admins, with the same list', async () => {
    const { admin, member } = await organizationWithMembers();
    const asAdmin = await get(USERS, { headers: admin.headers });
    const asMember = await get(USERS, { headers: member.headers });
    expect(asMember.statusCode, asMember.body).toBe(200);
    expect(asMember.json()).toEqual(asAdmin.json());
  });

  it("never lists another organization's members: the list follows the organization of the session", async () => {
    const { admin, member, outsider, outsiderMember } = await organizationWithMembers();
    const outsiderList = await get(USERS, { headers: outsider.headers });
    expect(outsiderList.json().map((m: { id: number }) => m.id)).toEqual([outsider.id, outsiderMember.id]);
    expect(outsiderList.body).not.toContain(admin.email);
    expect(outsiderList.body).not.toContain(member.email);

    // A user in both organizations sees the one their session is in.
    const both = await f.member(admin.organizationId, 'user');
    await insertMembership(t.database.db, both.id, outsider.organizationId, 'admin');
    const here = await get(USERS, { headers: both.headers });
    expect(here.json().map((m: { id: number }) => m.id)).toContain(admin.id);
    expect(here.json().map((m: { id: number }) => m.id)).not.toContain(outsider.id);
    expect(here.json().find((m: { id: number }) => m.id === both.id).role).toBe('user');

    const there = await f.login(both, outsider.organizationId);
    const thereList = await get(USERS, { headers: there.headers });
    expect(thereList.json().map((m: { id: number }) => m.id)).toEqual([
      outsider.id,
      outsiderMember.id,
      both.id,
    ]);
    expect(thereList.json().find((m: { id: number }) => m.id === both.id).role).toBe('admin');
    expect(thereList.body).not.toContain(admin.email);

    // The user's own organization is a third, separate list.
    const ownOrganization = (await profile(both)).organizations.find(
      (o: { id: number }) => o.id !== admin.organizationId && o.id !== outsider.organizationId,
    ).id as number;
    const own = await f.login(both, ownOrganization);
    expect((await get(USERS, { headers: own.headers })).json().map((m: { id: number }) => m.id)).toEqual([
      both.id,
    ]);
  });

  it('answers an API key with the organization area (read is enough), scoped to its organization', async () => {
    const { admin, member, outsider } = await organizationWithMembers();
    const expected = (await get(USERS, { headers: admin.headers })).json();
    for (const level of ['read', 'read_write'] as const) {
      const { key } = await f.apiKey(admin, { permissions: { organization: level } });
      const response = await get(USERS, bearer(key));
      expect(response.statusCode, response.body).toBe(200);
      expect(response.json()).toEqual(expected);
    }
    // A non-admin's key sees the same organization; another organization's key sees only its own.
    const { key: memberKey } = await f.apiKey(member, { permissions: { organization: 'read' } });
    expect((await get(USERS, bearer(memberKey))).json()).toEqual(expected);
    const { key: outsiderKey } = await f.apiKey(outsider, { permissions: { organization: 'read' } });
    const outsiderList = await get(USERS, bearer(outsiderKey));
    expect(outsiderList.statusCode).toBe(200);
    expect(outsiderList.body).not.toContain(admin.email);
  });

  it('answers 403 to an API key without the organization area', async () => {
    const admin = await f.user();
    for (const permissions of [
      {},
      { assistants: 'read_write', calls: 'read_write', campaigns: 'read_write' },
    ] as Permissions[]) {
      const { key } = await f.apiKey(admin, { permissions });
      expectError(await get(USERS, bearer(key)), 403, /organization/);
    }
  });

  it('answers 401 without credentials or with garbage ones', async () => {
    expect401(await get(USERS));
    expect401(await get(USERS, bearer('garbage')));
    expect401(await get(USERS, cookieOnly('garbage')));
  });

  it('answers the session cookie alone (a GET needs no X-CSRF-Token)', async () => {
    const admin = await f.user();
    const response = await get(USERS, cookieOnly(admin.sessionCookie));
    expect(response.statusCode, response.body).toBe(200);
    expect(response.json().map((m: { id: number }) => m.id)).toEqual([admin.id]);
  });
});
