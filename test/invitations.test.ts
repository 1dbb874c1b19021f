/**
 * Invitations: POST /api/v1/users/invite (admin), the public GET /api/v1/users/invitation/{token} and
 * POST /api/v1/users/accept-invitation — happy paths, every validation rule, who may invite (role and
 * API key area), the single-use mailed token (unknown, used, expired and replaced tokens answer 404),
 * new and existing accounts, what the public routes show, and two accepts of one token at once.
 * One platform for the whole file; the tests share its database (every test makes its own users).
 */
import { createHash, randomBytes } from 'node:crypto';
import type { LightMyRequestResponse } from 'fastify';
import { decodeJwt } from 'jose';
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

const INVITE = '/api/v1/users/invite';
const INVITATION = '/api/v1/users/invitation';
const ACCEPT = '/api/v1/users/accept-invitation';
const ME = '/api/v1/users/me';
const USERS = '/api/v1/users';
const LOGIN = '/api/v1/auth/login';
const REFRESH = '/api/v1/auth/refresh';
const SEVEN_DAYS_MS = 7 * 24 * 60 * 60 * 1000;

interface Credentials {
  headers?: Record<string, string>;
  cookies?: Record<string, string>;
}

function call(method: 'GET' | 'POST', url: string, payload?: unknown, credentials: Credentials = {}) {
  return t.app.inject({
    method,
    url,
    ...(payload === undefined ? {} : { payload: payload as object }),
    ...(credentials.headers ? { headers: credentials.headers } : {}),
    ...(credentials.cookies ? { cookies: credentials.cookies } : {}),
  });
}

const get = (url: string, credentials: Credentials = {}) => call('GET', url, undefined, credentials);
const post = (url: string, payload: unknown, credentials: Credentials = {}) =>
  call('POST', url, payload, credentials);
const bearer = (token: string) => ({ headers: { authorization: `Bearer ${token}` } });
const cookieOnly = (cookie: string) => ({ cookies: { sb_session: cookie } });
const lookup = (token: string, credentials: Credentials = {}) =>
  get(`${INVITATION}/${encodeURIComponent(token)}`, credentials);
const accept = (token: string, password: string, confirm = password) =>
  post(ACCEPT, { token, password, confirm_password: confirm });

function newPassword(): string {
  return `pw-${randomBytes(8).toString('hex')}`;
}

/** A well-formed token that was never issued. */
function unknownToken(): string {
  return randomBytes(32).toString('base64url');
}

const sha256 = (value: string) => createHash('sha256').update(value).digest('hex');

const expect404 = (response: LightMyRequestResponse) =>
  expectError(response, 404, /not found|no longer valid/i);

function invitationMailsTo(email: string): Mail[] {
  return t.mails().filter((m) => m.to === email && /invited/i.test(m.subject));
}

const TOKEN_IN_LINK = /\/api\/v1\/users\/invitation\/([A-Za-z0-9_-]+)/;

function tokenOf(mail: Mail): string {
  const token = TOKEN_IN_LINK.exec(mail.body)?.[1];
  if (!token) throw new Error(`No invitation token in ${mail.file}`);
  return token;
}

/** Waits for an invitation mail to `email` whose token is not one of `known`, and returns it. */
async function nextInvitationMail(
  email: string,
  known: string[] = [],
): Promise<{ mail: Mail; token: string }> {
  return waitFor(() => {
    const mail = invitationMailsTo(email).find((m) => !known.includes(tokenOf(m)));
    return mail ? { mail, token: tokenOf(mail) } : undefined;
  });
}

function invite(by: Credentials, payload: Record<string, unknown>) {
  return post(INVITE, payload, by);
}

/** Invites `email` into `admin`'s organization and returns the answer and the mailed token. */
async function invited(
  admin: TestUser,
  overrides: { email?: string; role?: 'user' | 'admin'; first_name?: string; last_name?: string } = {},
) {
  const email = overrides.email ?? uniqueEmail('invitee');
  const known = invitationMailsTo(email).map(tokenOf);
  const response = await invite(
    { headers: admin.headers },
    {
      email,
      first_name: overrides.first_name ?? 'Grace',
      last_name: overrides.last_name ?? 'Hopper',
      role: overrides.role ?? 'user',
    },
  );
  expect(response.statusCode, response.body).toBe(201);
  const { mail, token } = await nextInvitationMail(email.toLowerCase(), known);
  return { email: email.toLowerCase(), invitation: response.json(), mail, token };
}

