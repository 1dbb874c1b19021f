/**
 * The organization itself: GET/PUT /api/v1/organization, POST /api/v1/organization/create,
 * GET /api/v1/organization/configuration-status and GET/PUT /api/v1/organization/concurrency-settings.
 * Happy paths, each validation rule, who may read and change what, and isolation between
 * organizations. Stored credentials are checked in the database too (opened with the test key), so a
 * "kept" or "removed" secret is proven, not inferred from its mask. The tests share one platform and
 * database; each creates the users and organizations it needs.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { insertMembership } from '../src/domains/identity/store.js';
import { SecretBox } from '../src/lib/secrets.js';
import { expectValidation } from './support/assertions.js';
import { Factories, type TestUser } from './support/factories.js';
import { mailSettled, startTestPlatform, TEST_SECRET_KEY, type TestPlatform } from './support/harness.js';
import { masked } from './support/secrets.js';

const ORG = '/api/v1/organization';
const CREATE = '/api/v1/organization/create';
const STATUS = '/api/v1/organization/configuration-status';
const CONCURRENCY = '/api/v1/organization/concurrency-settings';
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;
const VENDORS = ['llm_a', 'llm_b', 'llm_c', 'llm_d', 'llm_e', 'stt_a', 'tts_a', 'tts_b', 'tts_c', 'tts_d'];
const ORGANIZATION_FIELDS = [
  'api_keys',
  'carrier_a',
  'carrier_b',
  'carrier_c',
  'created_at',
  'description',
  'domain',
  'id',
  'inactive_keys',
  'name',
  'settings',
  'sip_trunk_config',
  'slug',
  'updated_at',
].sort();

let t: TestPlatform;
let f: Factories;
const box = new SecretBox(TEST_SECRET_KEY);

beforeAll(async () => {
  t = await startTestPlatform();
  f = new Factories(t);
});
afterAll(async () => {
  // Let the verification mails of the users made here finish before the database closes.
  await mailSettled(t);
  await t.close();
});

type Headers = Record<string, string>;
type Json = Record<string, unknown>;

const getOrg = (headers: Headers) => t.app.inject({ method: 'GET', url: ORG, headers });
const putOrg = (headers: Headers, payload: unknown) =>
  t.app.inject({ method: 'PUT', url: ORG, headers, payload: payload as object });
const createOrg = (headers: Headers, payload: unknown) =>
  t.app.inject({ method: 'POST', url: CREATE, headers, payload: payload as object });
const getStatus = (headers: Headers) => t.app.inject({ method: 'GET', url: STATUS, headers });
const getConcurrency = (headers: Headers) => t.app.inject({ method: 'GET', url: CONCURRENCY, headers });
const putConcurrency = (headers: Headers, payload: unknown) =>
  t.app.inject({ method: 'PUT', url: CONCURRENCY, headers, payload: payload as object });
const postFallback = (headers: Headers, provider: string, payload: unknown) =>
  t.app.inject({
    method: 'POST',
    url: `/api/v1/organization/fallback-keys/${provider}`,
    headers,
    payload: payload as object,
  });

/** A secret long enough to be masked as `****` + its last four characters. */
const secret = (label: string) => `${label}-${randomBytes(12).toString('hex')}`;
const uniqueSlug = (label = 'org') => `${label}-${randomBytes(4).toString('hex')}`;

async function organizationOf(user: { headers: Headers }): Promise<Json> {
  const response = await getOrg(user.headers);
  expect(response.statusCode, response.body).toBe(200);
  return response.json();
}

/** The credential stored for (organization, provider), opened with the test key; undefined if none. */
async function storedCredential(organizationId: number, provider: string) {
  const { rows } = await t.database.executeSql(
    'select sealed from provider_credentials where organization_id = $1 and provider = $2',
    [organizationId, provider],
  );
  const sealed = rows[0]?.sealed;
  return typeof sealed === 'string' ? box.openJson<Record<string, string>>(sealed) : undefined;
}

async function countCredentials(organizationId: number): Promise<number> {
  const { rows } = await t.database.executeSql(
    'select count(*)::int as n from provider_credentials where organization_id = $1',
    [organizationId],
  );
  return Number(rows[0]?.n);
}

async function balanceOf(headers: Headers): Promise<number> {
  const response = await t.app.inject({ method: 'GET', url: '/v1/billing/wallet', headers });
  expect(response.statusCode, response.body).toBe(200);
  return response.json().balance;
}

async function switchTo(user: TestUser, organizationId: number) {
  return t.app.inject({
    method: 'POST',
    url: '/api/v1/auth/switch-organization',
    headers: user.headers,
    payload: { organization_id: organizationId },
  });
}

describe('GET /api/v1/organization', () => {
  it('returns the organization with exactly the documented fields', async () => {
    const admin = await f.user({ organizationName: 'Analytical Engines' });
    const response = await getOrg(admin.headers);
    expect(response.statusCode, response.body).toBe(200);
    const body = response.json();
    expect(Object.keys(body).sort()).toEqual(ORGANIZATION_FIELDS);
    expect(body).toMatchObject({
      id: admin.organizationId,
      name: 'Analytical Engines',
      api_keys: {},
      carrier_a: null,
      carrier_b: null,
      carrier_c: null,
      sip_trunk_config: null,
      inactive_keys: [],
    });
    expect(typeof body.slug).toBe('string');
    expect(body.slug.length).toBeGreaterThanOrEqual(3);
    expect(typeof body.settings).toBe('object');
    expect(body.created_at).toMatch(ISO);
    expect(body.updated_at).toMatch(ISO);
  });

  it('is readable by a member who is not an admin, with the same masked view', async () => {
    const admin = await f.user();
    const token = secret('member-view-token');
    const put = await putOrg(admin.headers, {
      carrier_a: { account_sid: 'AC-member-view', auth_token: token },
    });
    expect(put.statusCode, put.body).toBe(200);
    const member = await f.member(admin.organizationId, 'user');
    const response = await getOrg(member.headers);
    expect(response.statusCode, response.body).toBe(200);
    expect(response.json().carrier_a).toEqual({ account_sid: 'AC-member-view', auth_token: masked(token) });
    expect(response.body).not.toContain(token);
    expect(response.json()).toEqual(await organizationOf(admin));
  });
});

