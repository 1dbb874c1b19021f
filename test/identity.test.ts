/**
 * /api/v1/auth: register, verify-email (POST and GET), resend-verification, login, refresh, logout and
 * switch-organization — happy paths, every validation rule, credentials and ways in, session ending,
 * forged and expired access tokens, the verification mail file, and secrets kept out of the logs.
 * One platform for the whole file; the tests share its database (every test makes its own users).
 */
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { count, eq } from 'drizzle-orm';
import type { LightMyRequestResponse } from 'fastify';
import { decodeJwt, SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { organizations, users } from '../src/db/schema/index.js';
import { insertMembership } from '../src/domains/identity/store.js';
import { deriveKey } from '../src/lib/crypto.js';
import { expectError, expectValidation } from './support/assertions.js';
import { Factories, type TestUser, uniqueEmail } from './support/factories.js';
import {
  type Mail,
  startTestPlatform,
  TEST_SECRET_KEY,
  type TestPlatform,
  verificationToken,
  waitFor,
} from './support/harness.js';

let t: TestPlatform;
let f: Factories;
beforeAll(async () => {
  t = await startTestPlatform();
  f = new Factories(t);
});
afterAll(() => t.close());

const REGISTER = '/api/v1/auth/register';
const VERIFY = '/api/v1/auth/verify-email';
const RESEND = '/api/v1/auth/resend-verification';
const LOGIN = '/api/v1/auth/login';
const REFRESH = '/api/v1/auth/refresh';
const LOGOUT = '/api/v1/auth/logout';
const SWITCH = '/api/v1/auth/switch-organization';
const ME = '/api/v1/users/me';

/** Every password and token this file sends or receives; none of them may appear in the logs. */
const secrets = new Set<string>();
function remember(...values: Array<string | undefined>): void {
  for (const value of values) if (value) secrets.add(value);
}

function newPassword(): string {
  const password = `pw-${randomBytes(8).toString('hex')}`;
  remember(password);
  return password;
}

interface Credentials {
  headers?: Record<string, string>;
  cookies?: Record<string, string>;
}

function post(url: string, payload?: unknown, credentials: Credentials = {}) {
  return t.app.inject({
    method: 'POST',
    url,
    ...(payload === undefined ? {} : { payload: payload as object }),
    ...(credentials.headers ? { headers: credentials.headers } : {}),
    ...(credentials.cookies ? { cookies: credentials.cookies } : {}),
  });
}

/** A body sent verbatim as application/json (for malformed JSON). */
function postRaw(url: string, body: string) {
  return t.app.inject({
    method: 'POST',
    url,
    headers: { 'content-type': 'application/json' },
    payload: body,
  });
}

function me(credentials: Credentials) {
  return t.app.inject({
    method: 'GET',
    url: ME,
    ...(credentials.headers ? { headers: credentials.headers } : {}),
    ...(credentials.cookies ? { cookies: credentials.cookies } : {}),
  });
}

const bearer = (token: string) => ({ headers: { authorization: `Bearer ${token}` } });
const cookieOnly = (cookie: string) => ({ cookies: { sb_session: cookie } });
const cookieWithCsrf = (cookie: string, csrf: string) => ({
  cookies: { sb_session: cookie },
  headers: { 'x-csrf-token': csrf },
});

function expectMalformedJson(response: LightMyRequestResponse): void {
  expect(response.statusCode, response.body).toBe(422);
  expect(response.json()).toEqual({
    detail: [{ loc: ['body'], msg: expect.any(String), type: 'json_invalid' }],
  });
}

function expect401(response: LightMyRequestResponse): void {
  expectError(response, 401);
  expect(response.headers['www-authenticate']).toBe('Bearer');
}

/** The shape every sign-in answer shares (register, verify is different, login, refresh, switch). */
function expectTokenBody(body: Record<string, unknown>): void {
  expect(body).toMatchObject({
    access_token: expect.stringMatching(/^[\w-]+\.[\w-]+\.[\w-]+$/),
    token_type: 'bearer',
    expires_in: 1800,
    refresh_token: expect.stringMatching(/^[0-9a-f-]{36}\.[\w-]{20,}$/),
    user: expect.objectContaining({ id: expect.any(Number), email: expect.any(String) }),
    organization: { id: expect.any(Number), name: expect.any(String), slug: expect.any(String) },
    role: expect.stringMatching(/^(admin|user)$/),
  });
  remember(body.access_token as string, body.refresh_token as string, body.csrf_token as string | undefined);
}

function expectSessionCookie(response: LightMyRequestResponse): string {
  const cookie = response.cookies.find((c) => c.name === 'sb_session');
  expect(cookie).toBeDefined();
  expect(cookie!.httpOnly).toBe(true);
  expect(cookie!.sameSite).toMatch(/^lax$/i);
  expect(cookie!.path).toBe('/');
  const header = [response.headers['set-cookie']].flat().find((h) => String(h).startsWith('sb_session='));
  expect(String(header)).toMatch(/;\s*HttpOnly/i);
  expect(String(header)).toMatch(/;\s*SameSite=Lax/i);
  remember(cookie!.value);
  return cookie!.value;
}

async function register(
  overrides: { email?: string; password?: string; organization_name?: string; first_name?: string } = {},
) {
  const email = overrides.email ?? uniqueEmail('reg');
  const password = overrides.password ?? newPassword();
  remember(password);
  const response = await post(REGISTER, {
    email,
    password,
    first_name: overrides.first_name ?? 'Ada',
    last_name: 'Lovelace',
    ...(overrides.organization_name ? { organization_name: overrides.organization_name } : {}),
  });
  return { response, email, password };
}

function mailsTo(email: string): Mail[] {
  return t.mails().filter((m) => m.to === email && /Verify/.test(m.subject));
}

function tokenOf(mail: Mail): string {
  const token = /console\/verify\?token=([A-Za-z0-9_-]+)/.exec(mail.body)?.[1];
  if (!token) throw new Error(`No token in ${mail.file}`);
  remember(token);
  return token;
}

async function organizationCount(): Promise<number> {
  const [row] = await t.database.db.select({ n: count() }).from(organizations);
  return Number(row!.n);
}

/** A verified user with an API key that may do everything (so a 403 is about the way in, not an area). */
async function userWithKey(): Promise<{ user: TestUser; key: string }> {
  const user = await f.user();
  remember(user.password, user.accessToken, user.refreshToken, user.csrfToken, user.sessionCookie);
  const { key } = await f.apiKey(user, {
    permissions: {
      assistants: 'read_write',
      calls: 'read_write',
      campaigns: 'read_write',
      graphs: 'read_write',
      sms: 'read_write',
      phone_numbers: 'read_write',
      organization: 'read_write',
    },
  });
  remember(key);
  return { user, key };
}

async function freshUser(options: { verified?: boolean } = {}): Promise<TestUser> {
  const user = await f.user(options);
  remember(user.password, user.accessToken, user.refreshToken, user.csrfToken, user.sessionCookie);
  return user;
}

async function login(payload: Record<string, unknown>) {
  const response = await post(LOGIN, payload);
  if (response.statusCode === 200) expectTokenBody(response.json());
  return response;
}

const accessKey = deriveKey(TEST_SECRET_KEY, 'jwt-access-token');

/** An access token made outside the server, from the claims of a real one with `changes` applied. */
async function forge(
  real: string,
  changes: {
    key?: Uint8Array;
    exp?: number;
    iat?: number;
    sub?: string;
    org?: number;
    role?: string;
    issuer?: string;
    audience?: string;
  } = {},
): Promise<string> {
  const claims = decodeJwt(real);
  const now = Math.floor(Date.now() / 1000);
  const token = await new SignJWT({
    org: changes.org ?? (claims.org as number),
    role: changes.role ?? (claims.role as string),
    sid: claims.sid as string,
  })
    .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
    .setSubject(changes.sub ?? (claims.sub as string))
    .setIssuer(changes.issuer ?? 'switchboard')
    .setAudience(changes.audience ?? 'switchboard-api')
    .setIssuedAt(changes.iat ?? now)
    .setExpirationTime(changes.exp ?? now + 600)
    .sign(changes.key ?? accessKey);
  remember(token);
  return token;
}

describe('POST /api/v1/auth/register', () => {
  it('creates the user and an organization they administer, signs them in, and sets the session cookie', async () => {
    const before = await organizationCount();
    const { response, email, password } = await register({ organization_name: 'Analytical Engines' });
    expect(response.statusCode, response.body).toBe(201);
    expect(response.headers['x-request-id']).toEqual(expect.any(String));
    const body = response.json();
    expectTokenBody(body);
    expect(body.csrf_token).toEqual(expect.stringMatching(/^[\w-]{20,}$/));
    expect(body.user).toMatchObject({
      email,
      first_name: 'Ada',
      last_name: 'Lovelace',
      is_verified: false,
      email_verified_at: null,
    });
    expect(body.organization.name).toBe('Analytical Engines');
    expect(body.role).toBe('admin');
    expect(await organizationCount()).toBe(before + 1);
    // No password, nor its hash, in the answer.
    expect(response.body).not.toContain(password);
    expect(response.body).not.toMatch(/password|scrypt/i);

    const jwt = decodeJwt(body.access_token);
    expect(jwt).toMatchObject({
      sub: String(body.user.id),
      org: body.organization.id,
      role: 'admin',
      iss: 'switchboard',
      aud: 'switchboard-api',
    });
    expect(jwt.exp! - jwt.iat!).toBe(1800);

    const cookie = expectSessionCookie(response);
    for (const credentials of [bearer(body.access_token), cookieOnly(cookie)]) {
      const profile = await me(credentials);
      expect(profile.statusCode, profile.body).toBe(200);
      expect(profile.json()).toMatchObject({
        id: body.user.id,
        email,
        organization_id: body.organization.id,
        role: 'admin',
        is_verified: false,
      });
    }
  });

  it('stores the email lower-cased and names the organization after the user when no name is given', async () => {
    const email = uniqueEmail('Mixed.Case').replace('mixed', 'Mixed').toUpperCase();
    const { response } = await register({ email, first_name: 'Grace' });
    expect(response.statusCode, response.body).toBe(201);
    expect(response.json().user.email).toBe(email.toLowerCase());
    expect(response.json().organization.name).toBe("Grace's organization");
  });

  it('accepts a password of exactly 8 characters', async () => {
    const password = `8c${randomBytes(3).toString('hex')}`;
    expect(password).toHaveLength(8);
    const { response } = await register({ password });
    expect(response.statusCode, response.body).toBe(201);
  });

  it.each(['email', 'password', 'first_name', 'last_name'])(
    'answers 422 when %s is missing',
    async (field) => {
      const payload: Record<string, string> = {
        email: uniqueEmail('missing'),
        password: newPassword(),
        first_name: 'Ada',
        last_name: 'Lovelace',
      };
      delete payload[field];
      const response = await post(REGISTER, payload);
      expectValidation(response, ['body', field], 'missing');
      expect(response.json().detail).toHaveLength(1);
      expect(response.json().detail[0].msg).toBe('Field required');
    },
  );

  it('lists every missing field of an empty object', async () => {
    const response = await post(REGISTER, {});
    expectValidation(response, ['body', 'email'], 'missing');
    const locs = response.json().detail.map((d: { loc: string[] }) => d.loc.join('.'));
    expect(locs.sort()).toEqual(['body.email', 'body.first_name', 'body.last_name', 'body.password']);
  });

  it.each(['not-an-email', 'two@@example.test', 'no-domain@', '@example.test', 'spaces in@example.test'])(
    'answers 422 for the malformed email %j',
    async (email) => {
      const response = await post(REGISTER, {
        email,
        password: newPassword(),
        first_name: 'Ada',
        last_name: 'Lovelace',
      });
      expectValidation(response, ['body', 'email']);
      expect(response.json().detail[0].type).toMatch(/value_error/);
    },
  );

  it('answers 422 for a password shorter than 8 characters', async () => {
    const password = 'short12';
    remember(password);
    const response = await post(REGISTER, {
      email: uniqueEmail('short'),
      password,
      first_name: 'Ada',
      last_name: 'Lovelace',
    });
    expectValidation(response, ['body', 'password'], 'string_too_short');
  });

  it('answers 422 for empty names and an over-long email', async () => {
    const names = await post(REGISTER, {
      email: uniqueEmail('names'),
      password: newPassword(),
      first_name: '',
      last_name: '',
    });
    expectValidation(names, ['body', 'first_name'], 'string_too_short');
    expectValidation(names, ['body', 'last_name'], 'string_too_short');

    const long = await post(REGISTER, {
      email: `${'a'.repeat(250)}@example.test`,
      password: newPassword(),
      first_name: 'Ada',
      last_name: 'Lovelace',
    });
    expectValidation(long, ['body', 'email']);
  });

  it('answers 422 json_invalid for malformed JSON, and 422 for an empty JSON body', async () => {
    const password = newPassword();
    expectMalformedJson(await postRaw(REGISTER, `{"email": "x@example.test", "password": "${password}",`));
    const empty = await postRaw(REGISTER, '');
    expect(empty.statusCode, empty.body).toBe(422);
    expect(Array.isArray(empty.json().detail)).toBe(true);
  });

  it('answers 409 for an email already registered, in any letter case, and creates nothing', async () => {
    const local = `dup.${randomBytes(4).toString('hex')}`;
    const first = await register({ email: `${local}@example.test` });
    expect(first.response.statusCode).toBe(201);
    const before = await organizationCount();

    for (const email of [`${local}@example.test`, `${local.toUpperCase()}@EXAMPLE.TEST`]) {
      const again = await register({ email });
      expectError(again.response, 409, /already exists/);
    }
    expect(await organizationCount()).toBe(before);
    const rows = await t.database.db
      .select()
      .from(users)
      .where(eq(users.email, `${local}@example.test`));
    expect(rows).toHaveLength(1);
  });

  it("answers 409 for 'A@x' after 'a@x' (the brief's own pair)", async () => {
    const tag = randomBytes(3).toString('hex');
    const lower = await register({ email: `a${tag}@x${tag}.test` });
    expect(lower.response.statusCode, lower.response.body).toBe(201);
    const upper = await register({ email: `A${tag}@X${tag}.test` });
    expectError(upper.response, 409);
  });

  it('lets exactly one of two simultaneous registrations of one email through', async () => {
    const email = uniqueEmail('race');
    const answers = await Promise.all([register({ email }), register({ email: email.toUpperCase() })]);
    expect(answers.map((a) => a.response.statusCode).sort()).toEqual([201, 409]);
    const rows = await t.database.db.select().from(users).where(eq(users.email, email));
    expect(rows).toHaveLength(1);
  });
});

describe('the verification mail and POST|GET /api/v1/auth/verify-email', () => {
  it('writes an RFC 5322 .eml file whose link carries the token, which verifies once (POST)', async () => {
    const { response, email } = await register();
    expect(response.statusCode).toBe(201);
    const userId = response.json().user.id;
    const accessToken = response.json().access_token;

    const token = await verificationToken(t, email);
    remember(token);
    const [mail] = mailsTo(email);
    expect(mail).toBeDefined();
    expect(mail!.file).toMatch(/\.eml$/);
    // Renamed into place whole: no half-written file is left beside it.
    expect(existsSync(`${mail!.file}.partial`)).toBe(false);
    const raw = readFileSync(mail!.file, 'utf8');
    for (const header of ['From', 'To', 'Subject', 'Date', 'Message-ID', 'MIME-Version']) {
      expect(raw).toMatch(new RegExp(`^${header}: .+$`, 'mi'));
    }
    expect(mail!.body).toContain(`http://switchboard.test/console/verify?token=${token}`);

    // Before verification a route that needs a verified user refuses this token…
    const before = await post('/api/v1/users/me/api-keys', { name: 'early' }, bearer(accessToken));
    expectError(before, 403, /[Vv]erify/);

    const verified = await post(VERIFY, { token });
    expect(verified.statusCode, verified.body).toBe(200);
    expect(verified.json()).toMatchObject({
      message: expect.any(String),
      user: { id: userId, email, is_verified: true, email_verified_at: expect.any(String) },
    });

    // …and accepts it at once afterwards (no stale cached principal).
    const after = await post('/api/v1/users/me/api-keys', { name: 'late' }, bearer(accessToken));
    expect(after.statusCode, after.body).toBe(201);
    remember(after.json().key);

    const again = await post(VERIFY, { token });
    expectError(again, 400, /[Ii]nvalid|expired/);
    const viaLink = await t.app.inject({ method: 'GET', url: `${VERIFY}?token=${token}` });
    expectError(viaLink, 400);
  });

  it('verifies by opening the link (GET ?token=), once', async () => {
    const { response, email } = await register();
    expect(response.statusCode).toBe(201);
    const token = await verificationToken(t, email);
    remember(token);

    const opened = await t.app.inject({ method: 'GET', url: `${VERIFY}?token=${token}` });
    expect(opened.statusCode, opened.body).toBe(200);
    expect(opened.json().user).toMatchObject({ email, is_verified: true });

    const reopened = await t.app.inject({ method: 'GET', url: `${VERIFY}?token=${token}` });
    expectError(reopened, 400);
    expectError(await post(VERIFY, { token }), 400);

    const profile = await me(bearer(response.json().access_token));
    expect(profile.json().is_verified).toBe(true);
  });

  it('answers 400 for a token that was never issued', async () => {
    expectError(await post(VERIFY, { token: randomBytes(32).toString('base64url') }), 400);
    expectError(
      await t.app.inject({ method: 'GET', url: `${VERIFY}?token=${randomBytes(32).toString('base64url')}` }),
      400,
    );
  });

  it('answers 422 for a missing, empty or over-long token and for malformed JSON', async () => {
    expectValidation(await post(VERIFY, {}), ['body', 'token'], 'missing');
    expectValidation(await post(VERIFY, { token: '' }), ['body', 'token'], 'string_too_short');
    expectValidation(await post(VERIFY, { token: 'x'.repeat(201) }), ['body', 'token'], 'string_too_long');
    expectValidation(await t.app.inject({ method: 'GET', url: VERIFY }), ['query', 'token'], 'missing');
    expectMalformedJson(await postRaw(VERIFY, '{"token": '));
  });
});

describe('POST /api/v1/auth/resend-verification', () => {
  it('sends a new mail whose token verifies the user', async () => {
    const user = await freshUser({ verified: false });
    await waitFor(() => mailsTo(user.email).length === 1);

    const response = await post(RESEND, undefined, { headers: user.headers });
    expect(response.statusCode, response.body).toBe(200);
    expect(response.json()).toEqual({ message: expect.any(String) });

    const mails = await waitFor(() => {
      const found = mailsTo(user.email);
      return found.length === 2 ? found : undefined;
    });
    const tokens = mails.map(tokenOf);
    expect(new Set(tokens).size).toBe(2);
    const newest = mails.map((m) => m.file).sort()[1]!;
    const token = tokenOf(mails.find((m) => m.file === newest)!);
    const verified = await post(VERIFY, { token });
    expect(verified.statusCode, verified.body).toBe(200);
    expect(verified.json().user.is_verified).toBe(true);
  });

  it('works with the session cookie and its X-CSRF-Token, and refuses the cookie alone (403)', async () => {
    const user = await freshUser({ verified: false });
    const withoutCsrf = await post(RESEND, undefined, cookieOnly(user.sessionCookie));
    expectError(withoutCsrf, 403, /CSRF/);
    const wrongCsrf = await post(RESEND, undefined, cookieWithCsrf(user.sessionCookie, 'not-the-token'));
    expectError(wrongCsrf, 403, /CSRF/);
    const withCsrf = await post(RESEND, undefined, cookieWithCsrf(user.sessionCookie, user.csrfToken));
    expect(withCsrf.statusCode, withCsrf.body).toBe(200);
  });

  it('answers 400 for a user who is already verified', async () => {
    const user = await freshUser();
    expectError(await post(RESEND, undefined, { headers: user.headers }), 400, /already verified/);
  });

  it('answers 401 without credentials and 403 with an API key', async () => {
    const anonymous = await post(RESEND);
    expect401(anonymous);
    expect(anonymous.headers['x-request-id']).toEqual(expect.any(String));
    const { key } = await userWithKey();
    expectError(await post(RESEND, undefined, bearer(key)), 403, /API key/);
  });
});

describe('POST /api/v1/auth/login', () => {
  it('signs a user in: token body, csrf_token and the HttpOnly SameSite=Lax session cookie', async () => {
    const user = await freshUser();
    const response = await login({ email: user.email, password: user.password });
    expect(response.statusCode, response.body).toBe(200);
    const body = response.json();
    expect(body.user).toMatchObject({ id: user.id, email: user.email, is_verified: true });
    expect(body.organization.id).toBe(user.organizationId);
    expect(body.role).toBe('admin');
    expect(body.csrf_token).toEqual(expect.any(String));
    expect(response.body).not.toContain(user.password);
    const cookie = expectSessionCookie(response);
    // A new login is a new session: new tokens, a different session id.
    expect(body.access_token).not.toBe(user.accessToken);
    expect(cookie).not.toBe(user.sessionCookie);
    expect(decodeJwt(body.access_token).sid).not.toBe(decodeJwt(user.accessToken).sid);

    for (const credentials of [bearer(body.access_token), cookieOnly(cookie)]) {
      const profile = await me(credentials);
      expect(profile.statusCode, profile.body).toBe(200);
      expect(profile.json()).toMatchObject({
        id: user.id,
        organization_id: user.organizationId,
        role: 'admin',
      });
    }
  });

  it('matches the email in any letter case and around spaces', async () => {
    const user = await freshUser();
    const upper = await login({ email: user.email.toUpperCase(), password: user.password });
    expect(upper.statusCode, upper.body).toBe(200);
    expect(upper.json().user.id).toBe(user.id);
    const padded = await login({ email: `  ${user.email}  `, password: user.password });
    expect(padded.statusCode, padded.body).toBe(200);
  });

  it('lets an unverified user sign in (verification gates other routes, not login)', async () => {
    const user = await freshUser({ verified: false });
    const response = await login({ email: user.email, password: user.password });
    expect(response.statusCode, response.body).toBe(200);
    expect(response.json().user.is_verified).toBe(false);
  });

  it('opens the organization named by organization_id, with the role held there', async () => {
    const owner = await freshUser();
    const member = await freshUser();
    await insertMembership(t.database.db, member.id, owner.organizationId, 'user');

    const there = await login({
      email: member.email,
      password: member.password,
      organization_id: owner.organizationId,
    });
    expect(there.statusCode, there.body).toBe(200);
    expect(there.json().organization.id).toBe(owner.organizationId);
    expect(there.json().role).toBe('user');
    expect(decodeJwt(there.json().access_token)).toMatchObject({ org: owner.organizationId, role: 'user' });
    const profile = await me(bearer(there.json().access_token));
    expect(profile.json()).toMatchObject({ organization_id: owner.organizationId, role: 'user' });

    // Without organization_id, the organization last opened.
    const last = await login({ email: member.email, password: member.password });
    expect(last.json().organization.id).toBe(owner.organizationId);
    const own = await login({
      email: member.email,
      password: member.password,
      organization_id: member.organizationId,
    });
    expect(own.json()).toMatchObject({ organization: { id: member.organizationId }, role: 'admin' });
  });

  it('answers 401 with one and the same detail for a wrong password and an unknown email', async () => {
    const user = await freshUser();
    const wrongPassword = await login({ email: user.email, password: newPassword() });
    const unknownEmail = await login({ email: uniqueEmail('nobody'), password: user.password });
    expect401(wrongPassword);
    expect401(unknownEmail);
    expect(wrongPassword.json().detail).toBe(unknownEmail.json().detail);
    expect(wrongPassword.cookies.find((c) => c.name === 'sb_session')).toBeUndefined();
    // The right password in another letter case is a wrong password.
    expect401(await login({ email: user.email, password: user.password.toUpperCase() }));
  });

  it('answers 403 for an organization the user does not belong to (existing or not)', async () => {
    const user = await freshUser();
    const stranger = await freshUser();
    const response = await login({
      email: user.email,
      password: user.password,
      organization_id: stranger.organizationId,
    });
    expectError(response, 403, /not a member/);
    expect(response.cookies.find((c) => c.name === 'sb_session')).toBeUndefined();
    expectError(
      await login({ email: user.email, password: user.password, organization_id: 2_000_000_000 }),
      403,
    );
  });

  it('answers 422 for missing or empty fields, a bad organization_id, and malformed JSON', async () => {
    const user = await freshUser();
    expectValidation(await post(LOGIN, { password: user.password }), ['body', 'email'], 'missing');
    expectValidation(await post(LOGIN, { email: user.email }), ['body', 'password'], 'missing');
    expectValidation(
      await post(LOGIN, { email: user.email, password: '' }),
      ['body', 'password'],
      'string_too_short',
    );
    expectValidation(
      await post(LOGIN, { email: '', password: user.password }),
      ['body', 'email'],
      'string_too_short',
    );
    for (const organization_id of [0, -1, 1.5, 'abc']) {
      expectValidation(await post(LOGIN, { email: user.email, password: user.password, organization_id }), [
        'body',
        'organization_id',
      ]);
    }
    expectMalformedJson(await postRaw(LOGIN, `{"email": "${user.email}", "password": "${user.password}"`));
  });

  it('answers 422, not 500, for an organization_id beyond the id range', async () => {
    const user = await freshUser();
    const response = await post(LOGIN, {
      email: user.email,
      password: user.password,
      organization_id: 99_999_999_999,
    });
    expectValidation(response, ['body', 'organization_id']);
  });
});

describe('POST /api/v1/auth/refresh', () => {
  it('rotates: new tokens in the same session and organization, no new cookie', async () => {
    const user = await freshUser();
    const response = await post(REFRESH, { refresh_token: user.refreshToken });
    expect(response.statusCode, response.body).toBe(200);
    const body = response.json();
    expectTokenBody(body);
    expect(body.refresh_token).not.toBe(user.refreshToken);
    expect(body.refresh_token.split('.')[0]).toBe(user.refreshToken.split('.')[0]);
    expect(body.user.id).toBe(user.id);
    expect(body.organization.id).toBe(user.organizationId);
    expect(decodeJwt(body.access_token).sid).toBe(decodeJwt(user.accessToken).sid);
    expect(response.cookies.find((c) => c.name === 'sb_session')).toBeUndefined();

    const profile = await me(bearer(body.access_token));
    expect(profile.statusCode, profile.body).toBe(200);
    expect(profile.json()).toMatchObject({ id: user.id, organization_id: user.organizationId });

    // The new refresh token works in turn.
    const next = await post(REFRESH, { refresh_token: body.refresh_token });
    expect(next.statusCode, next.body).toBe(200);
    expectTokenBody(next.json());
  });

  it('ends the whole session when a refresh token is used a second time', async () => {
    const user = await freshUser();
    const rotated = await post(REFRESH, { refresh_token: user.refreshToken });
    expect(rotated.statusCode).toBe(200);
    const { access_token: newAccess, refresh_token: newRefresh } = rotated.json();
    remember(newAccess, newRefresh);
    // Warm the principal caches, so the test shows they are emptied.
    for (const credentials of [
      bearer(newAccess),
      { headers: user.headers },
      cookieOnly(user.sessionCookie),
    ]) {
      expect((await me(credentials)).statusCode).toBe(200);
    }

    // Past the grace a client's own double submit gets (identity-hardening.test.ts).
    await t.database.executeSql(
      "update auth_sessions set last_refreshed_at = now() - interval '1 minute' where id = $1",
      [decodeJwt(newAccess).sid],
    );
    const replay = await post(REFRESH, { refresh_token: user.refreshToken });
    expect401(replay);

    expect401(await post(REFRESH, { refresh_token: newRefresh }));
    expect401(await me(bearer(newAccess)));
    expect401(await me({ headers: user.headers }));
    expect401(await me(cookieOnly(user.sessionCookie)));

    // Another session of the same user is untouched.
    const other = await login({ email: user.email, password: user.password });
    expect((await me(bearer(other.json().access_token))).statusCode).toBe(200);
  });

  it('lets exactly one of two simultaneous refreshes with one token through', async () => {
    const user = await freshUser();
    const answers = await Promise.all([
      post(REFRESH, { refresh_token: user.refreshToken }),
      post(REFRESH, { refresh_token: user.refreshToken }),
    ]);
    expect(answers.map((a) => a.statusCode).sort()).toEqual([200, 401]);
    for (const answer of answers) if (answer.statusCode === 200) expectTokenBody(answer.json());
  });

  it('answers 401 for garbage, an unknown session and a tampered secret', async () => {
    const user = await freshUser();
    const [sessionId, secret] = user.refreshToken.split('.') as [string, string];
    expect401(await post(REFRESH, { refresh_token: 'garbage' }));
    expect401(await post(REFRESH, { refresh_token: `00000000-0000-4000-8000-000000000000.${secret}` }));
    expect401(
      await post(REFRESH, { refresh_token: `${sessionId}.${randomBytes(32).toString('base64url')}` }),
    );
    // A secret this session never issued is no replay: the session goes on (identity-hardening.test.ts).
    expect((await post(REFRESH, { refresh_token: user.refreshToken })).statusCode).toBe(200);
  });

  it('answers 422 for a missing or empty refresh_token and for malformed JSON', async () => {
    expectValidation(await post(REFRESH, {}), ['body', 'refresh_token'], 'missing');
    expectValidation(
      await post(REFRESH, { refresh_token: '' }),
      ['body', 'refresh_token'],
      'string_too_short',
    );
    expectMalformedJson(await postRaw(REFRESH, '{"refresh_token": "abc'));
  });
});

describe('POST /api/v1/auth/logout', () => {
  it('ends the session at once: its access token, its cookie and its refresh token answer 401', async () => {
    const user = await freshUser();
    const other = await login({ email: user.email, password: user.password });
    expect(other.statusCode).toBe(200);
    // Warm the caches first.
    expect((await me({ headers: user.headers })).statusCode).toBe(200);
    expect((await me(cookieOnly(user.sessionCookie))).statusCode).toBe(200);

    const response = await post(LOGOUT, undefined, { headers: user.headers });
    expect(response.statusCode, response.body).toBe(200);
    expect(response.json()).toEqual({ message: expect.any(String) });
    const cleared = response.cookies.find((c) => c.name === 'sb_session');
    expect(cleared).toBeDefined();
    expect(cleared!.value).toBe('');
    expect(cleared!.expires!.getTime()).toBeLessThanOrEqual(Date.now());

    expect401(await me({ headers: user.headers }));
    expect401(await me(cookieOnly(user.sessionCookie)));
    expect401(await post(REFRESH, { refresh_token: user.refreshToken }));
    expect401(await post(LOGOUT, undefined, { headers: user.headers }));

    // Only this session: the user's other login still works.
    const otherProfile = await me(bearer(other.json().access_token));
    expect(otherProfile.statusCode, otherProfile.body).toBe(200);
  });

  it('works with the session cookie and X-CSRF-Token, and then the JWT of that session fails too', async () => {
    const user = await freshUser();
    expect((await me({ headers: user.headers })).statusCode).toBe(200);
    expect((await me(cookieOnly(user.sessionCookie))).statusCode).toBe(200);

    expectError(await post(LOGOUT, undefined, cookieOnly(user.sessionCookie)), 403, /CSRF/);
    expect((await me(cookieOnly(user.sessionCookie))).statusCode).toBe(200);

    const response = await post(LOGOUT, undefined, cookieWithCsrf(user.sessionCookie, user.csrfToken));
    expect(response.statusCode, response.body).toBe(200);
    expect401(await me(cookieOnly(user.sessionCookie)));
    expect401(await me({ headers: user.headers }));
  });

  it('answers 401 without credentials or with a garbage bearer, and 403 with an API key', async () => {
    expect401(await post(LOGOUT));
    expect401(await post(LOGOUT, undefined, bearer('garbage')));
    expect401(await post(LOGOUT, undefined, cookieOnly('garbage')));
    const { user, key } = await userWithKey();
    expectError(await post(LOGOUT, undefined, bearer(key)), 403, /API key/);
    // The refused call ended nothing.
    expect((await me({ headers: user.headers })).statusCode).toBe(200);
  });
});

describe('POST /api/v1/auth/switch-organization', () => {
  it('moves the session to another organization of the user, with the role held there', async () => {
    const owner = await freshUser();
    const member = await freshUser(); // admin of their own organization
    await insertMembership(t.database.db, member.id, owner.organizationId, 'user');

    const response = await post(
      SWITCH,
      { organization_id: owner.organizationId },
      { headers: member.headers },
    );
    expect(response.statusCode, response.body).toBe(200);
    const body = response.json();
    expectTokenBody(body);
    expect(body.organization.id).toBe(owner.organizationId);
    expect(body.role).toBe('user');
    expect(decodeJwt(body.access_token)).toMatchObject({
      sub: String(member.id),
      org: owner.organizationId,
      role: 'user',
      sid: decodeJwt(member.accessToken).sid,
    });

    const profile = await me(bearer(body.access_token));
    expect(profile.statusCode, profile.body).toBe(200);
    expect(profile.json()).toMatchObject({
      id: member.id,
      organization_id: owner.organizationId,
      role: 'user',
    });
    expect(profile.json().organizations).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ id: owner.organizationId, role: 'user' }),
        expect.objectContaining({ id: member.organizationId, role: 'admin' }),
      ]),
    );

    // The session cookie follows the session.
    const viaCookie = await me(cookieOnly(member.sessionCookie));
    expect(viaCookie.json()).toMatchObject({ organization_id: owner.organizationId, role: 'user' });

    // The refresh token it returned keeps the new organization.
    const refreshed = await post(REFRESH, { refresh_token: body.refresh_token });
    expect(refreshed.statusCode, refreshed.body).toBe(200);
    expect(refreshed.json()).toMatchObject({ organization: { id: owner.organizationId }, role: 'user' });
    expect(decodeJwt(refreshed.json().access_token).org).toBe(owner.organizationId);

    // The next login without organization_id opens it too.
    const again = await login({ email: member.email, password: member.password });
    expect(again.json().organization.id).toBe(owner.organizationId);

    // And back, with the admin role there.
    const back = await post(
      SWITCH,
      { organization_id: member.organizationId },
      bearer(refreshed.json().access_token),
    );
    expect(back.statusCode, back.body).toBe(200);
    expect(back.json()).toMatchObject({ organization: { id: member.organizationId }, role: 'admin' });
    const backProfile = await me(bearer(back.json().access_token));
    expect(backProfile.json()).toMatchObject({ organization_id: member.organizationId, role: 'admin' });
  });

  it('works for a member made by Factories.member, from the session cookie with X-CSRF-Token', async () => {
    const owner = await freshUser();
    const member = await f.member(owner.organizationId, 'user');
    remember(
      member.password,
      member.accessToken,
      member.refreshToken,
      member.csrfToken,
      member.sessionCookie,
    );
    const ownOrganization = (await me({ headers: member.headers }))
      .json()
      .organizations.find((o: { id: number }) => o.id !== owner.organizationId).id as number;

    expectError(
      await post(SWITCH, { organization_id: ownOrganization }, cookieOnly(member.sessionCookie)),
      403,
      /CSRF/,
    );
    const response = await post(
      SWITCH,
      { organization_id: ownOrganization },
      cookieWithCsrf(member.sessionCookie, member.csrfToken),
    );
    expect(response.statusCode, response.body).toBe(200);
    expect(response.json()).toMatchObject({ organization: { id: ownOrganization }, role: 'admin' });
    const viaCookie = await me(cookieOnly(member.sessionCookie));
    expect(viaCookie.json()).toMatchObject({ organization_id: ownOrganization, role: 'admin' });
  });

  it('answers 404 for an organization the user does not belong to, or one that does not exist', async () => {
    const user = await freshUser();
    const stranger = await freshUser();
    expectError(
      await post(SWITCH, { organization_id: stranger.organizationId }, { headers: user.headers }),
      404,
    );
    expectError(await post(SWITCH, { organization_id: 2_000_000_000 }, { headers: user.headers }), 404);
    // Nothing moved.
    const profile = await me({ headers: user.headers });
    expect(profile.json().organization_id).toBe(user.organizationId);
    const cookieProfile = await me(cookieOnly(user.sessionCookie));
    expect(cookieProfile.json().organization_id).toBe(user.organizationId);
  });

  it('answers 401 without credentials and 403 with an API key', async () => {
    const { user, key } = await userWithKey();
    expect401(await post(SWITCH, { organization_id: user.organizationId }));
    expectError(await post(SWITCH, { organization_id: user.organizationId }, bearer(key)), 403, /API key/);
  });

  it('answers 422 for a missing or invalid organization_id and for malformed JSON', async () => {
    const user = await freshUser();
    expectValidation(
      await post(SWITCH, {}, { headers: user.headers }),
      ['body', 'organization_id'],
      'missing',
    );
    for (const organization_id of [0, -3, 2.5, 'abc', null]) {
      expectValidation(await post(SWITCH, { organization_id }, { headers: user.headers }), [
        'body',
        'organization_id',
      ]);
    }
    const malformed = await t.app.inject({
      method: 'POST',
      url: SWITCH,
      headers: { ...user.headers, 'content-type': 'application/json' },
      payload: '{"organization_id": ',
    });
    expectMalformedJson(malformed);
  });

  it('answers 422, not 500, for an organization_id beyond the id range', async () => {
    const user = await freshUser();
    const response = await post(SWITCH, { organization_id: 99_999_999_999 }, { headers: user.headers });
    expectValidation(response, ['body', 'organization_id']);
  });
});