async function invitationRow(id: number) {
  const { rows } = await t.database.executeSql(
    'select token_hash, accepted_at, revoked_at, expires_at, organization_id from invitations where id = $1',
    [id],
  );
  return rows[0]!;
}

async function invitationCount(email: string): Promise<number> {
  const { rows } = await t.database.executeSql(
    'select count(*)::int as n from invitations where email = $1',
    [email.toLowerCase()],
  );
  return Number(rows[0]!.n);
}

async function usersWithEmail(email: string): Promise<number> {
  const { rows } = await t.database.executeSql('select count(*)::int as n from users where email = $1', [
    email,
  ]);
  return Number(rows[0]!.n);
}

async function memberIds(admin: TestUser): Promise<number[]> {
  const response = await get(USERS, { headers: admin.headers });
  expect(response.statusCode, response.body).toBe(200);
  return response.json().map((m: { id: number }) => m.id);
}

async function expire(invitationId: number): Promise<void> {
  await t.database.executeSql(
    "update invitations set expires_at = now() - interval '1 second' where id = $1",
    [invitationId],
  );
}

function expectTokenBody(body: Record<string, unknown>): void {
  expect(body).toMatchObject({
    access_token: expect.stringMatching(/^[\w-]+\.[\w-]+\.[\w-]+$/),
    token_type: 'bearer',
    expires_in: expect.any(Number),
    refresh_token: expect.stringMatching(/^[0-9a-f-]{36}\.[\w-]{20,}$/),
    csrf_token: expect.stringMatching(/^[\w-]{20,}$/),
    user: expect.objectContaining({ id: expect.any(Number), email: expect.any(String) }),
    organization: { id: expect.any(Number), name: expect.any(String), slug: expect.any(String) },
    role: expect.stringMatching(/^(admin|user)$/),
  });
}

function sessionCookieOf(response: LightMyRequestResponse): string {
  const cookie = response.cookies.find((c) => c.name === 'sb_session');
  expect(cookie).toBeDefined();
  expect(cookie!.httpOnly).toBe(true);
  expect(cookie!.sameSite).toMatch(/^lax$/i);
  expect(cookie!.value).toMatch(/^[0-9a-f-]{36}\.[\w-]{20,}$/);
  return cookie!.value;
}

const INVITATION_KEYS = [
  'created_at',
  'email',
  'expires_at',
  'first_name',
  'id',
  'last_name',
  'organization_id',
  'role',
];
const PUBLIC_KEYS = ['email', 'expires_at', 'first_name', 'last_name', 'organization_name', 'role'];