describe('POST /api/v1/organization/create', () => {
  it('creates an organization (201) whose creator is its admin', async () => {
    const user = await f.user();
    const slug = uniqueSlug('analytical-eu');
    const response = await createOrg(user.headers, {
      name: 'Analytical Engines EU',
      slug,
      description: 'Europe',
      domain: 'example.eu',
    });
    expect(response.statusCode, response.body).toBe(201);
    const body = response.json();
    expect(Object.keys(body).sort()).toEqual(ORGANIZATION_FIELDS);
    expect(body).toMatchObject({
      name: 'Analytical Engines EU',
      slug,
      description: 'Europe',
      domain: 'example.eu',
      api_keys: {},
      carrier_a: null,
      carrier_b: null,
      carrier_c: null,
      sip_trunk_config: null,
      inactive_keys: [],
    });
    expect(Number.isInteger(body.id)).toBe(true);
    expect(body.id).not.toBe(user.organizationId);
    expect(body.created_at).toMatch(ISO);

    // The session that created it stays where it was.
    expect((await organizationOf(user)).id).toBe(user.organizationId);

    // Switching there: role admin, and the organization is the new one.
    const switched = await switchTo(user, body.id);
    expect(switched.statusCode, switched.body).toBe(200);
    expect(switched.json().role).toBe('admin');
    expect(switched.json().organization.id).toBe(body.id);
    const there = { authorization: `Bearer ${switched.json().access_token}` };
    const shown = await getOrg(there);
    expect(shown.statusCode).toBe(200);
    expect(shown.json()).toMatchObject({ id: body.id, slug, name: 'Analytical Engines EU' });

    // Logging in straight into it says admin too, and the admin may change it.
    const login = await f.login(user, body.id);
    expect(login.role).toBe('admin');
    expect(login.organizationId).toBe(body.id);
    const renamed = await putOrg(login.headers, { name: 'Renamed EU' });
    expect(renamed.statusCode, renamed.body).toBe(200);
    expect(renamed.json().name).toBe('Renamed EU');
    expect((await organizationOf(user)).name).not.toBe('Renamed EU');

    // It is listed among the user's members there, as admin.
    const members = await t.app.inject({ method: 'GET', url: '/api/v1/users', headers: login.headers });
    expect(members.statusCode).toBe(200);
    const me = (members.json() as Array<{ id: number; role: string }>).find((m) => m.id === user.id);
    expect(me?.role).toBe('admin');
  });

  it('takes description and domain as optional (absent or null)', async () => {
    const user = await f.user();
    const bare = await createOrg(user.headers, { name: 'Bare', slug: uniqueSlug('bare') });
    expect(bare.statusCode, bare.body).toBe(201);
    expect(bare.json()).toMatchObject({ description: null, domain: null });
    const nulls = await createOrg(user.headers, {
      name: 'Nulls',
      slug: uniqueSlug('nulls'),
      description: null,
      domain: null,
    });
    expect(nulls.statusCode, nulls.body).toBe(201);
    expect(nulls.json()).toMatchObject({ description: null, domain: null });
  });

  it('gives trial credits only to the first organization of the user', async () => {
    const user = await f.user();
    expect(await balanceOf(user.headers)).toBe(10);

    const second = await createOrg(user.headers, { name: 'Second', slug: uniqueSlug('second') });
    expect(second.statusCode, second.body).toBe(201);
    const third = await createOrg(user.headers, { name: 'Third', slug: uniqueSlug('third') });
    expect(third.statusCode, third.body).toBe(201);

    for (const id of [second.json().id, third.json().id]) {
      const inThere = await f.login(user, id);
      expect(await balanceOf(inThere.headers)).toBe(0);
      const ledger = await t.app.inject({
        method: 'GET',
        url: '/v1/billing/ledger',
        headers: inThere.headers,
      });
      expect(ledger.statusCode).toBe(200);
      expect(ledger.json().entries).toEqual([]);
    }
    // The first organization still has exactly its 10.
    expect(await balanceOf(user.headers)).toBe(10);
  });

  it('refuses a slug that is taken (409), by anyone, and creates nothing', async () => {
    const owner = await f.user();
    const slug = uniqueSlug('taken');
    expect((await createOrg(owner.headers, { name: 'First', slug })).statusCode).toBe(201);

    const again = await createOrg(owner.headers, { name: 'Again', slug });
    expect(again.statusCode, again.body).toBe(409);
    expect(typeof again.json().detail).toBe('string');
    const stranger = await f.user();
    const theirs = await createOrg(stranger.headers, { name: 'Theirs', slug });
    expect(theirs.statusCode, theirs.body).toBe(409);

    const { rows } = await t.database.executeSql('select name from organizations where slug = $1', [slug]);
    expect(rows).toEqual([{ name: 'First' }]);
    const memberships = await t.database.executeSql(
      "select count(*)::int as n from memberships m join organizations o on o.id = m.organization_id where o.name in ('Again', 'Theirs') and m.user_id in ($1, $2)",
      [owner.id, stranger.id],
    );
    expect(Number(memberships.rows[0]?.n)).toBe(0);
  });

  it('lets exactly one of several concurrent creates with the same slug win', async () => {
    const users = await Promise.all([f.user(), f.user(), f.user(), f.user()]);
    const slug = uniqueSlug('race');
    const responses = await Promise.all(
      users.map((u, i) => createOrg(u.headers, { name: `Racer ${i}`, slug })),
    );
    const codes = responses.map((r) => r.statusCode).sort();
    expect(codes, responses.map((r) => r.body).join('\n')).toEqual([201, 409, 409, 409]);
    const { rows } = await t.database.executeSql(
      'select count(*)::int as n from organizations where slug = $1',
      [slug],
    );
    expect(Number(rows[0]?.n)).toBe(1);
  });

  describe('bad input answers 422 with the validation list', () => {
    let user: TestUser;
    beforeAll(async () => {
      user = await f.user();
    });

    it('missing name or slug', async () => {
      expectValidation(await createOrg(user.headers, { slug: uniqueSlug() }), ['body', 'name'], 'missing');
      expectValidation(await createOrg(user.headers, { name: 'No slug' }), ['body', 'slug'], 'missing');
    });

    it('empty name and name over 200 characters', async () => {
      expectValidation(
        await createOrg(user.headers, { name: '', slug: uniqueSlug() }),
        ['body', 'name'],
        'string_too_short',
      );
      expectValidation(
        await createOrg(user.headers, { name: 'n'.repeat(201), slug: uniqueSlug() }),
        ['body', 'name'],
        'string_too_long',
      );
    });

    it.each([
      'Upper-Case',
      'ab',
      '-leading',
      'trailing-',
      'under_score',
      'with space',
      'dots.in.it',
      'é-accent',
      'a'.repeat(64),
    ])('slug %j', async (slug) => {
      expectValidation(await createOrg(user.headers, { name: 'x', slug }), ['body', 'slug']);
    });

    it.each([
      'localhost',
      'http://example.com',
      'example.com/path',
      'exa mple.com',
      '.example.com',
      'example..com',
      'example.c',
      '',
    ])('domain %j', async (domain) => {
      expectValidation(await createOrg(user.headers, { name: 'x', slug: uniqueSlug(), domain }), [
        'body',
        'domain',
      ]);
    });

    it('description over 2000 characters', async () => {
      expectValidation(
        await createOrg(user.headers, { name: 'x', slug: uniqueSlug(), description: 'd'.repeat(2001) }),
        ['body', 'description'],
      );
    });

    it('a refused request created nothing: its slug is still free', async () => {
      const slug = uniqueSlug('refused');
      expectValidation(await createOrg(user.headers, { name: 'x', slug, domain: 'not a domain' }), [
        'body',
        'domain',
      ]);
      const { rows } = await t.database.executeSql('select id from organizations where slug = $1', [slug]);
      expect(rows).toEqual([]);
      expect((await createOrg(user.headers, { name: 'x', slug })).statusCode).toBe(201);
    });

    it('accepts the boundaries: 3 and 63 character slugs, a 200 character name', async () => {
      const three = `${randomBytes(1).toString('hex')}x`;
      const r3 = await createOrg(user.headers, { name: 'n'.repeat(200), slug: three });
      expect(r3.statusCode, r3.body).toBe(201);
      const long = `${randomBytes(4).toString('hex')}${'a'.repeat(55)}`;
      expect(long).toHaveLength(63);
      const r63 = await createOrg(user.headers, { name: 'x', slug: long, domain: 'sub.example.co.uk' });
      expect(r63.statusCode, r63.body).toBe(201);
      expect(r63.json().domain).toBe('sub.example.co.uk');
    });
  });

  it('refuses without credentials (401) and with an API key, whatever its areas (403)', async () => {
    const slug = uniqueSlug('nocreds');
    const none = await createOrg({}, { name: 'x', slug });
    expect(none.statusCode).toBe(401);
    const user = await f.user();
    const key = await f.apiKey(user, { permissions: { organization: 'read_write' } });
    const viaKey = await createOrg(key.headers, { name: 'x', slug });
    expect(viaKey.statusCode, viaKey.body).toBe(403);
    const { rows } = await t.database.executeSql('select id from organizations where slug = $1', [slug]);
    expect(rows).toEqual([]);
  });
});

