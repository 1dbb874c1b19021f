/**
 * GET /api/v1/organization and POST /api/v1/organization/create: reading the caller's organization
 * and creating another one (its creator its admin, trial credits for a user's first, a unique
 * slug even under concurrent creates), each validation rule and who may create.
 * Split from the former organization.test.ts. The tests share one platform and database; each creates
 * the users and organizations it needs.
 */
import { randomBytes } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { expectValidation } from './support/assertions.js';
import { Factories, type TestUser } from './support/factories.js';
import { useTestPlatform } from './support/harness.js';
import { ISO, ORGANIZATION_FIELDS, organizationApi, secret, uniqueSlug } from './support/organization-api.js';
import { masked } from './support/secrets.js';

// Its close lets the verification mails of the users made here finish before the database closes.
const t = useTestPlatform();
const { getOrg, putOrg, createOrg, organizationOf, balanceOf, switchTo } = organizationApi(t);
let f: Factories;

beforeAll(() => {
  f = new Factories(t);
});

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