describe('POST /api/v1/users/invite', () => {
  it('lets an admin invite: 201 with the invitation, and a mail carrying a token valid for 7 days', async () => {
    const admin = await f.user({ organizationName: 'Analytical Engines' });
    const email = uniqueEmail('Grace').replace('grace', 'Grace');
    const before = Date.now();
    const response = await invite(
      { headers: admin.headers },
      { email, first_name: '  Grace ', last_name: 'Hopper ', role: 'user' },
    );
    expect(response.statusCode, response.body).toBe(201);
    const body = response.json();
    expect(Object.keys(body).sort()).toEqual(INVITATION_KEYS);
    expect(body).toMatchObject({
      id: expect.any(Number),
      organization_id: admin.organizationId,
      email: email.toLowerCase(),
      first_name: 'Grace',
      last_name: 'Hopper',
      role: 'user',
    });
    const expiresAt = Date.parse(body.expires_at);
    expect(expiresAt).toBeGreaterThanOrEqual(before + SEVEN_DAYS_MS - 1000);
    expect(expiresAt).toBeLessThanOrEqual(Date.now() + SEVEN_DAYS_MS + 1000);
    expect(Math.abs(expiresAt - Date.parse(body.created_at) - SEVEN_DAYS_MS)).toBeLessThan(5000);

    const { mail, token } = await nextInvitationMail(email.toLowerCase());
    expect(mail.subject).toContain('Analytical Engines');
    expect(token.length).toBeGreaterThanOrEqual(40);
    expect(mail.body).toContain(`http://switchboard.test/api/v1/users/invitation/${token}`);
    // The token also stands on its own labelled line, to paste into accept-invitation.
    expect(mail.body.split(/\r?\n/)).toContain(`Invitation token: ${token}`);
    expect(mail.body).toContain('as user');

    // The answer never carries the token; the database keeps only its hash.
    expect(response.body).not.toContain(token);
    const row = await invitationRow(body.id);
    expect(row.token_hash).toBe(sha256(token));
    expect(row.token_hash).not.toBe(token);
    expect(row.accepted_at).toBeNull();
    expect(row.revoked_at).toBeNull();
    expect(row.organization_id).toBe(admin.organizationId);

    const info = await lookup(token);
    expect(info.statusCode, info.body).toBe(200);
    expect(info.json()).toEqual({
      organization_name: 'Analytical Engines',
      email: email.toLowerCase(),
      first_name: 'Grace',
      last_name: 'Hopper',
      role: 'user',
      expires_at: body.expires_at,
    });
  });

  it('invites as admin when asked', async () => {
    const admin = await f.user();
    const { invitation, mail, token } = await invited(admin, { role: 'admin' });
    expect(invitation.role).toBe('admin');
    expect(mail.body).toContain('as admin');
    expect((await lookup(token)).json().role).toBe('admin');
  });

  it('lets a second admin of the organization invite, and an admin API key with organization read_write', async () => {
    const admin = await f.user();
    const second = await f.member(admin.organizationId, 'admin');
    const bySecond = await invite(
      { headers: second.headers },
      { email: uniqueEmail('by-second'), first_name: 'A', last_name: 'B', role: 'user' },
    );
    expect(bySecond.statusCode, bySecond.body).toBe(201);
    expect(bySecond.json().organization_id).toBe(admin.organizationId);

    const { key } = await f.apiKey(admin, { permissions: { organization: 'read_write' } });
    const email = uniqueEmail('by-key');
    const byKey = await invite(bearer(key), { email, first_name: 'Key', last_name: 'Made', role: 'admin' });
    expect(byKey.statusCode, byKey.body).toBe(201);
    expect(byKey.json()).toMatchObject({ organization_id: admin.organizationId, email, role: 'admin' });
    await nextInvitationMail(email);
  });

  it('answers 403 to a member who is not an admin, and sends nothing', async () => {
    const admin = await f.user();
    const member = await f.member(admin.organizationId, 'user');
    const email = uniqueEmail('by-member');
    const response = await invite(
      { headers: member.headers },
      { email, first_name: 'No', last_name: 'Way', role: 'user' },
    );
    expectError(response, 403, /[Aa]dmin/);
    // Nor may a non-admin's key, whatever its areas.
    const { key } = await f.apiKey(member, { permissions: { organization: 'read_write' } });
    expectError(await invite(bearer(key), { email, first_name: 'No', last_name: 'Way', role: 'admin' }), 403);
    expect(await invitationCount(email)).toBe(0);
  });

  it('goes by the role in the organization of the session: admin elsewhere is not enough', async () => {
    const host = await f.user();
    const guest = await f.user(); // admin of their own organization
    await insertMembership(t.database.db, guest.id, host.organizationId, 'user');
    const inHost = await f.login(guest, host.organizationId);
    const email = uniqueEmail('cross');
    expectError(
      await invite({ headers: inHost.headers }, { email, first_name: 'X', last_name: 'Y', role: 'admin' }),
      403,
    );
    expect(await invitationCount(email)).toBe(0);

    // From their own organization's session the same user invites into that organization only.
    const own = await invite(
      { headers: guest.headers },
      { email, first_name: 'X', last_name: 'Y', role: 'user' },
    );
    expect(own.statusCode, own.body).toBe(201);
    expect(own.json().organization_id).toBe(guest.organizationId);
  });

  it('answers 403 to an API key without organization read_write', async () => {
    const admin = await f.user();
    const email = uniqueEmail('key-denied');
    for (const permissions of [
      {},
      { organization: 'read' },
      { assistants: 'read_write', calls: 'read_write', campaigns: 'read_write', sms: 'read_write' },
    ] as Permissions[]) {
      const { key } = await f.apiKey(admin, { permissions });
      const response = await invite(bearer(key), { email, first_name: 'K', last_name: 'D', role: 'user' });
      expectError(response, 403, /organization/);
    }
    expect(await invitationCount(email)).toBe(0);
  });

  it('answers 401 without credentials, and 403 for the session cookie without X-CSRF-Token', async () => {
    const admin = await f.user();
    const email = uniqueEmail('no-credentials');
    const payload = { email, first_name: 'N', last_name: 'C', role: 'user' };
    expectError(await invite({}, payload), 401);
    expectError(await invite(bearer('garbage'), payload), 401);
    expectError(await invite(cookieOnly(admin.sessionCookie), payload), 403, /CSRF/);
    expect(await invitationCount(email)).toBe(0);
    const withCsrf = await invite(
      { cookies: { sb_session: admin.sessionCookie }, headers: { 'x-csrf-token': admin.csrfToken } },
      payload,
    );
    expect(withCsrf.statusCode, withCsrf.body).toBe(201);
  });

  it.each(['email', 'first_name', 'last_name'])('answers 422 when %s is missing', async (field) => {
    const admin = await f.user();
    const payload: Record<string, string> = {
      email: uniqueEmail('missing'),
      first_name: 'Ada',
      last_name: 'Lovelace',
      role: 'user',
    };
    delete payload[field];
    const response = await invite({ headers: admin.headers }, payload);
    expectValidation(response, ['body', field], 'missing');
    expect(response.json().detail).toHaveLength(1);
  });

  it('answers 422 for empty, over-long or non-string names', async () => {
    const admin = await f.user();
    const email = uniqueEmail('names');
    for (const field of ['first_name', 'last_name']) {
      const base = { email, first_name: 'Ada', last_name: 'Lovelace', role: 'user' };
      expectValidation(
        await invite({ headers: admin.headers }, { ...base, [field]: '' }),
        ['body', field],
        'string_too_short',
      );
      expectValidation(
        await invite({ headers: admin.headers }, { ...base, [field]: 'x'.repeat(101) }),
        ['body', field],
        'string_too_long',
      );
      for (const value of [null, 3, ['Ada']]) {
        expectValidation(await invite({ headers: admin.headers }, { ...base, [field]: value }), [
          'body',
          field,
        ]);
      }
    }
    expect(await invitationCount(email)).toBe(0);
    // 100 characters are fine.
    const long = await invite(
      { headers: admin.headers },
      { email, first_name: 'f'.repeat(100), last_name: 'l'.repeat(100), role: 'user' },
    );
    expect(long.statusCode, long.body).toBe(201);
  });

  it('answers 422 for a name of only spaces instead of inviting someone with an empty name', async () => {
    const admin = await f.user();
    const email = uniqueEmail('blank');
    const response = await invite(
      { headers: admin.headers },
      { email, first_name: '   ', last_name: 'L', role: 'user' },
    );
    expectValidation(response, ['body', 'first_name']);
    expect(await invitationCount(email)).toBe(0);
  });

  it.each(['not-an-email', 'two@@example.test', 'no-domain@', '@example.test', 'spaces in@example.test', ''])(
    'answers 422 at body.email for the malformed email %j',
    async (email) => {
      const admin = await f.user();
      expectValidation(
        await invite({ headers: admin.headers }, { email, first_name: 'A', last_name: 'B', role: 'user' }),
        ['body', 'email'],
      );
    },
  );

  it('answers 422 for an email over 254 characters', async () => {
    const admin = await f.user();
    const email = `${'a'.repeat(250)}@example.test`;
    expectValidation(
      await invite({ headers: admin.headers }, { email, first_name: 'A', last_name: 'B', role: 'user' }),
      ['body', 'email'],
    );
    expect(await invitationCount(email)).toBe(0);
  });

  it.each(['owner', 'Admin', 'USER', 'superadmin', '', 1, null, ['admin']])(
    'answers 422 at body.role for the role %j (only user and admin exist)',
    async (role) => {
      const admin = await f.user();
      const email = uniqueEmail('role');
      const response = await invite(
        { headers: admin.headers },
        { email, first_name: 'R', last_name: 'L', role },
      );
      expectValidation(response, ['body', 'role']);
      expect(await invitationCount(email)).toBe(0);
    },
  );

  it('answers 422 json_invalid for malformed JSON', async () => {
    const admin = await f.user();
    const response = await t.app.inject({
      method: 'POST',
      url: INVITE,
      headers: { ...admin.headers, 'content-type': 'application/json' },
      payload: '{"email": "x@example.test",',
    });
    expect(response.statusCode, response.body).toBe(422);
    expect(response.json()).toEqual({
      detail: [{ loc: ['body'], msg: expect.any(String), type: 'json_invalid' }],
    });
  });

  it('answers 409 for someone who is already a member, in any letter case, and mails nothing', async () => {
    const admin = await f.user();
    const member = await f.member(admin.organizationId, 'user');
    for (const email of [member.email, member.email.toUpperCase(), admin.email]) {
      const response = await invite(
        { headers: admin.headers },
        { email, first_name: 'Already', last_name: 'Here', role: 'admin' },
      );
      expectError(response, 409, /already a member/);
    }
    expect(await invitationCount(member.email)).toBe(0);
    expect(await invitationCount(admin.email)).toBe(0);
    await new Promise((resolve) => setTimeout(resolve, 1000));
    expect(invitationMailsTo(member.email)).toHaveLength(0);
  });

  it('invites someone who has an account but is not a member (201)', async () => {
    const admin = await f.user();
    const existing = await f.user();
    const { invitation } = await invited(admin, { email: existing.email });
    expect(invitation).toMatchObject({ email: existing.email, organization_id: admin.organizationId });
  });

  it('replaces the earlier invitation of the same email: its token stops working', async () => {
    const admin = await f.user();
    const first = await invited(admin, { role: 'user' });
    const second = await invited(admin, { email: first.email, role: 'admin', first_name: 'Second' });
    expect(second.token).not.toBe(first.token);
    expect(second.invitation.id).not.toBe(first.invitation.id);

    expect404(await lookup(first.token));
    expect404(await accept(first.token, newPassword()));
    expect((await invitationRow(first.invitation.id)).revoked_at).not.toBeNull();
    expect(await usersWithEmail(first.email)).toBe(0);

    const info = await lookup(second.token);
    expect(info.statusCode, info.body).toBe(200);
    expect(info.json()).toMatchObject({ role: 'admin', first_name: 'Second' });
    const accepted = await accept(second.token, newPassword());
    expect(accepted.statusCode, accepted.body).toBe(200);
    expect(accepted.json().role).toBe('admin');
  });

  it("does not replace another organization's invitation of the same email", async () => {
    const one = await f.user({ organizationName: 'Org One' });
    const two = await f.user({ organizationName: 'Org Two' });
    const first = await invited(one);
    const second = await invited(two, { email: first.email });
    expect((await lookup(first.token)).json().organization_name).toBe('Org One');
    expect((await lookup(second.token)).json().organization_name).toBe('Org Two');
  });
});