describe('PUT /api/v1/organization', () => {
  it('changes the name and answers the organization', async () => {
    const admin = await f.user();
    const before = await organizationOf(admin);
    const response = await putOrg(admin.headers, { name: 'New name' });
    expect(response.statusCode, response.body).toBe(200);
    expect(Object.keys(response.json()).sort()).toEqual(ORGANIZATION_FIELDS);
    expect(response.json()).toMatchObject({ id: admin.organizationId, name: 'New name', slug: before.slug });
    expect(Date.parse(response.json().updated_at)).toBeGreaterThanOrEqual(
      Date.parse(String(before.updated_at)),
    );
    expect(await organizationOf(admin)).toEqual(response.json());
  });

  it('merges settings: named keys change, null removes a key, others stay', async () => {
    const admin = await f.user();
    const first = await putOrg(admin.headers, {
      settings: { default_timezone: 'Europe/London', enforce_sms_compliance: true, custom_flag: 'x' },
    });
    expect(first.statusCode, first.body).toBe(200);
    expect(first.json().settings).toMatchObject({
      default_timezone: 'Europe/London',
      enforce_sms_compliance: true,
      custom_flag: 'x',
    });

    const second = await putOrg(admin.headers, {
      settings: { default_timezone: 'America/New_York', custom_flag: null },
    });
    expect(second.statusCode, second.body).toBe(200);
    const settings = second.json().settings;
    expect(settings.default_timezone).toBe('America/New_York');
    expect(settings.enforce_sms_compliance).toBe(true);
    expect('custom_flag' in settings).toBe(false);

    // A PUT without settings leaves them alone.
    const third = await putOrg(admin.headers, { name: 'Still here' });
    expect(third.json().settings).toEqual(settings);
    expect((await organizationOf(admin)).settings).toEqual(settings);
  });

  it('stores a key per vendor: masked when shown, sealed in the database, null removes one', async () => {
    const admin = await f.user();
    const keys = Object.fromEntries(VENDORS.map((v) => [v, secret(`key-${v}`)]));
    const response = await putOrg(admin.headers, {
      api_keys: Object.fromEntries(VENDORS.map((v) => [v, { api_key: keys[v] }])),
    });
    expect(response.statusCode, response.body).toBe(200);
    const expected = Object.fromEntries(
      VENDORS.map((v) => [v, { api_key: masked(keys[v] as string), active: true }]),
    );
    expect(response.json().api_keys).toEqual(expected);
    expect(response.json().inactive_keys).toEqual([]);
    const shown = await getOrg(admin.headers);
    expect(shown.json().api_keys).toEqual(expected);
    for (const vendor of VENDORS) {
      expect(response.body).not.toContain(keys[vendor]);
      expect(shown.body).not.toContain(keys[vendor]);
      expect(await storedCredential(admin.organizationId, vendor)).toEqual({ api_key: keys[vendor] });
    }

    const removed = await putOrg(admin.headers, { api_keys: { llm_b: null, tts_d: null } });
    expect(removed.statusCode, removed.body).toBe(200);
    expect(Object.keys(removed.json().api_keys).sort()).toEqual(
      VENDORS.filter((v) => v !== 'llm_b' && v !== 'tts_d').sort(),
    );
    expect(await storedCredential(admin.organizationId, 'llm_b')).toBeUndefined();
    expect(await storedCredential(admin.organizationId, 'tts_d')).toBeUndefined();
    expect(await storedCredential(admin.organizationId, 'llm_a')).toEqual({ api_key: keys.llm_a });

    // A new value replaces the key.
    const rotated = secret('rotated-llm_a');
    const replace = await putOrg(admin.headers, { api_keys: { llm_a: { api_key: rotated } } });
    expect(replace.statusCode).toBe(200);
    expect(replace.json().api_keys.llm_a).toEqual({ api_key: masked(rotated), active: true });
    expect(await storedCredential(admin.organizationId, 'llm_a')).toEqual({ api_key: rotated });
  });

  it('stores carrier credentials: identifiers in clear, secrets masked', async () => {
    const admin = await f.user();
    const a = { account_sid: `AC${randomBytes(16).toString('hex')}`, auth_token: secret('auth-token') };
    const b = { api_key: secret('KEY'), connection_id: '1234567890' };
    const c = {
      application_id: 'aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee',
      private_key: `-----BEGIN PRIVATE KEY-----\n${randomBytes(48).toString('base64')}\n-----END PRIVATE KEY-----`,
    };
    const response = await putOrg(admin.headers, { carrier_a: a, carrier_b: b, carrier_c: c });
    expect(response.statusCode, response.body).toBe(200);
    const body = response.json();
    expect(body.carrier_a).toEqual({ account_sid: a.account_sid, auth_token: masked(a.auth_token) });
    expect(body.carrier_b).toEqual({ api_key: masked(b.api_key), connection_id: '1234567890' });
    expect(body.carrier_c).toEqual({ application_id: c.application_id, private_key: masked(c.private_key) });
    expect(body.carrier_c.private_key).toBe('****----');
    expect((await organizationOf(admin)).carrier_a).toEqual(body.carrier_a);
    for (const value of [
      a.auth_token,
      b.api_key,
      c.private_key,
      JSON.stringify(c.private_key).slice(1, -1),
    ]) {
      expect(response.body).not.toContain(value);
    }
    expect(await storedCredential(admin.organizationId, 'carrier_a')).toEqual(a);
    expect(await storedCredential(admin.organizationId, 'carrier_b')).toEqual(b);
    expect(await storedCredential(admin.organizationId, 'carrier_c')).toEqual(c);

    // null removes one credential, the others stay.
    const removed = await putOrg(admin.headers, { carrier_b: null });
    expect(removed.statusCode, removed.body).toBe(200);
    expect(removed.json().carrier_b).toBeNull();
    expect(removed.json().carrier_a).toEqual(body.carrier_a);
    expect(removed.json().carrier_c).toEqual(body.carrier_c);
    expect(await storedCredential(admin.organizationId, 'carrier_b')).toBeUndefined();
    expect(await storedCredential(admin.organizationId, 'carrier_a')).toEqual(a);
  });

  it('stores the SIP trunk: domain, inbound flag and username in clear, password masked; null removes it', async () => {
    const admin = await f.user();
    const password = secret('sip-password');
    const response = await putOrg(admin.headers, {
      sip_trunk_config: {
        sip_domain: 'trunk.example.com',
        inbound_enabled: true,
        username: 'sb-user',
        password,
      },
    });
    expect(response.statusCode, response.body).toBe(200);
    expect(response.json().sip_trunk_config).toEqual({
      sip_domain: 'trunk.example.com',
      inbound_enabled: true,
      username: 'sb-user',
      password: masked(password),
    });
    expect(response.body).not.toContain(password);
    expect((await organizationOf(admin)).sip_trunk_config).toEqual(response.json().sip_trunk_config);
    expect(await storedCredential(admin.organizationId, 'sip_trunk')).toEqual({
      username: 'sb-user',
      password,
    });
    // The password is not kept in the organization's own row.
    const { rows } = await t.database.executeSql('select sip_trunk_config from organizations where id = $1', [
      admin.organizationId,
    ]);
    expect(JSON.stringify(rows)).not.toContain(password);

    const removed = await putOrg(admin.headers, { sip_trunk_config: null });
    expect(removed.statusCode, removed.body).toBe(200);
    expect(removed.json().sip_trunk_config).toBeNull();
    expect(await storedCredential(admin.organizationId, 'sip_trunk')).toBeUndefined();
  });

  it('keeps the stored secret when its masked value is sent back', async () => {
    const admin = await f.user();
    const original = {
      llm: secret('llm-original'),
      token: secret('token-original'),
      bKey: secret('b-original'),
      pem: secret('pem-original'),
      sip: secret('sip-original'),
    };
    const first = await putOrg(admin.headers, {
      api_keys: { llm_a: { api_key: original.llm } },
      carrier_a: { account_sid: 'AC-first', auth_token: original.token },
      carrier_b: { api_key: original.bKey, connection_id: 'conn-first' },
      carrier_c: { application_id: 'app-first', private_key: original.pem },
      sip_trunk_config: {
        sip_domain: 'a.example.com',
        inbound_enabled: false,
        username: 'u1',
        password: original.sip,
      },
    });
    expect(first.statusCode, first.body).toBe(200);
    const shown = first.json();

    // Round-trip what GET showed, changing only identifiers and plain settings (not the trunk's
    // sip_domain: the password goes there, see secret-endpoints.test.ts).
    const second = await putOrg(admin.headers, {
      api_keys: { llm_a: { api_key: shown.api_keys.llm_a.api_key } },
      carrier_a: { account_sid: 'AC-second', auth_token: shown.carrier_a.auth_token },
      carrier_b: { api_key: shown.carrier_b.api_key, connection_id: 'conn-second' },
      carrier_c: { application_id: 'app-second', private_key: shown.carrier_c.private_key },
      sip_trunk_config: { ...shown.sip_trunk_config, inbound_enabled: true, username: 'u2' },
    });
    expect(second.statusCode, second.body).toBe(200);
    expect(second.json().carrier_a).toEqual({ account_sid: 'AC-second', auth_token: masked(original.token) });
    expect(second.json().sip_trunk_config).toEqual({
      sip_domain: 'a.example.com',
      inbound_enabled: true,
      username: 'u2',
      password: masked(original.sip),
    });
    const id = admin.organizationId;
    expect(await storedCredential(id, 'llm_a')).toEqual({ api_key: original.llm });
    expect(await storedCredential(id, 'carrier_a')).toEqual({
      account_sid: 'AC-second',
      auth_token: original.token,
    });
    expect(await storedCredential(id, 'carrier_b')).toEqual({
      api_key: original.bKey,
      connection_id: 'conn-second',
    });
    expect(await storedCredential(id, 'carrier_c')).toEqual({
      application_id: 'app-second',
      private_key: original.pem,
    });
    expect(await storedCredential(id, 'sip_trunk')).toEqual({ username: 'u2', password: original.sip });
  });

  it('shows a short secret as **** and keeps it when **** is sent back', async () => {
    const admin = await f.user();
    const first = await putOrg(admin.headers, { carrier_a: { account_sid: 'AC-short', auth_token: 'tiny' } });
    expect(first.statusCode, first.body).toBe(200);
    expect(first.json().carrier_a).toEqual({ account_sid: 'AC-short', auth_token: '****' });
    const again = await putOrg(admin.headers, {
      carrier_a: { account_sid: 'AC-short-2', auth_token: '****' },
    });
    expect(again.statusCode, again.body).toBe(200);
    expect(await storedCredential(admin.organizationId, 'carrier_a')).toEqual({
      account_sid: 'AC-short-2',
      auth_token: 'tiny',
    });
  });

  it('loses no settings key under concurrent PUTs that each set a different key', async () => {
    const admin = await f.user();
    const n = 16;
    const responses = await Promise.all(
      Array.from({ length: n }, (_, i) => putOrg(admin.headers, { settings: { [`parallel_${i}`]: i } })),
    );
    for (const response of responses) expect(response.statusCode, response.body).toBe(200);
    const settings = (await organizationOf(admin)).settings as Json;
    const present = Array.from({ length: n }, (_, i) => `parallel_${i}`).filter((k) => k in settings);
    expect(present, JSON.stringify(settings)).toHaveLength(n);
  });

  it('refuses a masked value where nothing is stored (422), and applies no part of that request', async () => {
    const admin = await f.user();
    const llm = secret('llm-not-saved');
    const cases: Array<[Json, Array<string | number>]> = [
      [{ carrier_a: { account_sid: 'AC1', auth_token: '****1234' } }, ['body', 'carrier_a', 'auth_token']],
      [{ carrier_b: { api_key: '****1234', connection_id: 'c1' } }, ['body', 'carrier_b', 'api_key']],
      [
        { carrier_c: { application_id: 'app', private_key: '****1234' } },
        ['body', 'carrier_c', 'private_key'],
      ],
      [{ api_keys: { tts_b: { api_key: '****1234' } } }, ['body', 'api_keys', 'tts_b', 'api_key']],
      [
        { sip_trunk_config: { sip_domain: 'x.example.com', password: '****1234' } },
        ['body', 'sip_trunk_config', 'password'],
      ],
    ];
    for (const [payload, loc] of cases) {
      // Together with a valid name, setting and key, none of which may be applied.
      const response = await putOrg(admin.headers, {
        name: 'Must not change',
        settings: { must_not: 'appear' },
        api_keys: { llm_a: { api_key: llm }, ...((payload.api_keys as Json | undefined) ?? {}) },
        ...Object.fromEntries(Object.entries(payload).filter(([k]) => k !== 'api_keys')),
      });
      expectValidation(response, loc);
      expect(response.body).not.toContain(llm);
    }
    const after = await organizationOf(admin);
    expect(after.name).not.toBe('Must not change');
    expect((after.settings as Json).must_not).toBeUndefined();
    expect(after.api_keys).toEqual({});
    expect(after.carrier_a).toBeNull();
    expect(after.sip_trunk_config).toBeNull();
    expect(await countCredentials(admin.organizationId)).toBe(0);
  });

  describe('HIPAA without a business associate agreement', () => {
    it('saves the vendor keys but does not activate them, and says why; baa_signed activates them', async () => {
      const admin = await f.user();
      const llm = secret('hipaa-llm');
      const tts = secret('hipaa-tts');
      const response = await putOrg(admin.headers, {
        settings: { hipaa_enabled: true },
        api_keys: { llm_a: { api_key: llm }, tts_a: { api_key: tts } },
      });
      expect(response.statusCode, response.body).toBe(200);
      const body = response.json();
      expect(body.api_keys).toEqual({
        llm_a: { api_key: masked(llm), active: false },
        tts_a: { api_key: masked(tts), active: false },
      });
      const inactive = body.inactive_keys as Array<{ provider: string; reason: string }>;
      expect(inactive.map((k) => k.provider).sort()).toEqual(['llm_a', 'tts_a']);
      for (const entry of inactive) {
        expect(entry.reason).toMatch(/hipaa/i);
        expect(entry.reason).toMatch(/baa_signed|business associate/i);
      }
      // Saved all the same.
      expect(await storedCredential(admin.organizationId, 'llm_a')).toEqual({ api_key: llm });
      expect(await storedCredential(admin.organizationId, 'tts_a')).toEqual({ api_key: tts });
      expect((await organizationOf(admin)).inactive_keys).toEqual(inactive);

      // A key added later under the same settings is inactive too.
      const stt = secret('hipaa-stt');
      const later = await putOrg(admin.headers, { api_keys: { stt_a: { api_key: stt } } });
      expect(later.json().api_keys.stt_a).toEqual({ api_key: masked(stt), active: false });
      expect(later.json().inactive_keys).toHaveLength(3);

      // baa_signed false changes nothing.
      const notSigned = await putOrg(admin.headers, { settings: { baa_signed: false } });
      expect(notSigned.json().inactive_keys).toHaveLength(3);

      const signed = await putOrg(admin.headers, { settings: { baa_signed: true } });
      expect(signed.statusCode, signed.body).toBe(200);
      expect(signed.json().inactive_keys).toEqual([]);
      for (const vendor of ['llm_a', 'tts_a', 'stt_a']) {
        expect(signed.json().api_keys[vendor].active, vendor).toBe(true);
      }
      expect(signed.json().settings).toMatchObject({ hipaa_enabled: true, baa_signed: true });

      // Removing the agreement deactivates them again; turning HIPAA off activates them.
      const unsigned = await putOrg(admin.headers, { settings: { baa_signed: null } });
      expect(unsigned.json().inactive_keys).toHaveLength(3);
      const off = await putOrg(admin.headers, { settings: { hipaa_enabled: false } });
      expect(off.json().inactive_keys).toEqual([]);
      expect(off.json().api_keys.llm_a.active).toBe(true);
    });
  });

  describe('bad input answers 422 and changes nothing', () => {
    let admin: TestUser;
    let before: Json;
    beforeAll(async () => {
      admin = await f.user();
      const setup = await putOrg(admin.headers, {
        name: 'Stable',
        settings: { default_timezone: 'Europe/Paris' },
        api_keys: { llm_a: { api_key: secret('stable-llm') } },
        carrier_a: { account_sid: 'AC-stable', auth_token: secret('stable-token') },
      });
      expect(setup.statusCode, setup.body).toBe(200);
      before = setup.json();
    });

    it('empty name, name over 200 characters, name not a string', async () => {
      expectValidation(await putOrg(admin.headers, { name: '' }), ['body', 'name'], 'string_too_short');
      expectValidation(
        await putOrg(admin.headers, { name: 'n'.repeat(201) }),
        ['body', 'name'],
        'string_too_long',
      );
      expectValidation(await putOrg(admin.headers, { name: { first: 'x' } }), ['body', 'name']);
    });

    it('unknown vendor in api_keys (extra_forbidden)', async () => {
      for (const vendor of ['llm_z', 'carrier_a', 'custom', 'LLM_A', 'stt_b']) {
        expectValidation(
          await putOrg(admin.headers, { api_keys: { [vendor]: { api_key: secret('x') } } }),
          ['body', 'api_keys', vendor],
          'extra_forbidden',
        );
      }
    });

    it('a vendor key without api_key, empty, or with another field', async () => {
      expectValidation(
        await putOrg(admin.headers, { api_keys: { llm_a: {} } }),
        ['body', 'api_keys', 'llm_a', 'api_key'],
        'missing',
      );
      expectValidation(await putOrg(admin.headers, { api_keys: { llm_a: { api_key: '' } } }), [
        'body',
        'api_keys',
        'llm_a',
        'api_key',
      ]);
      expectValidation(
        await putOrg(admin.headers, { api_keys: { llm_a: { api_key: secret('x'), model: 'm' } } }),
        ['body', 'api_keys', 'llm_a', 'model'],
        'extra_forbidden',
      );
      expectValidation(await putOrg(admin.headers, { api_keys: { llm_a: 'bare-string-key' } }), [
        'body',
        'api_keys',
        'llm_a',
      ]);
    });

    it('carrier credentials with a field missing, empty or unknown', async () => {
      expectValidation(
        await putOrg(admin.headers, { carrier_a: { account_sid: 'AC1' } }),
        ['body', 'carrier_a', 'auth_token'],
        'missing',
      );
      expectValidation(
        await putOrg(admin.headers, { carrier_a: { auth_token: secret('t') } }),
        ['body', 'carrier_a', 'account_sid'],
        'missing',
      );
      expectValidation(await putOrg(admin.headers, { carrier_a: { account_sid: 'AC1', auth_token: '' } }), [
        'body',
        'carrier_a',
        'auth_token',
      ]);
      expectValidation(
        await putOrg(admin.headers, { carrier_b: { api_key: secret('k') } }),
        ['body', 'carrier_b', 'connection_id'],
        'missing',
      );
      expectValidation(
        await putOrg(admin.headers, { carrier_b: { connection_id: 'c' } }),
        ['body', 'carrier_b', 'api_key'],
        'missing',
      );
      expectValidation(
        await putOrg(admin.headers, { carrier_c: { application_id: 'a' } }),
        ['body', 'carrier_c', 'private_key'],
        'missing',
      );
      expectValidation(
        await putOrg(admin.headers, {
          carrier_a: { account_sid: 'AC1', auth_token: secret('t'), region: 'eu' },
        }),
        ['body', 'carrier_a', 'region'],
        'extra_forbidden',
      );
    });

    it('a SIP trunk with a wrong type or an unknown field', async () => {
      expectValidation(await putOrg(admin.headers, { sip_trunk_config: { inbound_enabled: 'sometimes' } }), [
        'body',
        'sip_trunk_config',
        'inbound_enabled',
      ]);
      expectValidation(await putOrg(admin.headers, { sip_trunk_config: { sip_domain: '' } }), [
        'body',
        'sip_trunk_config',
        'sip_domain',
      ]);
      expectValidation(
        await putOrg(admin.headers, { sip_trunk_config: { sip_domain: 'x.example.com', port: 5060 } }),
        ['body', 'sip_trunk_config', 'port'],
        'extra_forbidden',
      );
    });

    it('an unknown time zone in settings.default_timezone', async () => {
      for (const zone of ['Mars/Olympus_Mons', 'Europe/Atlantis', 'not a zone']) {
        expectValidation(await putOrg(admin.headers, { settings: { default_timezone: zone } }), [
          'body',
          'settings',
          'default_timezone',
        ]);
      }
      expectValidation(await putOrg(admin.headers, { settings: { default_timezone: '' } }), [
        'body',
        'settings',
        'default_timezone',
      ]);
    });

    it('settings that are not an object, or known flags that are not booleans', async () => {
      expectValidation(await putOrg(admin.headers, { settings: 'hipaa' }), ['body', 'settings']);
      expectValidation(await putOrg(admin.headers, { settings: { hipaa_enabled: 'maybe' } }), [
        'body',
        'settings',
        'hipaa_enabled',
      ]);
      expectValidation(await putOrg(admin.headers, { settings: { baa_signed: 'maybe' } }), [
        'body',
        'settings',
        'baa_signed',
      ]);
    });

    it('a valid part next to an invalid part is not applied either', async () => {
      const response = await putOrg(admin.headers, {
        name: 'Half applied',
        settings: { default_timezone: 'Mars/Olympus_Mons' },
      });
      expectValidation(response, ['body', 'settings', 'default_timezone']);
    });

    it('left the organization as it was', async () => {
      const after = await organizationOf(admin);
      expect(after).toEqual(before);
      expect(after.name).toBe('Stable');
    });
  });

  describe('who may change it', () => {
    it('refuses without credentials (401)', async () => {
      const response = await putOrg({}, { name: 'x' });
      expect(response.statusCode).toBe(401);
      expect(typeof response.json().detail).toBe('string');
    });

    it('refuses a member who is not an admin (403) and changes nothing', async () => {
      const admin = await f.user();
      const before = await organizationOf(admin);
      const member = await f.member(admin.organizationId, 'user');
      const response = await putOrg(member.headers, {
        name: 'Taken over',
        carrier_a: { account_sid: 'AC-evil', auth_token: secret('evil') },
        settings: { hipaa_enabled: true },
      });
      expect(response.statusCode, response.body).toBe(403);
      expect(response.json().detail).toMatch(/admin/i);
      expect(await organizationOf(admin)).toEqual(before);
      expect(await countCredentials(admin.organizationId)).toBe(0);
    });

    it('a second admin of the organization may change it', async () => {
      const admin = await f.user();
      const second = await f.member(admin.organizationId, 'admin');
      const response = await putOrg(second.headers, { name: 'Changed by second admin' });
      expect(response.statusCode, response.body).toBe(200);
      expect((await organizationOf(admin)).name).toBe('Changed by second admin');
    });

    it('API keys: no organization area → 403; read → GET only; read_write of an admin → PUT', async () => {
      const admin = await f.user();
      const before = await organizationOf(admin);
      const none = await f.apiKey(admin, { permissions: { assistants: 'read_write', calls: 'read_write' } });
      const read = await f.apiKey(admin, { permissions: { organization: 'read' } });
      const write = await f.apiKey(admin, { permissions: { organization: 'read_write' } });

      const noneGet = await getOrg(none.headers);
      expect(noneGet.statusCode, noneGet.body).toBe(403);
      expect(noneGet.body).not.toContain(String(before.slug));
      expect((await putOrg(none.headers, { name: 'via none' })).statusCode).toBe(403);

      const readGet = await getOrg(read.headers);
      expect(readGet.statusCode, readGet.body).toBe(200);
      expect(readGet.json()).toEqual(before);
      const readPut = await putOrg(read.headers, { name: 'via read' });
      expect(readPut.statusCode, readPut.body).toBe(403);
      expect(readPut.json().detail).toMatch(/organization/);
      expect((await organizationOf(admin)).name).toBe(before.name);

      const writePut = await putOrg(write.headers, { name: 'via read_write' });
      expect(writePut.statusCode, writePut.body).toBe(200);
      expect((await organizationOf(admin)).name).toBe('via read_write');
    });

    it('an API key of a member who is not an admin cannot PUT, even with read_write', async () => {
      const admin = await f.user();
      const member = await f.member(admin.organizationId, 'user');
      const key = await f.apiKey(member, { permissions: { organization: 'read_write' } });
      expect((await getOrg(key.headers)).statusCode).toBe(200);
      const response = await putOrg(key.headers, { name: 'via member key' });
      expect(response.statusCode, response.body).toBe(403);
    });

    it('a session cookie needs X-CSRF-Token to PUT', async () => {
      const admin = await f.user();
      const cookies = { sb_session: admin.sessionCookie };
      const without = await t.app.inject({
        method: 'PUT',
        url: ORG,
        cookies,
        payload: { name: 'via cookie' },
      });
      expect(without.statusCode).toBe(403);
      expect((await organizationOf(admin)).name).not.toBe('via cookie');
      const withCsrf = await t.app.inject({
        method: 'PUT',
        url: ORG,
        cookies,
        headers: { 'x-csrf-token': admin.csrfToken },
        payload: { name: 'via cookie' },
      });
      expect(withCsrf.statusCode, withCsrf.body).toBe(200);
      expect((await organizationOf(admin)).name).toBe('via cookie');
    });

    it('GET refuses without credentials (401)', async () => {
      const response = await getOrg({});
      expect(response.statusCode).toBe(401);
      expect(Object.keys(response.json())).toEqual(['detail']);
    });
  });
});

