/**
 * Managing user API keys: GET/POST /api/v1/users/me/api-keys and PUT/DELETE …/{key_id}.
 * Happy paths, each validation rule of the request schemas, and who may (not) touch which key.
 * The tests share one platform and database; each creates the users and keys it needs.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { insertMembership } from '../src/domains/identity/store.js';
import { expectValidation } from './support/assertions.js';
import { Factories, type TestUser } from './support/factories.js';
import { startTestPlatform, type TestPlatform } from './support/harness.js';

const KEYS = '/api/v1/users/me/api-keys';
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;

let t: TestPlatform;
let f: Factories;
beforeAll(async () => {
  t = await startTestPlatform();
  f = new Factories(t);
});
afterAll(() => t.close());

type Headers = Record<string, string>;

function createKey(headers: Headers, payload: unknown) {
  return t.app.inject({ method: 'POST', url: KEYS, headers, payload: payload as object });
}
function listKeys(headers: Headers) {
  return t.app.inject({ method: 'GET', url: KEYS, headers });
}
function updateKey(headers: Headers, id: number | string, payload: unknown) {
  return t.app.inject({ method: 'PUT', url: `${KEYS}/${id}`, headers, payload: payload as object });
}
function deleteKey(headers: Headers, id: number | string) {
  return t.app.inject({ method: 'DELETE', url: `${KEYS}/${id}`, headers });
}

async function keyIn(user: TestUser, id: number) {
  const response = await listKeys(user.headers);
  expect(response.statusCode).toBe(200);
  return (response.json() as Array<Record<string, unknown>>).find((k) => k.id === id);
}

describe('POST /api/v1/users/me/api-keys', () => {
  it('creates a key: 201, the secret once, and its metadata', async () => {
    const user = await f.user();
    const response = await createKey(user.headers, {
      name: 'CI deploys',
      permissions: { assistants: 'read_write', calls: 'read' },
      rate_limit: 120,
    });
    expect(response.statusCode, response.body).toBe(201);
    const { api_key: meta, key } = response.json();
    expect(key).toMatch(/^sk_[0-9A-Za-z]{32,}$/);
    expect(meta).toMatchObject({
      user_id: user.id,
      name: 'CI deploys',
      key_prefix: key.slice(0, 12),
      last_used_at: null,
      usage_count: 0,
      is_active: true,
      permissions: { assistants: 'read_write', calls: 'read' },
      rate_limit: 120,
    });
    expect(Number.isInteger(meta.id)).toBe(true);
    expect(meta.created_at).toMatch(ISO);
    expect(meta.updated_at).toMatch(ISO);
    expect(meta.key_prefix).toHaveLength(12);
    // The metadata itself carries neither the secret nor its hash.
    expect(JSON.stringify(meta)).not.toContain(key);
    expect(JSON.stringify(meta)).not.toContain(key.slice(12));
    expect(Object.keys(meta)).not.toContain('key_hash');
    expect(Object.keys(meta)).not.toContain('key');
  });

  it('defaults to no permissions and no rate limit', async () => {
    const user = await f.user();
    const response = await createKey(user.headers, { name: 'bare' });
    expect(response.statusCode, response.body).toBe(201);
    expect(response.json().api_key.permissions).toEqual({});
    expect(response.json().api_key.rate_limit).toBeNull();
  });

  it('gives every key its own secret and prefix', async () => {
    const user = await f.user();
    const a = await createKey(user.headers, { name: 'a' });
    const b = await createKey(user.headers, { name: 'b' });
    expect(a.statusCode).toBe(201);
    expect(b.statusCode).toBe(201);
    expect(a.json().key).not.toBe(b.json().key);
    expect(a.json().api_key.key_prefix).not.toBe(b.json().api_key.key_prefix);
    expect(a.json().api_key.id).not.toBe(b.json().api_key.id);
  });

  it('accepts every area and both levels, and a name of exactly 100 characters', async () => {
    const user = await f.user();
    const permissions = {
      assistants: 'read',
      calls: 'read_write',
      campaigns: 'read',
      graphs: 'read_write',
      sms: 'read',
      phone_numbers: 'read_write',
      organization: 'read',
    };
    const response = await createKey(user.headers, { name: 'n'.repeat(100), permissions, rate_limit: 1 });
    expect(response.statusCode, response.body).toBe(201);
    expect(response.json().api_key.permissions).toEqual(permissions);
    expect(response.json().api_key.name).toBe('n'.repeat(100));
    expect(response.json().api_key.rate_limit).toBe(1);
  });

  describe('bad input answers 422 with the validation list', () => {
    let user: TestUser;
    beforeAll(async () => {
      user = await f.user();
    });

    it('missing name', async () => {
      expectValidation(await createKey(user.headers, { permissions: {} }), ['body', 'name'], 'missing');
    });

    it('empty name', async () => {
      expectValidation(await createKey(user.headers, { name: '' }), ['body', 'name'], 'string_too_short');
    });

    it('name over 100 characters', async () => {
      expectValidation(
        await createKey(user.headers, { name: 'n'.repeat(101) }),
        ['body', 'name'],
        'string_too_long',
      );
    });

    it('unknown permission area', async () => {
      expectValidation(
        await createKey(user.headers, { name: 'x', permissions: { billing: 'read' } }),
        ['body', 'permissions', 'billing'],
        'extra_forbidden',
      );
    });

    it('unknown permission level', async () => {
      for (const level of ['write', 'admin', 'READ', '', 1, null]) {
        const response = await createKey(user.headers, { name: 'x', permissions: { calls: level } });
        expectValidation(response, ['body', 'permissions', 'calls']);
      }
    });

    it('permissions that are not an object', async () => {
      for (const permissions of ['read_write', ['calls'], 5]) {
        expectValidation(await createKey(user.headers, { name: 'x', permissions }), ['body', 'permissions']);
      }
    });

    // Not a positive integer (nor null): 0 and false must not slip through as "no limit".
    it.each([0, -1, 1.5, 'many', false])('rate_limit %j', async (rate_limit) => {
      const response = await createKey(user.headers, { name: 'x', rate_limit });
      expectValidation(response, ['body', 'rate_limit']);
    });

    it('a body that is not JSON', async () => {
      const response = await t.app.inject({
        method: 'POST',
        url: KEYS,
        headers: { ...user.headers, 'content-type': 'application/json' },
        payload: '{"name": ',
      });
      expectValidation(response, ['body'], 'json_invalid');
    });

    it('created no key while refusing', async () => {
      const response = await listKeys(user.headers);
      expect(response.statusCode).toBe(200);
      expect(response.json()).toEqual([]);
    });
  });
});

describe('GET /api/v1/users/me/api-keys', () => {
  it("lists the caller's keys with metadata, never a secret", async () => {
    const user = await f.user();
    const a = (await createKey(user.headers, { name: 'first', permissions: { sms: 'read' } })).json();
    const b = (await createKey(user.headers, { name: 'second', rate_limit: 7 })).json();

    const response = await listKeys(user.headers);
    expect(response.statusCode).toBe(200);
    const rows = response.json() as Array<Record<string, unknown>>;
    expect(rows).toHaveLength(2);
    expect(rows.map((r) => r.id).sort()).toEqual([a.api_key.id, b.api_key.id].sort());
    const first = rows.find((r) => r.id === a.api_key.id);
    expect(first).toEqual(a.api_key);
    expect(rows.find((r) => r.id === b.api_key.id)).toMatchObject({
      name: 'second',
      rate_limit: 7,
      key_prefix: b.key.slice(0, 12),
    });
    for (const secret of [a.key, b.key]) {
      expect(response.body).not.toContain(secret);
      expect(response.body).not.toContain(secret.slice(12));
    }
    for (const row of rows) {
      expect(Object.keys(row).sort()).toEqual(
        [
          'created_at',
          'id',
          'is_active',
          'key_prefix',
          'last_used_at',
          'name',
          'organization_id',
          'permissions',
          'rate_limit',
          'updated_at',
          'usage_count',
          'user_id',
        ].sort(),
      );
    }
  });

  it('is an empty list for a user without keys', async () => {
    const user = await f.user();
    const response = await listKeys(user.headers);
    expect(response.statusCode).toBe(200);
    expect(response.json()).toEqual([]);
  });

  it('is allowed to an unverified user (only create, update and delete need verification)', async () => {
    const user = await f.user({ verified: false });
    const response = await listKeys(user.headers);
    expect(response.statusCode).toBe(200);
    expect(response.json()).toEqual([]);
  });
});

describe('PUT /api/v1/users/me/api-keys/{key_id}', () => {
  it('renames, re-scopes, re-limits, deactivates and reactivates', async () => {
    const user = await f.user();
    const created = (
      await createKey(user.headers, { name: 'old', permissions: { assistants: 'read_write' }, rate_limit: 5 })
    ).json();
    const id: number = created.api_key.id;

    const renamed = await updateKey(user.headers, id, { name: 'new name' });
    expect(renamed.statusCode, renamed.body).toBe(200);
    expect(renamed.json()).toMatchObject({
      id,
      name: 'new name',
      permissions: { assistants: 'read_write' },
      rate_limit: 5,
      is_active: true,
      key_prefix: created.api_key.key_prefix,
      created_at: created.api_key.created_at,
    });
    expect(Date.parse(renamed.json().updated_at)).toBeGreaterThanOrEqual(
      Date.parse(created.api_key.updated_at),
    );

    // permissions are replaced, not merged
    const rescoped = await updateKey(user.headers, id, {
      permissions: { calls: 'read', organization: 'read' },
    });
    expect(rescoped.statusCode).toBe(200);
    expect(rescoped.json().permissions).toEqual({ calls: 'read', organization: 'read' });
    expect(rescoped.json().name).toBe('new name');

    const emptied = await updateKey(user.headers, id, { permissions: {} });
    expect(emptied.statusCode).toBe(200);
    expect(emptied.json().permissions).toEqual({});

    const limited = await updateKey(user.headers, id, { rate_limit: 60 });
    expect(limited.statusCode).toBe(200);
    expect(limited.json().rate_limit).toBe(60);

    const unlimited = await updateKey(user.headers, id, { rate_limit: null });
    expect(unlimited.statusCode).toBe(200);
    expect(unlimited.json().rate_limit).toBeNull();

    const off = await updateKey(user.headers, id, { is_active: false });
    expect(off.statusCode).toBe(200);
    expect(off.json().is_active).toBe(false);
    expect((await keyIn(user, id))?.is_active).toBe(false);

    const on = await updateKey(user.headers, id, { is_active: true });
    expect(on.statusCode).toBe(200);
    expect(on.json().is_active).toBe(true);

    const all = await updateKey(user.headers, id, {
      name: 'everything',
      permissions: { graphs: 'read_write' },
      rate_limit: 9,
      is_active: false,
    });
    expect(all.statusCode).toBe(200);
    expect(all.json()).toMatchObject({
      name: 'everything',
      permissions: { graphs: 'read_write' },
      rate_limit: 9,
      is_active: false,
    });
    expect(await keyIn(user, id)).toEqual(all.json());

    for (const response of [renamed, rescoped, emptied, limited, unlimited, off, on, all]) {
      expect(response.body).not.toContain(created.key);
      expect(response.body).not.toContain(created.key.slice(12));
    }
  });

  describe('bad input answers 422 and changes nothing', () => {
    let user: TestUser;
    let id: number;
    let before: Record<string, unknown> | undefined;
    beforeAll(async () => {
      user = await f.user();
      id = (
        await createKey(user.headers, { name: 'keep', permissions: { calls: 'read' }, rate_limit: 3 })
      ).json().api_key.id;
      before = await keyIn(user, id);
    });

    it('empty name', async () => {
      expectValidation(await updateKey(user.headers, id, { name: '' }), ['body', 'name'], 'string_too_short');
    });

    it('name over 100 characters', async () => {
      expectValidation(
        await updateKey(user.headers, id, { name: 'n'.repeat(101) }),
        ['body', 'name'],
        'string_too_long',
      );
    });

    it('unknown permission area', async () => {
      expectValidation(
        await updateKey(user.headers, id, { permissions: { calls: 'read', everything: 'read_write' } }),
        ['body', 'permissions', 'everything'],
        'extra_forbidden',
      );
    });

    it('unknown permission level', async () => {
      expectValidation(await updateKey(user.headers, id, { permissions: { calls: 'write' } }), [
        'body',
        'permissions',
        'calls',
      ]);
    });

    it.each([0, -5, 2.5, 'ten', false])('rate_limit %j', async (rate_limit) => {
      expectValidation(await updateKey(user.headers, id, { rate_limit }), ['body', 'rate_limit']);
    });

    it('is_active that is not a boolean', async () => {
      expectValidation(await updateKey(user.headers, id, { is_active: 'maybe' }), ['body', 'is_active']);
    });

    it('key_id that is not a positive integer', async () => {
      for (const bad of ['abc', '1.5', '0', '-1', '99999999999']) {
        expectValidation(await updateKey(user.headers, bad, { name: 'x' }), ['path', 'key_id']);
      }
    });

    it('left the key as it was', async () => {
      expect(before).toBeDefined();
      expect(await keyIn(user, id)).toEqual(before);
    });
  });
});

describe('DELETE /api/v1/users/me/api-keys/{key_id}', () => {
  it('deletes: 204, gone from the list, then 404', async () => {
    const user = await f.user();
    const keep = (await createKey(user.headers, { name: 'keep' })).json().api_key.id as number;
    const gone = (await createKey(user.headers, { name: 'gone' })).json().api_key.id as number;

    const response = await deleteKey(user.headers, gone);
    expect(response.statusCode).toBe(204);
    expect(response.body).toBe('');

    const listed = (await listKeys(user.headers)).json() as Array<{ id: number }>;
    expect(listed.map((k) => k.id)).toEqual([keep]);

    const again = await deleteKey(user.headers, gone);
    expect(again.statusCode).toBe(404);
    expect(typeof again.json().detail).toBe('string');
    const update = await updateKey(user.headers, gone, { name: 'back' });
    expect(update.statusCode).toBe(404);
  });

  it('answers 404 for an id that never existed', async () => {
    const user = await f.user();
    expect((await deleteKey(user.headers, 2_000_000_000)).statusCode).toBe(404);
    expect((await updateKey(user.headers, 2_000_000_000, { name: 'x' })).statusCode).toBe(404);
  });

  it('refuses a key_id that is not a positive integer with 422', async () => {
    const user = await f.user();
    for (const bad of ['abc', '1.5', '0', '-1', '99999999999']) {
      expectValidation(await deleteKey(user.headers, bad), ['path', 'key_id']);
    }
  });
});

describe('who may manage keys', () => {
  it('refuses every route without credentials (401) or with a bad token', async () => {
    const requests = [
      { method: 'GET', url: KEYS },
      { method: 'POST', url: KEYS, payload: { name: 'x' } },
      { method: 'PUT', url: `${KEYS}/1`, payload: { name: 'x' } },
      { method: 'DELETE', url: `${KEYS}/1` },
    ] as const;
    for (const request of requests) {
      for (const headers of [
        {},
        { authorization: 'Bearer not-a-jwt' },
        { authorization: 'Bearer sk_0000000000000000000000000000000000000000' },
        { authorization: 'Basic dXNlcjpwdw==' },
      ]) {
        const response = await t.app.inject({ ...request, headers });
        expect(response.statusCode, `${request.method} ${JSON.stringify(headers)}`).toBe(401);
        expect(typeof response.json().detail).toBe('string');
      }
    }
  });

  it('refuses create, update and delete to an unverified user (403)', async () => {
    const verified = await f.user();
    const someKey = (await createKey(verified.headers, { name: 'theirs' })).json().api_key.id as number;
    const user = await f.user({ verified: false });

    const create = await createKey(user.headers, { name: 'mine' });
    expect(create.statusCode).toBe(403);
    expect(create.json().detail).toMatch(/verif/i);
    for (const id of [someKey, 1]) {
      const update = await updateKey(user.headers, id, { name: 'x' });
      expect(update.statusCode).toBe(403);
      expect(update.json().detail).toMatch(/verif/i);
      const remove = await deleteKey(user.headers, id);
      expect(remove.statusCode).toBe(403);
    }
    expect((await listKeys(user.headers)).json()).toEqual([]);
    expect((await keyIn(verified, someKey))?.name).toBe('theirs');
  });

  it('refuses all four routes to an API key (403), even on the key itself', async () => {
    const user = await f.user();
    const created = (
      await createKey(user.headers, { name: 'narrow', permissions: { calls: 'read' }, rate_limit: 100 })
    ).json();
    const id: number = created.api_key.id;
    const asKey = { authorization: `Bearer ${created.key}` };

    const list = await listKeys(asKey);
    expect(list.statusCode).toBe(403);
    expect(list.body).not.toContain(created.key);
    const mint = await createKey(asKey, {
      name: 'broader',
      permissions: { organization: 'read_write', calls: 'read_write' },
    });
    expect(mint.statusCode).toBe(403);
    expect(mint.json().detail).toMatch(/API key/);
    const widen = await updateKey(asKey, id, { permissions: { calls: 'read_write' }, rate_limit: null });
    expect(widen.statusCode).toBe(403);
    const remove = await deleteKey(asKey, id);
    expect(remove.statusCode).toBe(403);

    const listed = (await listKeys(user.headers)).json() as Array<Record<string, unknown>>;
    expect(listed).toHaveLength(1);
    expect(listed[0]).toMatchObject({ id, permissions: { calls: 'read' }, rate_limit: 100, is_active: true });
  });

  it('a session cookie may manage keys, with the X-CSRF-Token header', async () => {
    const user = await f.user();
    const id = (await createKey(user.headers, { name: 'cookie' })).json().api_key.id as number;
    const cookies = { sb_session: user.sessionCookie };

    const noCsrf = await t.app.inject({
      method: 'PUT',
      url: `${KEYS}/${id}`,
      cookies,
      payload: { name: 'y' },
    });
    expect(noCsrf.statusCode).toBe(403);
    const noCsrfDelete = await t.app.inject({ method: 'DELETE', url: `${KEYS}/${id}`, cookies });
    expect(noCsrfDelete.statusCode).toBe(403);
    expect((await keyIn(user, id))?.name).toBe('cookie');

    const list = await t.app.inject({ method: 'GET', url: KEYS, cookies });
    expect(list.statusCode).toBe(200);
    expect((list.json() as Array<{ id: number }>).map((k) => k.id)).toEqual([id]);

    const headers = { 'x-csrf-token': user.csrfToken };
    const update = await t.app.inject({
      method: 'PUT',
      url: `${KEYS}/${id}`,
      cookies,
      headers,
      payload: { name: 'y' },
    });
    expect(update.statusCode).toBe(200);
    expect(update.json().name).toBe('y');
    const remove = await t.app.inject({ method: 'DELETE', url: `${KEYS}/${id}`, cookies, headers });
    expect(remove.statusCode).toBe(204);
    expect(await keyIn(user, id)).toBeUndefined();
  });

  it("another member's key in the same organization: not listed, 404 on PUT and DELETE", async () => {
    const admin = await f.user();
    const member = await f.member(admin.organizationId, 'user');
    const theirs = (
      await createKey(member.headers, { name: 'member key', permissions: { calls: 'read' } })
    ).json();
    const id: number = theirs.api_key.id;
    const mine = (await createKey(admin.headers, { name: 'admin key' })).json().api_key.id as number;

    const listed = (await listKeys(admin.headers)).json() as Array<{ id: number }>;
    expect(listed.map((k) => k.id)).toEqual([mine]);
    expect(JSON.stringify(listed)).not.toContain('member key');

    // Even the organization's admin cannot manage someone else's key.
    const update = await updateKey(admin.headers, id, { is_active: false, name: 'hijacked' });
    expect(update.statusCode).toBe(404);
    expect(update.body).not.toContain('member key');
    const remove = await deleteKey(admin.headers, id);
    expect(remove.statusCode).toBe(404);

    expect(await keyIn(member, id)).toMatchObject({ name: 'member key', is_active: true });
    const use = await t.app.inject({
      method: 'GET',
      url: '/api/v1/users/me',
      headers: { authorization: `Bearer ${theirs.key}` },
    });
    expect(use.statusCode).toBe(200);
    expect(use.json().id).toBe(member.id);
  });

  it("another organization's key: not listed, 404 on PUT and DELETE", async () => {
    const mine = await f.user();
    const other = await f.user();
    const otherKey = (await createKey(other.headers, { name: 'other org key' })).json().api_key.id as number;

    expect((await listKeys(mine.headers)).json()).toEqual([]);
    expect((await updateKey(mine.headers, otherKey, { name: 'x' })).statusCode).toBe(404);
    expect((await deleteKey(mine.headers, otherKey)).statusCode).toBe(404);
    expect((await keyIn(other, otherKey))?.name).toBe('other org key');
  });

  it("the caller's own key made in another of their organizations: not listed there, 404", async () => {
    const user = await f.user(); // admin of organization A
    const ownerOfB = await f.user();
    await insertMembership(t.database.db, user.id, ownerOfB.organizationId, 'admin');
    const inA = user;
    const inB = await f.login(user, ownerOfB.organizationId);
    expect(inB.organizationId).toBe(ownerOfB.organizationId);

    const keyA = (await createKey(inA.headers, { name: 'made in A' })).json().api_key;
    expect(keyA.organization_id).toBe(user.organizationId);
    const keyB = (await createKey(inB.headers, { name: 'made in B' })).json().api_key;
    expect(keyB.organization_id).toBe(ownerOfB.organizationId);

    expect(((await listKeys(inA.headers)).json() as Array<{ id: number }>).map((k) => k.id)).toEqual([
      keyA.id,
    ]);
    expect(((await listKeys(inB.headers)).json() as Array<{ id: number }>).map((k) => k.id)).toEqual([
      keyB.id,
    ]);

    expect((await updateKey(inB.headers, keyA.id, { name: 'x' })).statusCode).toBe(404);
    expect((await deleteKey(inB.headers, keyA.id)).statusCode).toBe(404);
    expect((await keyIn(inA, keyA.id))?.name).toBe('made in A');
  });
});