describe('GET /api/v1/users/invitation/{token}', () => {
  it('works without credentials and shows only organization_name, email, names, role and expiry', async () => {
    const admin = await f.user({ organizationName: 'Public Lookup Org' });
    const { email, invitation, token } = await invited(admin, { role: 'admin' });
    const response = await lookup(token);
    expect(response.statusCode, response.body).toBe(200);
    const body = response.json();
    expect(Object.keys(body).sort()).toEqual(PUBLIC_KEYS);
    expect(body).toEqual({
      organization_name: 'Public Lookup Org',
      email,
      first_name: 'Grace',
      last_name: 'Hopper',
      role: 'admin',
      expires_at: invitation.expires_at,
    });
    // Nothing about the inviter, the organization's id or the stored token.
    expect(response.body).not.toContain(admin.email);
    expect(response.body).not.toContain(sha256(token));
    expect(response.body).not.toContain(token);
    expect(response.headers['set-cookie']).toBeUndefined();
  });

  it('answers the same to someone signed in elsewhere, and looking does not use the token up', async () => {
    const admin = await f.user();
    const stranger = await f.user();
    const { token } = await invited(admin);
    const anonymous = await lookup(token);
    const signedIn = await lookup(token, { headers: stranger.headers });
    expect(signedIn.statusCode, signedIn.body).toBe(200);
    expect(signedIn.json()).toEqual(anonymous.json());
    expect((await lookup(token)).statusCode).toBe(200);
    expect((await accept(token, newPassword())).statusCode).toBe(200);
  });

  it('answers 404 for a token that was never issued', async () => {
    expect404(await lookup(unknownToken()));
  });

  it('answers 404 for a used token', async () => {
    const admin = await f.user();
    const { token } = await invited(admin);
    expect((await accept(token, newPassword())).statusCode).toBe(200);
    expect404(await lookup(token));
  });

  it('answers 404 for an expired token, on both routes', async () => {
    const admin = await f.user();
    const { email, invitation, token } = await invited(admin);
    expect((await lookup(token)).statusCode).toBe(200);
    await expire(invitation.id);
    expect404(await lookup(token));
    expect404(await accept(token, newPassword()));
    expect(await usersWithEmail(email)).toBe(0);
    expect((await invitationRow(invitation.id)).accepted_at).toBeNull();
  });

  it('answers 404 in the error envelope for a well-formed unknown token of 101 to 200 characters', async () => {
    // The schema allows tokens up to 200 characters; the router must let them reach it.
    for (const length of [101, 150, 200]) {
      const response = await lookup(randomBytes(length).toString('base64url').slice(0, length));
      expect404(response);
      expect(response.headers['x-request-id']).toEqual(expect.any(String));
    }
  });

  it('answers 404 for a replaced token', async () => {
    const admin = await f.user();
    const first = await invited(admin);
    await invited(admin, { email: first.email });
    expect404(await lookup(first.token));
  });

  it.each([
    ['too short', 'a'.repeat(19)],
    ['too long', 'a'.repeat(201)],
    ['with a dot', `${'a'.repeat(30)}.${'b'.repeat(10)}`],
    ['with a bang', `${'a'.repeat(30)}!`],
    ['with a space', `${'a'.repeat(15)} ${'b'.repeat(15)}`],
  ])('answers 422 at path.token for a malformed token (%s)', async (_label, token) => {
    expectValidation(await lookup(token), ['path', 'token']);
  });
});