describe('GET /api/v1/organization/configuration-status', () => {
  const KINDS = ['llm', 'stt', 'telephony', 'tts'];

  it('an empty organization is not ready and misses all four kinds', async () => {
    const admin = await f.user();
    const response = await getStatus(admin.headers);
    expect(response.statusCode, response.body).toBe(200);
    const body = response.json();
    expect(Object.keys(body).sort()).toEqual(['missing', 'providers', 'ready']);
    expect(body.ready).toBe(false);
    expect(body.missing).toHaveLength(4);
    for (const kind of KINDS) {
      expect(
        body.missing.some((m: string) => m.startsWith(`${kind}:`)),
        kind,
      ).toBe(true);
    }
    expect(Object.keys(body.providers).sort()).toEqual(KINDS);
    for (const kind of KINDS) {
      expect(body.providers[kind], kind).toEqual({ ready: false, usable: [], inactive: [] });
    }
  });

  it('is ready with a carrier and llm, stt and tts keys; the missing list shrinks on the way', async () => {
    const admin = await f.user();
    const steps: Array<[Json, string[]]> = [
      [{ carrier_a: { account_sid: 'AC-ready', auth_token: secret('tok') } }, ['llm', 'stt', 'tts']],
      [{ api_keys: { llm_c: { api_key: secret('llm') } } }, ['stt', 'tts']],
      [{ api_keys: { stt_a: { api_key: secret('stt') } } }, ['tts']],
      [{ api_keys: { tts_b: { api_key: secret('tts') } } }, []],
    ];
    for (const [payload, stillMissing] of steps) {
      expect((await putOrg(admin.headers, payload)).statusCode).toBe(200);
      const body = (await getStatus(admin.headers)).json();
      expect(body.missing.map((m: string) => m.split(':')[0]).sort(), JSON.stringify(payload)).toEqual(
        stillMissing,
      );
      expect(body.ready).toBe(stillMissing.length === 0);
    }
    const body = (await getStatus(admin.headers)).json();
    expect(body.providers).toEqual({
      telephony: {
        ready: true,
        usable: [{ provider: 'carrier_a', sources: ['organization'] }],
        inactive: [],
      },
      llm: { ready: true, usable: [{ provider: 'llm_c', sources: ['organization'] }], inactive: [] },
      stt: { ready: true, usable: [{ provider: 'stt_a', sources: ['organization'] }], inactive: [] },
      tts: { ready: true, usable: [{ provider: 'tts_b', sources: ['organization'] }], inactive: [] },
    });

    // Removing the carrier makes it not ready again.
    expect((await putOrg(admin.headers, { carrier_a: null })).statusCode).toBe(200);
    const after = (await getStatus(admin.headers)).json();
    expect(after.ready).toBe(false);
    expect(after.missing).toHaveLength(1);
    expect(after.missing[0]).toMatch(/^telephony:/);
  });

  it('counts carrier_b, carrier_c and a SIP trunk with a domain as telephony', async () => {
    const admin = await f.user();
    await putOrg(admin.headers, {
      carrier_b: { api_key: secret('b'), connection_id: 'c' },
      carrier_c: { application_id: 'app', private_key: secret('pem') },
      sip_trunk_config: { sip_domain: 'trunk.example.com', inbound_enabled: true },
    });
    const telephony = (await getStatus(admin.headers)).json().providers.telephony;
    expect(telephony.ready).toBe(true);
    expect(telephony.usable.map((u: { provider: string }) => u.provider).sort()).toEqual([
      'carrier_b',
      'carrier_c',
      'sip_trunk',
    ]);
  });

  it('lists fallback keys: enabled ones usable with source fallback, disabled ones inactive with the reason', async () => {
    const admin = await f.user();
    const spare = await postFallback(admin.headers, 'stt_a', {
      name: 'spare',
      api_key: secret('fb-stt'),
      enabled: false,
    });
    expect(spare.statusCode, spare.body).toBe(201);
    let body = (await getStatus(admin.headers)).json();
    expect(body.providers.stt.ready).toBe(false);
    expect(body.providers.stt.usable).toEqual([]);
    expect(body.providers.stt.inactive).toHaveLength(1);
    expect(body.providers.stt.inactive[0]).toMatchObject({ provider: 'stt_a', source: 'fallback' });
    expect(body.providers.stt.inactive[0].reason).toMatch(/disabled/);
    expect(body.providers.stt.inactive[0].reason).toContain('spare');
    expect(body.missing.some((m: string) => m.startsWith('stt:'))).toBe(true);

    const enabled = await postFallback(admin.headers, 'llm_d', {
      name: 'backup',
      api_key: secret('fb-llm'),
      enabled: true,
    });
    expect(enabled.statusCode, enabled.body).toBe(201);
    body = (await getStatus(admin.headers)).json();
    expect(body.providers.llm).toEqual({
      ready: true,
      usable: [{ provider: 'llm_d', sources: ['fallback'] }],
      inactive: [],
    });
    expect(body.missing.some((m: string) => m.startsWith('llm:'))).toBe(false);

    // An organization key for the same provider adds its source.
    await putOrg(admin.headers, { api_keys: { llm_d: { api_key: secret('org-llm') } } });
    body = (await getStatus(admin.headers)).json();
    expect(body.providers.llm.usable).toHaveLength(1);
    expect(body.providers.llm.usable[0].provider).toBe('llm_d');
    expect([...body.providers.llm.usable[0].sources].sort()).toEqual(['fallback', 'organization']);

    // Enabling the spare makes stt usable.
    const id = spare.json().id;
    const on = await t.app.inject({
      method: 'PUT',
      url: `/api/v1/organization/fallback-keys/stt_a/${id}`,
      headers: admin.headers,
      payload: { enabled: true },
    });
    expect(on.statusCode, on.body).toBe(200);
    body = (await getStatus(admin.headers)).json();
    expect(body.providers.stt).toEqual({
      ready: true,
      usable: [{ provider: 'stt_a', sources: ['fallback'] }],
      inactive: [],
    });
  });

  it('shows HIPAA-blocked organization keys as inactive, and usable again after baa_signed', async () => {
    const admin = await f.user();
    await putOrg(admin.headers, {
      settings: { hipaa_enabled: true },
      carrier_a: { account_sid: 'AC-h', auth_token: secret('tok') },
      api_keys: {
        llm_a: { api_key: secret('llm') },
        stt_a: { api_key: secret('stt') },
        tts_a: { api_key: secret('tts') },
      },
    });
    let body = (await getStatus(admin.headers)).json();
    expect(body.ready).toBe(false);
    for (const [kind, provider] of [
      ['llm', 'llm_a'],
      ['stt', 'stt_a'],
      ['tts', 'tts_a'],
    ] as const) {
      expect(body.providers[kind].ready, kind).toBe(false);
      expect(body.providers[kind].usable, kind).toEqual([]);
      expect(body.providers[kind].inactive, kind).toHaveLength(1);
      expect(body.providers[kind].inactive[0]).toMatchObject({ provider, source: 'organization' });
      expect(body.providers[kind].inactive[0].reason).toMatch(/hipaa/i);
    }
    expect(body.missing.map((m: string) => m.split(':')[0]).sort()).toEqual(['llm', 'stt', 'tts']);

    await putOrg(admin.headers, { settings: { baa_signed: true } });
    body = (await getStatus(admin.headers)).json();
    expect(body.ready).toBe(true);
    expect(body.missing).toEqual([]);
    for (const kind of ['llm', 'stt', 'tts']) expect(body.providers[kind].inactive, kind).toEqual([]);
  });

  it('never shows a secret', async () => {
    const admin = await f.user();
    const secrets = [secret('s1'), secret('s2'), secret('s3'), secret('s4')];
    await putOrg(admin.headers, {
      carrier_a: { account_sid: 'AC-x', auth_token: secrets[0] },
      api_keys: { llm_a: { api_key: secrets[1] } },
    });
    await postFallback(admin.headers, 'tts_a', { name: 'fb', api_key: secrets[2], enabled: true });
    await postFallback(admin.headers, 'stt_a', { name: 'off', api_key: secrets[3], enabled: false });
    const response = await getStatus(admin.headers);
    expect(response.statusCode).toBe(200);
    for (const s of secrets) {
      expect(response.body).not.toContain(s);
      expect(response.body).not.toContain(s.slice(-8));
    }
  });

  it('who may read it: members and API keys with organization read; 401 and 403 otherwise', async () => {
    const admin = await f.user();
    const member = await f.member(admin.organizationId, 'user');
    expect((await getStatus(member.headers)).statusCode).toBe(200);
    const read = await f.apiKey(admin, { permissions: { organization: 'read' } });
    const readResponse = await getStatus(read.headers);
    expect(readResponse.statusCode).toBe(200);
    expect(readResponse.json().ready).toBe(false);
    const none = await f.apiKey(admin, { permissions: { calls: 'read_write' } });
    expect((await getStatus(none.headers)).statusCode).toBe(403);
    expect((await getStatus({})).statusCode).toBe(401);
  });
});