describe('access tokens', () => {
  it('accepts a token made with the server key and claims (control for the refusals below)', async () => {
    const user = await freshUser();
    const response = await me(bearer(await forge(user.accessToken)));
    expect(response.statusCode, response.body).toBe(200);
    expect(response.json().id).toBe(user.id);
  });

  it('refuses an expired token', async () => {
    const user = await freshUser();
    const now = Math.floor(Date.now() / 1000);
    const expired = await forge(user.accessToken, { iat: now - 3600, exp: now - 60 });
    expect401(await me(bearer(expired)));
    expect401(await post(LOGOUT, undefined, bearer(expired)));
    // The session itself is alive.
    expect((await me({ headers: user.headers })).statusCode).toBe(200);
  });

  it('refuses a token signed with another key', async () => {
    const user = await freshUser();
    expect401(
      await me(
        bearer(
          await forge(user.accessToken, {
            key: deriveKey('another-secret-key-of-the-same-length!!', 'jwt-access-token'),
          }),
        ),
      ),
    );
    expect401(
      await me(bearer(await forge(user.accessToken, { key: deriveKey(TEST_SECRET_KEY, 'another-purpose') }))),
    );
  });

  it('refuses a wrong issuer, audience, role, user or organization', async () => {
    const user = await freshUser();
    const stranger = await freshUser();
    expect401(await me(bearer(await forge(user.accessToken, { issuer: 'someone-else' }))));
    expect401(await me(bearer(await forge(user.accessToken, { audience: 'another-api' }))));
    expect401(await me(bearer(await forge(user.accessToken, { role: 'owner' }))));
    expect401(await me(bearer(await forge(user.accessToken, { sub: String(stranger.id) }))));
    expect401(await me(bearer(await forge(user.accessToken, { org: stranger.organizationId }))));
  });

  it('refuses an unsigned token, garbage, and a malformed Authorization header', async () => {
    const user = await freshUser();
    const payload = user.accessToken.split('.')[1];
    const none = `${Buffer.from(JSON.stringify({ alg: 'none', typ: 'JWT' })).toString('base64url')}.${payload}.`;
    expect401(await me(bearer(none)));
    expect401(await me(bearer('garbage')));
    expect401(await me(bearer('a.b.c')));
    expect401(await me({ headers: { authorization: 'Bearer' } }));
    expect401(await me({ headers: { authorization: `Basic ${Buffer.from('a:b').toString('base64')}` } }));
    expect401(await me(cookieOnly('garbage')));
    const [sessionId] = user.sessionCookie.split('.');
    expect401(await me(cookieOnly(`${sessionId}.${randomBytes(32).toString('base64url')}`)));
  });
});

describe('logs', () => {
  it('never contain a password, token or session cookie', async () => {
    // One more sign-in with a password in a malformed body, so the logs saw the worst case.
    const user = await freshUser();
    await postRaw(LOGIN, `{"email": "${user.email}", "password": "${user.password}"`);
    await login({ email: user.email, password: `${user.password}-wrong` });
    remember(`${user.password}-wrong`);
    await waitFor(() => t.logs.some((line) => line.includes('mail written to file')));

    const text = t.logs.join('\n');
    expect(text).toContain('/api/v1/auth/login');
    expect(text).toContain('/api/v1/auth/verify-email?token=[REDACTED]');
    expect(secrets.size).toBeGreaterThan(50);
    const leaked = [...secrets].filter((secret) => text.includes(secret));
    expect(leaked).toEqual([]);
  });
});