describe('POST /api/v1/users/accept-invitation', () => {
  it('creates a verified user, member with the invited role, and signs them in (token body and cookie)', async () => {
    const admin = await f.user({ organizationName: 'Accepting Org' });
    const { email, invitation, token } = await invited(admin, { role: 'user' });
    const password = newPassword();
    const response = await accept(token, password);
    expect(response.statusCode, response.body).toBe(200);
    const body = response.json();
    expectTokenBody(body);
    expect(body.user).toMatchObject({
      email,
      first_name: 'Grace',
      last_name: 'Hopper',
      is_verified: true,
      email_verified_at: expect.any(String),
    });
    expect(body.organization).toMatchObject({ id: admin.organizationId, name: 'Accepting Org' });
    expect(body.role).toBe('user');
    expect(response.body).not.toContain(password);
    expect(response.body).not.toMatch(/password|scrypt/i);
    expect(decodeJwt(body.access_token)).toMatchObject({
      sub: String(body.user.id),
      org: admin.organizationId,
      role: 'user',
    });
    const cookie = sessionCookieOf(response);

    // The access token, the cookie and the refresh token all work.
    const profile = await get(ME, bearer(body.access_token));
    expect(profile.statusCode, profile.body).toBe(200);
    expect(profile.json()).toMatchObject({
      id: body.user.id,
      email,
      is_verified: true,
      organization_id: admin.organizationId,
      role: 'user',
      organizations: [
        { id: admin.organizationId, name: 'Accepting Org', slug: expect.any(String), role: 'user' },
      ],
    });
    expect((await get(ME, cookieOnly(cookie))).json().id).toBe(body.user.id);
    expect((await post(REFRESH, { refresh_token: body.refresh_token })).statusCode).toBe(200);

    // The organization lists the new member with the invited role.
    const members = (await get(USERS, { headers: admin.headers })).json();
    expect(members).toContainEqual(
      expect.objectContaining({ id: body.user.id, email, role: 'user', is_verified: true }),
    );
    // The invited user cannot invite (role user).
    expectError(
      await invite(bearer(body.access_token), {
        email: uniqueEmail('nope'),
        first_name: 'N',
        last_name: 'O',
        role: 'user',
      }),
      403,
    );

    // The password chosen signs in.
    const login = await post(LOGIN, { email, password });
    expect(login.statusCode, login.body).toBe(200);
    expect(login.json()).toMatchObject({ organization: { id: admin.organizationId }, role: 'user' });

    expect((await invitationRow(invitation.id)).accepted_at).not.toBeNull();
    expect(await usersWithEmail(email)).toBe(1);
  });

  it('gives the admin role when invited as admin', async () => {
    const admin = await f.user();
    const { email, token } = await invited(admin, { role: 'admin' });
    const response = await accept(token, newPassword());
    expect(response.statusCode, response.body).toBe(200);
    expect(response.json().role).toBe('admin');
    const jwt = response.json().access_token as string;
    const byNewAdmin = await invite(bearer(jwt), {
      email: uniqueEmail('second-hop'),
      first_name: 'S',
      last_name: 'H',
      role: 'user',
    });
    expect(byNewAdmin.statusCode, byNewAdmin.body).toBe(201);
    expect((await get(USERS, { headers: admin.headers })).json()).toContainEqual(
      expect.objectContaining({ email, role: 'admin' }),
    );
  });

  it('answers 404 the second time the same token is accepted', async () => {
    const admin = await f.user();
    const { email, token } = await invited(admin);
    const password = newPassword();
    expect((await accept(token, password)).statusCode).toBe(200);
    expect404(await accept(token, password));
    expect404(await accept(token, newPassword()));
    expect(await usersWithEmail(email)).toBe(1);
  });

  it('adds an existing account, which must give its own password (wrong: 401, invitation still usable)', async () => {
    const admin = await f.user({ organizationName: 'Joining Org' });
    const existing = await f.user({ organizationName: 'Home Org' });
    const { invitation, token } = await invited(admin, { email: existing.email, role: 'admin' });

    const wrong = await accept(token, newPassword());
    expectError(wrong, 401, /password/);
    expect(wrong.cookies.find((c) => c.name === 'sb_session')).toBeUndefined();
    // Nothing happened: still pending, not a member, the account's password unchanged.
    expect((await lookup(token)).statusCode).toBe(200);
    expect((await invitationRow(invitation.id)).accepted_at).toBeNull();
    expect(await memberIds(admin)).not.toContain(existing.id);
    expect((await post(LOGIN, { email: existing.email, password: existing.password })).statusCode).toBe(200);

    const response = await accept(token, existing.password);
    expect(response.statusCode, response.body).toBe(200);
    expectTokenBody(response.json());
    sessionCookieOf(response);
    expect(response.json()).toMatchObject({
      user: { id: existing.id, email: existing.email, is_verified: true },
      organization: { id: admin.organizationId, name: 'Joining Org' },
      role: 'admin',
    });
    const profile = await get(ME, bearer(response.json().access_token));
    expect(profile.json().organization_id).toBe(admin.organizationId);
    expect(profile.json().organizations).toHaveLength(2);
    expect(profile.json().organizations).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ id: existing.organizationId, name: 'Home Org', role: 'admin' }),
        expect.objectContaining({ id: admin.organizationId, name: 'Joining Org', role: 'admin' }),
      ]),
    );
    expect(await memberIds(admin)).toContain(existing.id);
    expect(await usersWithEmail(existing.email)).toBe(1);
    // The account keeps its password and its other session.
    expect((await post(LOGIN, { email: existing.email, password: existing.password })).statusCode).toBe(200);
    expect((await get(ME, { headers: existing.headers })).statusCode).toBe(200);
  });

  it("marks an existing unverified account's email verified", async () => {
    const admin = await f.user();
    const existing = await f.user({ verified: false });
    const { token } = await invited(admin, { email: existing.email });
    const response = await accept(token, existing.password);
    expect(response.statusCode, response.body).toBe(200);
    expect(response.json().user.is_verified).toBe(true);
    expect((await get(ME, { headers: existing.headers })).json().is_verified).toBe(true);
  });

  it('lets an existing account without a password set one by accepting', async () => {
    const admin = await f.user();
    const existing = await f.user();
    await updateUser(t.database.db, existing.id, { passwordHash: null });
    const { token } = await invited(admin, { email: existing.email });
    const password = newPassword();
    const response = await accept(token, password);
    expect(response.statusCode, response.body).toBe(200);
    expect(response.json().user.id).toBe(existing.id);
    expect((await post(LOGIN, { email: existing.email, password })).statusCode).toBe(200);
  });

  it('works without credentials and ignores those of someone else', async () => {
    const admin = await f.user();
    const stranger = await f.user();
    const { email, token } = await invited(admin);
    const response = await post(
      ACCEPT,
      { token, password: 'long enough pw', confirm_password: 'long enough pw' },
      { headers: stranger.headers },
    );
    expect(response.statusCode, response.body).toBe(200);
    expect(response.json().user.email).toBe(email);
    expect(response.json().user.id).not.toBe(stranger.id);
    expect(await memberIds(admin)).not.toContain(stranger.id);
  });

  it('answers 422 at body.confirm_password when it does not match, and the invitation stays usable', async () => {
    const admin = await f.user();
    const { email, token } = await invited(admin);
    const password = newPassword();
    const response = await accept(token, password, `${password}x`);
    expectValidation(response, ['body', 'confirm_password']);
    expect(response.json().detail).toHaveLength(1);
    expect(await usersWithEmail(email)).toBe(0);
    expect((await lookup(token)).statusCode).toBe(200);
    expect((await accept(token, password)).statusCode).toBe(200);
  });

  it('answers 422 for a short, over-long or missing password and a missing confirmation', async () => {
    const admin = await f.user();
    const { email, token } = await invited(admin);
    expectValidation(await accept(token, 'short12'), ['body', 'password'], 'string_too_short');
    expectValidation(await accept(token, 'x'.repeat(257)), ['body', 'password'], 'string_too_long');
    expectValidation(
      await post(ACCEPT, { token, confirm_password: 'long enough pw' }),
      ['body', 'password'],
      'missing',
    );
    expectValidation(
      await post(ACCEPT, { token, password: 'long enough pw' }),
      ['body', 'confirm_password'],
      'missing',
    );
    expectValidation(await post(ACCEPT, { token, password: 12345678, confirm_password: 12345678 }), [
      'body',
      'password',
    ]);
    const empty = await post(ACCEPT, {});
    for (const field of ['token', 'password', 'confirm_password']) {
      expectValidation(empty, ['body', field], 'missing');
    }
    expect(await usersWithEmail(email)).toBe(0);
    expect((await lookup(token)).statusCode).toBe(200);
  });

  it('answers 422 at body.token for a malformed token and 404 for an unknown one', async () => {
    for (const token of [
      '',
      'a'.repeat(19),
      'a'.repeat(201),
      `${'a'.repeat(30)}.x`,
      `${'a'.repeat(30)}$`,
      42,
    ]) {
      expectValidation(
        await post(ACCEPT, { token, password: 'long enough pw', confirm_password: 'long enough pw' }),
        ['body', 'token'],
      );
    }
    expect404(await accept(unknownToken(), 'long enough pw'));
  });

  it('answers 422 json_invalid for malformed JSON', async () => {
    const response = await t.app.inject({
      method: 'POST',
      url: ACCEPT,
      headers: { 'content-type': 'application/json' },
      payload: '{"token": "abc',
    });
    expect(response.statusCode, response.body).toBe(422);
    expect(response.json()).toEqual({
      detail: [{ loc: ['body'], msg: expect.any(String), type: 'json_invalid' }],
    });
  });

  it('lets exactly one of two simultaneous accepts of one token through (new account)', async () => {
    const admin = await f.user();
    const { email, token } = await invited(admin, { role: 'admin' });
    const passwords = [newPassword(), newPassword()];
    const answers = await Promise.all(passwords.map((password) => accept(token, password)));
    expect(answers.map((a) => a.statusCode).sort()).toEqual([200, 404]);
    const winnerIndex = answers.findIndex((a) => a.statusCode === 200);
    const winner = answers[winnerIndex]!;
    expect404(answers[1 - winnerIndex]!);
    expectTokenBody(winner.json());
    expect(await usersWithEmail(email)).toBe(1);
    const members = (await get(USERS, { headers: admin.headers })).json();
    expect(members.filter((m: { email: string }) => m.email === email)).toEqual([
      expect.objectContaining({ id: winner.json().user.id, role: 'admin' }),
    ]);
    // The winner's password is the one that signs in.
    expect((await post(LOGIN, { email, password: passwords[winnerIndex] })).statusCode).toBe(200);
    expect((await post(LOGIN, { email, password: passwords[1 - winnerIndex] })).statusCode).toBe(401);
    expect404(await lookup(token));
  });

  it('lets exactly one of several simultaneous accepts of one token through (existing account)', async () => {
    const admin = await f.user();
    const existing = await f.user();
    const { token } = await invited(admin, { email: existing.email });
    const answers = await Promise.all(Array.from({ length: 4 }, () => accept(token, existing.password)));
    expect(answers.map((a) => a.statusCode).sort()).toEqual([200, 404, 404, 404]);
    const { rows } = await t.database.executeSql(
      'select count(*)::int as n from memberships where user_id = $1 and organization_id = $2',
      [existing.id, admin.organizationId],
    );
    expect(Number(rows[0]!.n)).toBe(1);
    const { rows: sessions } = await t.database.executeSql(
      'select count(*)::int as n from auth_sessions where user_id = $1',
      [existing.id],
    );
    // The registration session plus the one accepted sign-in.
    expect(Number(sessions[0]!.n)).toBe(2);
  });
});