describe('GET/PUT /api/v1/organization/concurrency-settings', () => {
  it('starts empty', async () => {
    const admin = await f.user();
    const response = await getConcurrency(admin.headers);
    expect(response.statusCode, response.body).toBe(200);
    expect(response.json()).toEqual({ tts: {}, stt: {} });
  });

  it('PUT replaces the whole settings and GET returns them', async () => {
    const admin = await f.user();
    const first = {
      tts: {
        tts_a: { enabled: true, concurrent_limit: 10 },
        tts_b: { enabled: false, concurrent_limit: 1 },
        tts_c: { enabled: true, concurrent_limit: 100_000 },
        tts_d: { enabled: true, concurrent_limit: 3 },
      },
      stt: { stt_a: { enabled: true, concurrent_limit: 25 } },
    };
    const put = await putConcurrency(admin.headers, first);
    expect(put.statusCode, put.body).toBe(200);
    expect(put.json()).toEqual(first);
    expect((await getConcurrency(admin.headers)).json()).toEqual(first);

    // Replace, not merge: what is not sent is gone.
    const second = { tts: { tts_c: { enabled: false, concurrent_limit: 7 } } };
    const replaced = await putConcurrency(admin.headers, second);
    expect(replaced.statusCode, replaced.body).toBe(200);
    expect(replaced.json()).toEqual({ tts: second.tts, stt: {} });
    expect((await getConcurrency(admin.headers)).json()).toEqual({ tts: second.tts, stt: {} });

    const emptied = await putConcurrency(admin.headers, {});
    expect(emptied.statusCode).toBe(200);
    expect((await getConcurrency(admin.headers)).json()).toEqual({ tts: {}, stt: {} });
  });

  describe('bad input answers 422 and changes nothing', () => {
    let admin: TestUser;
    const stable = {
      tts: { tts_a: { enabled: true, concurrent_limit: 5 } },
      stt: { stt_a: { enabled: true, concurrent_limit: 6 } },
    };
    beforeAll(async () => {
      admin = await f.user();
      expect((await putConcurrency(admin.headers, stable)).statusCode).toBe(200);
    });

    it('unknown provider names (extra_forbidden)', async () => {
      const cases: Array<[Json, Array<string | number>]> = [
        [{ tts: { tts_z: { enabled: true, concurrent_limit: 1 } } }, ['body', 'tts', 'tts_z']],
        [{ tts: { stt_a: { enabled: true, concurrent_limit: 1 } } }, ['body', 'tts', 'stt_a']],
        [{ stt: { tts_a: { enabled: true, concurrent_limit: 1 } } }, ['body', 'stt', 'tts_a']],
        [{ stt: { llm_a: { enabled: true, concurrent_limit: 1 } } }, ['body', 'stt', 'llm_a']],
        [{ llm: { llm_a: { enabled: true, concurrent_limit: 1 } } }, ['body', 'llm']],
      ];
      for (const [payload, loc] of cases) {
        expectValidation(await putConcurrency(admin.headers, payload), loc, 'extra_forbidden');
      }
    });

    it.each([0, -1, 1.5, 'ten', null, 100_001])('concurrent_limit %j', async (limit) => {
      expectValidation(
        await putConcurrency(admin.headers, { tts: { tts_a: { enabled: true, concurrent_limit: limit } } }),
        ['body', 'tts', 'tts_a', 'concurrent_limit'],
      );
    });

    it('concurrent_limit 0 is greater_than_equal', async () => {
      expectValidation(
        await putConcurrency(admin.headers, { stt: { stt_a: { enabled: true, concurrent_limit: 0 } } }),
        ['body', 'stt', 'stt_a', 'concurrent_limit'],
        'greater_than_equal',
      );
    });

    it('a limit without enabled or concurrent_limit, or with another field', async () => {
      expectValidation(
        await putConcurrency(admin.headers, { tts: { tts_a: { concurrent_limit: 2 } } }),
        ['body', 'tts', 'tts_a', 'enabled'],
        'missing',
      );
      expectValidation(
        await putConcurrency(admin.headers, { tts: { tts_a: { enabled: true } } }),
        ['body', 'tts', 'tts_a', 'concurrent_limit'],
        'missing',
      );
      expectValidation(
        await putConcurrency(admin.headers, {
          tts: { tts_a: { enabled: true, concurrent_limit: 2, burst: 3 } },
        }),
        ['body', 'tts', 'tts_a', 'burst'],
        'extra_forbidden',
      );
      expectValidation(
        await putConcurrency(admin.headers, { tts: { tts_a: { enabled: 'yes', concurrent_limit: 2 } } }),
        ['body', 'tts', 'tts_a', 'enabled'],
      );
      expectValidation(await putConcurrency(admin.headers, { tts: [] }), ['body', 'tts']);
    });

    it('a valid map next to an invalid one is not applied either', async () => {
      expectValidation(
        await putConcurrency(admin.headers, {
          tts: { tts_b: { enabled: true, concurrent_limit: 9 } },
          stt: { stt_a: { enabled: true, concurrent_limit: 0 } },
        }),
        ['body', 'stt', 'stt_a', 'concurrent_limit'],
      );
    });

    it('left the settings as they were', async () => {
      expect((await getConcurrency(admin.headers)).json()).toEqual(stable);
    });
  });

  describe('who may read and change them', () => {
    it('401 without credentials on GET and PUT', async () => {
      expect((await getConcurrency({})).statusCode).toBe(401);
      const put = await putConcurrency({}, { tts: {} });
      expect(put.statusCode).toBe(401);
      expect(typeof put.json().detail).toBe('string');
    });

    it('a member who is not an admin may read (200) but not change them (403)', async () => {
      const admin = await f.user();
      const settings = { tts: { tts_a: { enabled: true, concurrent_limit: 4 } }, stt: {} };
      expect((await putConcurrency(admin.headers, settings)).statusCode).toBe(200);
      const member = await f.member(admin.organizationId, 'user');
      const read = await getConcurrency(member.headers);
      expect(read.statusCode).toBe(200);
      expect(read.json()).toEqual(settings);
      const write = await putConcurrency(member.headers, { tts: {}, stt: {} });
      expect(write.statusCode, write.body).toBe(403);
      expect(write.json().detail).toMatch(/admin/i);
      expect((await getConcurrency(admin.headers)).json()).toEqual(settings);
    });

    it('API keys: no organization area → 403; read → GET only; read_write of an admin → PUT', async () => {
      const admin = await f.user();
      const none = await f.apiKey(admin, { permissions: { sms: 'read_write' } });
      const read = await f.apiKey(admin, { permissions: { organization: 'read' } });
      const write = await f.apiKey(admin, { permissions: { organization: 'read_write' } });
      const settings = { tts: {}, stt: { stt_a: { enabled: true, concurrent_limit: 2 } } };

      expect((await getConcurrency(none.headers)).statusCode).toBe(403);
      expect((await putConcurrency(none.headers, settings)).statusCode).toBe(403);
      expect((await getConcurrency(read.headers)).statusCode).toBe(200);
      expect((await putConcurrency(read.headers, settings)).statusCode).toBe(403);
      expect((await getConcurrency(admin.headers)).json()).toEqual({ tts: {}, stt: {} });
      const written = await putConcurrency(write.headers, settings);
      expect(written.statusCode, written.body).toBe(200);
      expect((await getConcurrency(admin.headers)).json()).toEqual(settings);
    });
  });
});

describe('isolation between organizations', () => {
  it("one organization's credentials, settings and concurrency are invisible to another", async () => {
    const a = await f.user();
    const b = await f.user();
    const token = secret('iso-token');
    const llm = secret('iso-llm');
    const sip = secret('iso-sip');
    const put = await putOrg(a.headers, {
      name: 'Org A',
      settings: { default_timezone: 'Asia/Tokyo', hipaa_enabled: true, marker: 'only-in-a' },
      api_keys: { llm_a: { api_key: llm } },
      carrier_a: { account_sid: 'AC-only-in-a', auth_token: token },
      sip_trunk_config: { sip_domain: 'only-in-a.example.com', username: 'a-user', password: sip },
    });
    expect(put.statusCode, put.body).toBe(200);
    const concurrency = { tts: { tts_a: { enabled: true, concurrent_limit: 42 } }, stt: {} };
    expect((await putConcurrency(a.headers, concurrency)).statusCode).toBe(200);
    const fallback = await postFallback(a.headers, 'tts_b', {
      name: 'a-spare',
      api_key: secret('iso-fb'),
      enabled: true,
    });
    expect(fallback.statusCode).toBe(201);

    const seen = await getOrg(b.headers);
    expect(seen.statusCode).toBe(200);
    expect(seen.json()).toMatchObject({
      id: b.organizationId,
      api_keys: {},
      carrier_a: null,
      carrier_b: null,
      carrier_c: null,
      sip_trunk_config: null,
      inactive_keys: [],
    });
    expect(seen.json().name).not.toBe('Org A');
    for (const text of ['only-in-a', 'Asia/Tokyo', 'AC-only-in-a', 'a-user', masked(token), masked(llm)]) {
      expect(seen.body, text).not.toContain(text);
    }
    expect((await getConcurrency(b.headers)).json()).toEqual({ tts: {}, stt: {} });
    const status = (await getStatus(b.headers)).json();
    expect(status.ready).toBe(false);
    expect(status.missing).toHaveLength(4);
    for (const kind of ['telephony', 'llm', 'stt', 'tts']) {
      expect(status.providers[kind], kind).toEqual({ ready: false, usable: [], inactive: [] });
    }

    // B's own changes do not reach A.
    expect(
      (await putOrg(b.headers, { name: 'Org B', carrier_a: null, api_keys: { llm_a: null } })).statusCode,
    ).toBe(200);
    expect((await putConcurrency(b.headers, { tts: {}, stt: {} })).statusCode).toBe(200);
    const aAfter = await organizationOf(a);
    expect(aAfter.name).toBe('Org A');
    expect(aAfter.carrier_a).toEqual({ account_sid: 'AC-only-in-a', auth_token: masked(token) });
    expect(await storedCredential(a.organizationId, 'llm_a')).toEqual({ api_key: llm });
    expect((await getConcurrency(a.headers)).json()).toEqual(concurrency);
  });

  it('a user in two organizations changes only the one the session is in', async () => {
    const user = await f.user();
    const created = await createOrg(user.headers, { name: 'Second home', slug: uniqueSlug('second-home') });
    expect(created.statusCode).toBe(201);
    const there = await f.login(user, created.json().id);

    const token = secret('second-home-token');
    expect(
      (
        await putOrg(there.headers, {
          carrier_a: { account_sid: 'AC-second', auth_token: token },
          settings: { only: 'second' },
        })
      ).statusCode,
    ).toBe(200);
    expect(
      (await putConcurrency(there.headers, { stt: { stt_a: { enabled: true, concurrent_limit: 8 } } }))
        .statusCode,
    ).toBe(200);

    const home = await organizationOf(user);
    expect(home.id).toBe(user.organizationId);
    expect(home.carrier_a).toBeNull();
    expect((home.settings as Json).only).toBeUndefined();
    expect((await getConcurrency(user.headers)).json()).toEqual({ tts: {}, stt: {} });
    expect((await organizationOf(there)).carrier_a).toEqual({
      account_sid: 'AC-second',
      auth_token: masked(token),
    });
    expect(await storedCredential(user.organizationId, 'carrier_a')).toBeUndefined();
  });

  it('an admin elsewhere who is a plain member here cannot change this organization', async () => {
    const owner = await f.user();
    const visitor = await f.user(); // admin of their own organization
    const inOwners = await f.member(owner.organizationId, 'user');
    // `member` makes a fresh user; make the visitor a member too and sign them in there.
    await insertMembership(t.database.db, visitor.id, owner.organizationId, 'user');
    const visiting = await f.login(visitor, owner.organizationId);
    expect(visiting.role).toBe('user');
    for (const who of [inOwners, visiting]) {
      expect((await putOrg(who.headers, { name: 'hijack' })).statusCode).toBe(403);
      expect((await putConcurrency(who.headers, { tts: {} })).statusCode).toBe(403);
    }
    expect((await organizationOf(owner)).name).not.toBe('hijack');
    // The visitor's admin role at home is untouched.
    expect((await putOrg(visitor.headers, { name: 'Visitor home' })).statusCode).toBe(200);
  });
});

describe('GET /api/v1/organization/configuration-status with keys the assistants carry', () => {
  const ASSISTANTS = '/api/v1/assistants';
  type Usable = { provider: string; sources: string[] };
  type Inactive = { provider: string; source: string; reason: string };
  type Kind = { ready: boolean; usable: Usable[]; inactive: Inactive[] };

  async function createAssistant(user: TestUser, payload: Json): Promise<number> {
    const response = await t.app.inject({
      method: 'POST',
      url: ASSISTANTS,
      headers: user.headers,
      payload: { name: `assistant ${randomBytes(4).toString('hex')}`, ...payload },
    });
    expect(response.statusCode, response.body).toBe(201);
    return response.json().id;
  }

  /**
   * An organization without keys of its own and two assistants carrying theirs: one through the flat
   * fields (llm_a_api_key, stt_api_key, tts_a_api_key, carrier_a_account_sid/auth_token), one through
   * the nested objects with tts_b instead of tts_a, so the two fall into different (llm, tts) groups.
   */
  async function organizationWithAssistantKeys() {
    const admin = await f.user();
    const secrets = {
      llm1: secret('a-llm1'),
      stt1: secret('a-stt1'),
      tts1: secret('a-tts1'),
      tok1: secret('a-tok1'),
      llm2: secret('a-llm2'),
      stt2: secret('a-stt2'),
      tts2: secret('a-tts2'),
      tok2: secret('a-tok2'),
      carrierB: secret('a-cb'),
    };
    await createAssistant(admin, {
      llm_a_api_key: secrets.llm1,
      stt_api_key: secrets.stt1,
      tts_a_api_key: secrets.tts1,
      carrier_a_account_sid: 'AC-assistant-1',
      carrier_a_auth_token: secrets.tok1,
    });
    await createAssistant(admin, {
      llm_provider_config: { api_key: secrets.llm2, model: 'm' },
      stt_settings: { api_key: secrets.stt2 },
      tts_settings: { provider: 'tts_b', api_key: secrets.tts2 },
      carrier_a_config: { account_sid: 'AC-assistant-2', auth_token: secrets.tok2 },
      carrier_b_config: { api_key: secrets.carrierB, connection_id: 'conn-assistant' },
    });
    return { admin, secrets };
  }

  const providersOf = async (user: TestUser) => {
    const response = await getStatus(user.headers);
    expect(response.statusCode, response.body).toBe(200);
    return response.json() as {
      ready: boolean;
      missing: string[];
      providers: Record<'llm' | 'stt' | 'tts' | 'telephony', Kind>;
    };
  };

  it('an assistant without keys of its own adds nothing', async () => {
    const admin = await f.user();
    await createAssistant(admin, { llm_provider_config: null, tts_settings: { provider: 'tts_c' } });
    const body = await providersOf(admin);
    expect(body.ready).toBe(false);
    expect(body.missing).toHaveLength(4);
    for (const kind of ['llm', 'stt', 'telephony', 'tts'] as const)
      expect(body.providers[kind], kind).toEqual({ ready: false, usable: [], inactive: [] });
  });

  it("makes llm, stt, tts and telephony usable with source 'assistant', listed once however many assistants", async () => {
    const { admin } = await organizationWithAssistantKeys();
    const body = await providersOf(admin);
    expect(body.ready).toBe(true);
    expect(body.missing).toEqual([]);
    expect(body.providers.llm).toEqual({
      ready: true,
      usable: [{ provider: 'llm_a', sources: ['assistant'] }],
      inactive: [],
    });
    expect(body.providers.stt).toEqual({
      ready: true,
      usable: [{ provider: 'stt_a', sources: ['assistant'] }],
      inactive: [],
    });
    expect(body.providers.tts.ready).toBe(true);
    expect(body.providers.tts.inactive).toEqual([]);
    expect([...body.providers.tts.usable].sort((a, b) => a.provider.localeCompare(b.provider))).toEqual([
      { provider: 'tts_a', sources: ['assistant'] },
      { provider: 'tts_b', sources: ['assistant'] },
    ]);
    expect(body.providers.telephony.ready).toBe(true);
    expect(body.providers.telephony.inactive).toEqual([]);
    expect([...body.providers.telephony.usable].sort((a, b) => a.provider.localeCompare(b.provider))).toEqual(
      [
        { provider: 'carrier_a', sources: ['assistant'] },
        { provider: 'carrier_b', sources: ['assistant'] },
      ],
    );

    // The organization's own key for the same provider adds its source; 'assistant' stays once.
    await putOrg(admin.headers, {
      api_keys: { llm_a: { api_key: secret('org-llm') } },
      carrier_a: { account_sid: 'AC-org', auth_token: secret('org-tok') },
    });
    await postFallback(admin.headers, 'llm_a', { name: 'spare', api_key: secret('fb'), enabled: true });
    const after = await providersOf(admin);
    expect(after.providers.llm.usable).toHaveLength(1);
    expect([...(after.providers.llm.usable[0]?.sources ?? [])].sort()).toEqual([
      'assistant',
      'fallback',
      'organization',
    ]);
    const carrierA = after.providers.telephony.usable.find((u) => u.provider === 'carrier_a');
    expect([...(carrierA?.sources ?? [])].sort()).toEqual(['assistant', 'organization']);
  });

  it('a custom model at its own URL counts for llm without a key', async () => {
    const admin = await f.user();
    await createAssistant(admin, { llm_provider: 'custom', custom_llm_url: 'http://10.0.0.5:8080/v1' });
    const body = await providersOf(admin);
    expect(body.providers.llm).toEqual({
      ready: true,
      usable: [{ provider: 'custom', sources: ['assistant'] }],
      inactive: [],
    });
  });

  it("under HIPAA without a BAA the assistants' vendor keys are inactive (once per provider), carriers stay usable", async () => {
    const { admin } = await organizationWithAssistantKeys();
    await putOrg(admin.headers, { settings: { hipaa_enabled: true } });
    const body = await providersOf(admin);
    expect(body.ready).toBe(false);
    expect(body.missing.map((m) => m.split(':')[0]).sort()).toEqual(['llm', 'stt', 'tts']);
    const expected = [
      ['llm', ['llm_a']],
      ['stt', ['stt_a']],
      ['tts', ['tts_a', 'tts_b']],
    ] as const;
    for (const [kind, providers] of expected) {
      const part = body.providers[kind];
      expect(part.ready, kind).toBe(false);
      expect(part.usable, kind).toEqual([]);
      expect(part.inactive.map((i) => i.provider).sort(), kind).toEqual(providers);
      for (const inactive of part.inactive) {
        expect(inactive.source).toBe('assistant');
        expect(inactive.reason).toMatch(/hipaa/i);
        expect(inactive.reason).toContain('baa_signed');
      }
    }
    expect(body.providers.telephony.ready).toBe(true);
    expect(body.providers.telephony.inactive).toEqual([]);
    expect(body.providers.telephony.usable.map((u) => u.provider).sort()).toEqual(['carrier_a', 'carrier_b']);

    // With the organization's own key too, each source is listed inactive once.
    await putOrg(admin.headers, { api_keys: { llm_a: { api_key: secret('org-llm') } } });
    const withOrg = await providersOf(admin);
    expect(withOrg.providers.llm.inactive.map((i) => `${i.provider}/${i.source}`).sort()).toEqual([
      'llm_a/assistant',
      'llm_a/organization',
    ]);

    await putOrg(admin.headers, { settings: { baa_signed: true } });
    const signed = await providersOf(admin);
    expect(signed.ready).toBe(true);
    expect(signed.missing).toEqual([]);
    for (const kind of ['llm', 'stt', 'tts'] as const) {
      expect(signed.providers[kind].inactive, kind).toEqual([]);
      for (const usable of signed.providers[kind].usable) expect(usable.sources).toContain('assistant');
    }
  });

  it("never shows an assistant's secret", async () => {
    const { admin, secrets } = await organizationWithAssistantKeys();
    for (const settings of [{}, { hipaa_enabled: true }]) {
      if (Object.keys(settings).length > 0) await putOrg(admin.headers, { settings });
      const response = await getStatus(admin.headers);
      expect(response.statusCode).toBe(200);
      for (const s of Object.values(secrets)) {
        expect(response.body).not.toContain(s);
        expect(response.body).not.toContain(s.slice(-8));
      }
      expect(response.body).not.toContain('AC-assistant');
      expect(response.body).not.toContain('conn-assistant');
    }
  });
});
