/**
 * Fallback keys per provider: GET/POST /api/v1/organization/fallback-keys/{provider} and
 * PUT/DELETE …/{provider}/{key_id}. Metadata only (a masked key_hint, never the key), names unique
 * per provider, the key replaced only by a non-empty value, provider ids checked, and who may (not)
 * touch which key. The tests share one platform; each creates the users it needs.
 */
import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fallbackKeys } from '../src/db/schema/index.js';
import { expectValidation } from './support/assertions.js';
import { Factories, type TestUser } from './support/factories.js';
import { startTestPlatform, type TestPlatform } from './support/harness.js';
import { masked } from './support/secrets.js';

const BASE = '/api/v1/organization/fallback-keys';
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;
const FIELDS = [
  'concurrent_limit',
  'created_at',
  'enabled',
  'id',
  'key_hint',
  'name',
  'provider',
  'updated_at',
].sort();
const PROVIDERS = ['llm_a', 'llm_b', 'llm_c', 'llm_d', 'llm_e', 'stt_a', 'tts_a', 'tts_b', 'tts_c', 'tts_d'];

let t: TestPlatform;
let f: Factories;
beforeAll(async () => {
  t = await startTestPlatform();
  f = new Factories(t);
});
afterAll(() => t.close());

type Headers = Record<string, string>;
type FallbackKey = {
  id: number;
  provider: string;
  name: string;
  key_hint: string;
  enabled: boolean;
  concurrent_limit: number | null;
  created_at: string;
  updated_at: string;
};

function list(headers: Headers, provider: string) {
  return t.app.inject({ method: 'GET', url: `${BASE}/${provider}`, headers });
}
function create(headers: Headers, provider: string, payload: unknown) {
  return t.app.inject({ method: 'POST', url: `${BASE}/${provider}`, headers, payload: payload as object });
}
function update(headers: Headers, provider: string, id: number | string, payload: unknown) {
  return t.app.inject({
    method: 'PUT',
    url: `${BASE}/${provider}/${id}`,
    headers,
    payload: payload as object,
  });
}
function remove(headers: Headers, provider: string, id: number | string) {
  return t.app.inject({ method: 'DELETE', url: `${BASE}/${provider}/${id}`, headers });
}

let serial = 0;
/** A fresh, long secret whose last 4 characters are unique in this file. */
function secret(label = 'key'): string {
  serial += 1;
  return `fk-${label}-${Math.random().toString(36).slice(2, 10)}-${String(1000 + serial)}`;
}

async function createKey(
  user: TestUser,
  provider = 'llm_a',
  payload: Record<string, unknown> = {},
): Promise<FallbackKey & { secret: string }> {
  serial += 1;
  const key = (payload.api_key as string | undefined) ?? secret(provider);
  const response = await create(user.headers, provider, {
    name: `spare ${serial}`,
    api_key: key,
    ...payload,
  });
  expect(response.statusCode, response.body).toBe(201);
  return { ...response.json(), secret: key };
}

async function keyIn(user: TestUser, provider: string, id: number): Promise<FallbackKey | undefined> {
  const response = await list(user.headers, provider);
  expect(response.statusCode, response.body).toBe(200);
  return (response.json() as FallbackKey[]).find((k) => k.id === id);
}

/** The key as stored (sealed), opened with the platform's secret box. */
async function storedKey(id: number): Promise<string | undefined> {
  const [row] = await t.database.db.select().from(fallbackKeys).where(eq(fallbackKeys.id, id));
  return row ? t.platform.secrets.open(row.apiKeySealed) : undefined;
}

describe('POST /api/v1/organization/fallback-keys/{provider}', () => {
  it('adds a key: 201 with metadata and a masked hint, never the key', async () => {
    const user = await f.user();
    const key = secret('create');
    const response = await create(user.headers, 'llm_a', {
      name: 'spare one',
      api_key: key,
      enabled: false,
      concurrent_limit: 20,
    });
    expect(response.statusCode, response.body).toBe(201);
    const body = response.json();
    expect(Object.keys(body).sort()).toEqual(FIELDS);
    expect(body).toMatchObject({
      provider: 'llm_a',
      name: 'spare one',
      key_hint: masked(key),
      enabled: false,
      concurrent_limit: 20,
    });
    expect(Number.isInteger(body.id)).toBe(true);
    expect(body.created_at).toMatch(ISO);
    expect(body.updated_at).toMatch(ISO);
    expect(response.body).not.toContain(key);
    expect(response.body).not.toContain(key.slice(0, -4));
    expect(await storedKey(body.id)).toBe(key);
  });

  it('defaults enabled to true and concurrent_limit to null', async () => {
    const user = await f.user();
    const response = await create(user.headers, 'tts_b', { name: 'defaults', api_key: secret() });
    expect(response.statusCode, response.body).toBe(201);
    expect(response.json()).toMatchObject({ enabled: true, concurrent_limit: null, provider: 'tts_b' });
  });

  it('accepts an explicit null concurrent_limit and a limit of 1', async () => {
    const user = await f.user();
    const none = await createKey(user, 'llm_a', { concurrent_limit: null });
    expect(none.concurrent_limit).toBeNull();
    const one = await createKey(user, 'llm_a', { concurrent_limit: 1 });
    expect(one.concurrent_limit).toBe(1);
  });

  it('accepts every keyed provider id', async () => {
    const user = await f.user();
    for (const provider of PROVIDERS) {
      const created = await createKey(user, provider, { name: 'same name everywhere' });
      expect(created.provider).toBe(provider);
      expect((await list(user.headers, provider)).json()).toHaveLength(1);
    }
  });

  it('stores the key sealed, not in clear', async () => {
    const user = await f.user();
    const created = await createKey(user, 'stt_a');
    const [row] = await t.database.db.select().from(fallbackKeys).where(eq(fallbackKeys.id, created.id));
    expect(row?.organizationId).toBe(user.organizationId);
    expect(row?.apiKeySealed).not.toContain(created.secret);
    expect(t.platform.secrets.open(row?.apiKeySealed as string)).toBe(created.secret);
  });

  it('refuses a name the provider already has (409); the same name is free for another provider or organization', async () => {
    const a = await f.user();
    const b = await f.user();
    const first = await createKey(a, 'llm_a', { name: 'primary spare' });
    const again = await create(a.headers, 'llm_a', { name: 'primary spare', api_key: secret() });
    expect(again.statusCode, again.body).toBe(409);
    expect(typeof again.json().detail).toBe('string');
    const listed = (await list(a.headers, 'llm_a')).json() as FallbackKey[];
    expect(listed.map((k) => k.id)).toEqual([first.id]);
    expect(await storedKey(first.id)).toBe(first.secret);

    const otherProvider = await create(a.headers, 'llm_b', { name: 'primary spare', api_key: secret() });
    expect(otherProvider.statusCode, otherProvider.body).toBe(201);
    const otherOrganization = await create(b.headers, 'llm_a', { name: 'primary spare', api_key: secret() });
    expect(otherOrganization.statusCode, otherOrganization.body).toBe(201);
  });

  it('lets only an admin add keys: a member who is not admin gets 403 and nothing is added', async () => {
    const admin = await f.user();
    const member = await f.member(admin.organizationId, 'user');
    const refused = await create(member.headers, 'llm_c', { name: 'by a member', api_key: secret() });
    expect(refused.statusCode, refused.body).toBe(403);
    expect((await list(admin.headers, 'llm_c')).json()).toEqual([]);
    const secondAdmin = await f.member(admin.organizationId, 'admin');
    const created = await createKey(secondAdmin, 'llm_c');
    expect(await keyIn(admin, 'llm_c', created.id)).toBeDefined();
  });

  describe('bad input answers 422 with the validation list', () => {
    let user: TestUser;
    const valid = () => ({ name: 'x', api_key: secret('bad') });
    beforeAll(async () => {
      user = await f.user();
    });

    it.each(['name', 'api_key'])('missing %s', async (field) => {
      const payload: Record<string, unknown> = valid();
      delete payload[field];
      expectValidation(await create(user.headers, 'llm_a', payload), ['body', field], 'missing');
    });

    it('empty name or api_key', async () => {
      expectValidation(await create(user.headers, 'llm_a', { ...valid(), name: '' }), ['body', 'name']);
      expectValidation(await create(user.headers, 'llm_a', { ...valid(), api_key: '' }), ['body', 'api_key']);
    });

    it('a name over 100 characters', async () => {
      expectValidation(
        await create(user.headers, 'llm_a', { ...valid(), name: 'n'.repeat(101) }),
        ['body', 'name'],
        'string_too_long',
      );
    });

    it('an api_key or name that is not a string', async () => {
      expectValidation(await create(user.headers, 'llm_a', { ...valid(), api_key: 12345678 }), [
        'body',
        'api_key',
      ]);
      expectValidation(await create(user.headers, 'llm_a', { ...valid(), api_key: null }), [
        'body',
        'api_key',
      ]);
      expectValidation(await create(user.headers, 'llm_a', { ...valid(), name: 7 }), ['body', 'name']);
    });

    it.each([0, -1, 1.5, '5', true])('concurrent_limit %j', async (concurrent_limit) => {
      expectValidation(await create(user.headers, 'llm_a', { ...valid(), concurrent_limit }), [
        'body',
        'concurrent_limit',
      ]);
    });

    it.each(['yes', 1, null])('enabled %j', async (enabled) => {
      expectValidation(await create(user.headers, 'llm_a', { ...valid(), enabled }), ['body', 'enabled']);
    });

    it('a body that is not JSON', async () => {
      const response = await t.app.inject({
        method: 'POST',
        url: `${BASE}/llm_a`,
        headers: { ...user.headers, 'content-type': 'application/json' },
        payload: '{"name": ',
      });
      expectValidation(response, ['body'], 'json_invalid');
    });

    it('created no key while refusing', async () => {
      const response = await list(user.headers, 'llm_a');
      expect(response.statusCode).toBe(200);
      expect(response.json()).toEqual([]);
    });
  });
});

describe('GET /api/v1/organization/fallback-keys/{provider}', () => {
  it("lists the provider's keys in creation order: metadata only", async () => {
    const admin = await f.user();
    const member = await f.member(admin.organizationId, 'user');
    const secondAdmin = await f.member(admin.organizationId, 'admin');
    const first = await createKey(admin, 'llm_d', { name: 'first', concurrent_limit: 3 });
    const second = await createKey(secondAdmin, 'llm_d', { name: 'second', enabled: false });
    const elsewhere = await createKey(admin, 'llm_e', { name: 'first' });

    for (const viewer of [admin, member]) {
      const response = await list(viewer.headers, 'llm_d');
      expect(response.statusCode).toBe(200);
      const keys = response.json() as FallbackKey[];
      expect(keys.map((k) => k.id)).toEqual([first.id, second.id]);
      const { secret: s1, ...firstMeta } = first;
      const { secret: s2, ...secondMeta } = second;
      expect(keys).toEqual([firstMeta, secondMeta]);
      for (const key of keys) {
        expect(Object.keys(key).sort()).toEqual(FIELDS);
        expect(key).not.toHaveProperty('api_key');
      }
      for (const s of [s1, s2, elsewhere.secret]) {
        expect(response.body).not.toContain(s);
        expect(response.body).not.toContain(s.slice(0, -4));
      }
      expect(response.body).not.toContain(masked(elsewhere.secret));
    }
  });

  it('is an empty list for a provider without keys', async () => {
    const user = await f.user();
    await createKey(user, 'llm_a');
    for (const provider of ['llm_b', 'stt_a', 'tts_d']) {
      const response = await list(user.headers, provider);
      expect(response.statusCode).toBe(200);
      expect(response.json()).toEqual([]);
    }
  });
});

describe('PUT /api/v1/organization/fallback-keys/{provider}/{key_id}', () => {
  it('changes the fields it names and keeps the others', async () => {
    const user = await f.user();
    const key = await createKey(user, 'tts_a', { name: 'before', concurrent_limit: 5 });
    const response = await update(user.headers, 'tts_a', key.id, { name: 'after' });
    expect(response.statusCode, response.body).toBe(200);
    expect(response.json()).toMatchObject({
      id: key.id,
      provider: 'tts_a',
      name: 'after',
      key_hint: key.key_hint,
      enabled: true,
      concurrent_limit: 5,
      created_at: key.created_at,
    });
    expect(Date.parse(response.json().updated_at)).toBeGreaterThanOrEqual(Date.parse(key.updated_at));

    const disabled = await update(user.headers, 'tts_a', key.id, { enabled: false, concurrent_limit: null });
    expect(disabled.statusCode, disabled.body).toBe(200);
    expect(disabled.json()).toMatchObject({ name: 'after', enabled: false, concurrent_limit: null });

    const limited = await update(user.headers, 'tts_a', key.id, { concurrent_limit: 9, enabled: true });
    expect(limited.json()).toMatchObject({ enabled: true, concurrent_limit: 9 });
    const { secret: _s, ...meta } = { ...key, ...limited.json() };
    expect(await keyIn(user, 'tts_a', key.id)).toEqual(meta);
    expect(await storedKey(key.id)).toBe(key.secret);
  });

  describe('api_key changes only when a non-empty value is sent', () => {
    let user: TestUser;
    beforeAll(async () => {
      user = await f.user();
    });

    it('a new value replaces the key (the hint follows)', async () => {
      const key = await createKey(user);
      const next = secret('next');
      const response = await update(user.headers, 'llm_a', key.id, { api_key: next });
      expect(response.statusCode, response.body).toBe(200);
      expect(response.json().key_hint).toBe(masked(next));
      expect(response.json().key_hint).not.toBe(key.key_hint);
      expect(response.body).not.toContain(next);
      expect((await keyIn(user, 'llm_a', key.id))?.key_hint).toBe(masked(next));
      expect(await storedKey(key.id)).toBe(next);
    });

    it("'' keeps the key", async () => {
      const key = await createKey(user);
      const response = await update(user.headers, 'llm_a', key.id, {
        api_key: '',
        name: `renamed ${key.id}`,
      });
      expect(response.statusCode, response.body).toBe(200);
      expect(response.json()).toMatchObject({ key_hint: key.key_hint, name: `renamed ${key.id}` });
      expect((await keyIn(user, 'llm_a', key.id))?.key_hint).toBe(key.key_hint);
      expect(await storedKey(key.id)).toBe(key.secret);
    });

    it('omitting it keeps the key', async () => {
      const key = await createKey(user);
      const response = await update(user.headers, 'llm_a', key.id, { enabled: false });
      expect(response.statusCode, response.body).toBe(200);
      expect(response.json().key_hint).toBe(key.key_hint);
      expect(await storedKey(key.id)).toBe(key.secret);
    });

    it('sending back the key_hint as listed keeps the key', async () => {
      const key = await createKey(user);
      const listed = await keyIn(user, 'llm_a', key.id);
      const response = await update(user.headers, 'llm_a', key.id, { api_key: listed?.key_hint });
      expect(response.statusCode, response.body).toBe(200);
      expect(response.json().key_hint).toBe(key.key_hint);
      expect(await storedKey(key.id)).toBe(key.secret);
    });

    it('a new value with the same last four characters still replaces the key', async () => {
      const key = await createKey(user, 'llm_a', { api_key: 'fk-first-secret-value-4242' });
      const response = await update(user.headers, 'llm_a', key.id, {
        api_key: 'fk-second-secret-value-4242',
      });
      expect(response.json().key_hint).toBe('****4242');
      expect(await storedKey(key.id)).toBe('fk-second-secret-value-4242');
    });
  });

  it('refuses a name another key of the provider has (409) and changes nothing', async () => {
    const user = await f.user();
    await createKey(user, 'llm_b', { name: 'taken' });
    const other = await createKey(user, 'llm_b', { name: 'free' });
    const sameNameOtherProvider = await createKey(user, 'llm_c', { name: 'also free' });
    const response = await update(user.headers, 'llm_b', other.id, { name: 'taken', enabled: false });
    expect(response.statusCode, response.body).toBe(409);
    expect(typeof response.json().detail).toBe('string');
    expect(await keyIn(user, 'llm_b', other.id)).toMatchObject({ name: 'free', enabled: true });
    // A name used under another provider is no conflict.
    const renamed = await update(user.headers, 'llm_c', sameNameOtherProvider.id, { name: 'taken' });
    expect(renamed.statusCode, renamed.body).toBe(200);
  });

  it('answers 404 for an unknown key', async () => {
    const user = await f.user();
    const response = await update(user.headers, 'llm_a', 2_000_000_000, { name: 'x' });
    expect(response.statusCode, response.body).toBe(404);
    expect(typeof response.json().detail).toBe('string');
  });

  describe('bad input answers 422 and changes nothing', () => {
    let user: TestUser;
    let key: FallbackKey & { secret: string };
    beforeAll(async () => {
      user = await f.user();
      key = await createKey(user, 'llm_a', { name: 'stable', concurrent_limit: 4 });
    });

    it.each([0, -5, 2.5, 'ten'])('concurrent_limit %j', async (concurrent_limit) => {
      expectValidation(await update(user.headers, 'llm_a', key.id, { concurrent_limit }), [
        'body',
        'concurrent_limit',
      ]);
    });

    it('empty name, non-boolean enabled, non-string api_key', async () => {
      expectValidation(await update(user.headers, 'llm_a', key.id, { name: '' }), ['body', 'name']);
      expectValidation(await update(user.headers, 'llm_a', key.id, { enabled: 'no' }), ['body', 'enabled']);
      expectValidation(await update(user.headers, 'llm_a', key.id, { api_key: 42 }), ['body', 'api_key']);
    });

    it.each(['abc', '0', '-1', '99999999999'])('key_id %j', async (id) => {
      expectValidation(await update(user.headers, 'llm_a', id, { name: 'x' }), ['path', 'key_id']);
    });

    it('left the key as it was', async () => {
      const { secret: s, ...meta } = key;
      expect(await keyIn(user, 'llm_a', key.id)).toEqual(meta);
      expect(await storedKey(key.id)).toBe(s);
    });
  });
});

describe('DELETE /api/v1/organization/fallback-keys/{provider}/{key_id}', () => {
  it('deletes: 204 with no body, then it is gone', async () => {
    const user = await f.user();
    const keep = await createKey(user, 'stt_a', { name: 'keep' });
    const gone = await createKey(user, 'stt_a', { name: 'gone' });
    const response = await remove(user.headers, 'stt_a', gone.id);
    expect(response.statusCode, response.body).toBe(204);
    expect(response.body).toBe('');
    expect(((await list(user.headers, 'stt_a')).json() as FallbackKey[]).map((k) => k.id)).toEqual([keep.id]);
    expect(await storedKey(gone.id)).toBeUndefined();
    expect((await remove(user.headers, 'stt_a', gone.id)).statusCode).toBe(404);
    expect((await update(user.headers, 'stt_a', gone.id, { name: 'x' })).statusCode).toBe(404);
    // Its name is free again.
    expect((await create(user.headers, 'stt_a', { name: 'gone', api_key: secret() })).statusCode).toBe(201);
  });

  it('answers 422 for a malformed id', async () => {
    const user = await f.user();
    expectValidation(await remove(user.headers, 'llm_a', 'abc'), ['path', 'key_id']);
  });
});

describe('provider names', () => {
  let user: TestUser;
  let key: FallbackKey & { secret: string };
  beforeAll(async () => {
    user = await f.user();
    key = await createKey(user, 'llm_a', { name: 'under llm_a' });
  });

  it.each(['llm_z', 'carrier_a', 'sip_trunk', 'custom', 'LLM_A', 'stt_b', 'tts_e', 'openai'])(
    'an unknown provider %j answers 422 on every route',
    async (provider) => {
      for (const response of [
        await list(user.headers, provider),
        await create(user.headers, provider, { name: 'x', api_key: secret() }),
        await update(user.headers, provider, key.id, { name: 'x' }),
        await remove(user.headers, provider, key.id),
      ]) {
        expectValidation(response, ['path', 'provider']);
      }
      expect(await keyIn(user, 'llm_a', key.id)).toMatchObject({ name: 'under llm_a' });
    },
  );

  it('a key of llm_a is not reachable under another provider (404)', async () => {
    for (const provider of ['llm_b', 'tts_a']) {
      const listed = (await list(user.headers, provider)).json() as FallbackKey[];
      expect(listed.map((k) => k.id)).not.toContain(key.id);
      const put = await update(user.headers, provider, key.id, { name: 'moved', api_key: secret('moved') });
      expect(put.statusCode, put.body).toBe(404);
      const del = await remove(user.headers, provider, key.id);
      expect(del.statusCode, del.body).toBe(404);
    }
    expect(await keyIn(user, 'llm_a', key.id)).toMatchObject({ name: 'under llm_a', key_hint: key.key_hint });
    expect(await storedKey(key.id)).toBe(key.secret);
  });
});

describe('security', () => {
  let admin: TestUser;
  let outsider: TestUser;
  let key: FallbackKey & { secret: string };
  beforeAll(async () => {
    admin = await f.user();
    outsider = await f.user();
    key = await createKey(admin, 'llm_a', { name: 'guarded', concurrent_limit: 2 });
  });

  function everyRoute(id: number) {
    return [
      { method: 'GET', url: `${BASE}/llm_a` },
      { method: 'POST', url: `${BASE}/llm_a`, payload: { name: 'n', api_key: 'fk-intruder-key-0000' } },
      {
        method: 'PUT',
        url: `${BASE}/llm_a/${id}`,
        payload: { name: 'hijacked', api_key: 'fk-intruder-key-0000' },
      },
      { method: 'DELETE', url: `${BASE}/llm_a/${id}` },
    ] as const;
  }

  async function unchanged() {
    const { secret: s, ...meta } = key;
    expect(await keyIn(admin, 'llm_a', key.id)).toEqual(meta);
    expect(await storedKey(key.id)).toBe(s);
  }

  it('every route answers 401 without credentials or with bad ones', async () => {
    for (const route of everyRoute(key.id)) {
      for (const headers of [
        {},
        { authorization: 'Bearer not-a-token' },
        { authorization: 'Bearer sk_nope' },
      ]) {
        const response = await t.app.inject({ ...route, headers });
        expect(response.statusCode, `${route.method} ${route.url}`).toBe(401);
        expect(typeof response.json().detail).toBe('string');
      }
    }
    await unchanged();
  });

  it('an API key without the organization area answers 403 on every route', async () => {
    const apiKey = await f.apiKey(admin, { permissions: { assistants: 'read_write', sms: 'read_write' } });
    for (const route of everyRoute(key.id)) {
      const response = await t.app.inject({ ...route, headers: apiKey.headers });
      expect(response.statusCode, `${route.method} ${route.url}`).toBe(403);
      expect(response.json().detail).toMatch(/organization/);
      expect(response.body).not.toContain(key.key_hint);
    }
    await unchanged();
  });

  it('an API key with organization read may list but not write', async () => {
    const apiKey = await f.apiKey(admin, { permissions: { organization: 'read' } });
    const listed = await list(apiKey.headers, 'llm_a');
    expect(listed.statusCode).toBe(200);
    expect((listed.json() as FallbackKey[]).map((k) => k.id)).toEqual([key.id]);
    expect(listed.body).not.toContain(key.secret);
    for (const route of everyRoute(key.id).filter((r) => r.method !== 'GET')) {
      const response = await t.app.inject({ ...route, headers: apiKey.headers });
      expect(response.statusCode, `${route.method} ${route.url}`).toBe(403);
    }
    await unchanged();
  });

  it('an API key with organization read_write manages keys', async () => {
    const apiKey = await f.apiKey(admin, { permissions: { organization: 'read_write' } });
    const created = await create(apiKey.headers, 'llm_b', { name: 'via key', api_key: secret() });
    expect(created.statusCode, created.body).toBe(201);
    expect(await keyIn(admin, 'llm_b', created.json().id)).toBeDefined();
    expect((await update(apiKey.headers, 'llm_b', created.json().id, { enabled: false })).statusCode).toBe(
      200,
    );
    expect((await remove(apiKey.headers, 'llm_b', created.json().id)).statusCode).toBe(204);
  });

  it("another organization's key is not found: PUT and DELETE answer 404, GET does not list it", async () => {
    const listed = await list(outsider.headers, 'llm_a');
    expect(listed.statusCode).toBe(200);
    expect(listed.json()).toEqual([]);
    for (const response of [
      await update(outsider.headers, 'llm_a', key.id, { name: 'hijacked', api_key: 'fk-intruder-key-0000' }),
      await update(outsider.headers, 'llm_a', key.id, { enabled: false }),
      await remove(outsider.headers, 'llm_a', key.id),
    ]) {
      expect(response.statusCode, response.body).toBe(404);
      expect(response.body).not.toContain(key.key_hint);
    }
    const outsiderKey = await f.apiKey(outsider, { permissions: { organization: 'read_write' } });
    expect((await remove(outsiderKey.headers, 'llm_a', key.id)).statusCode).toBe(404);
    await unchanged();
  });

  it('the same name in the other organization stays separate', async () => {
    const theirs = await createKey(outsider, 'llm_a', { name: 'guarded' });
    expect(((await list(outsider.headers, 'llm_a')).json() as FallbackKey[]).map((k) => k.id)).toEqual([
      theirs.id,
    ]);
    expect(((await list(admin.headers, 'llm_a')).json() as FallbackKey[]).map((k) => k.id)).toEqual([key.id]);
    await unchanged();
  });

  it('a cookie session must echo X-CSRF-Token to write', async () => {
    const cookies = { sb_session: admin.sessionCookie };
    const payload = { name: 'cookie key', api_key: secret('cookie') };
    const refused = await t.app.inject({ method: 'POST', url: `${BASE}/tts_c`, cookies, payload });
    expect(refused.statusCode).toBe(403);
    expect((await list(admin.headers, 'tts_c')).json()).toEqual([]);
    const accepted = await t.app.inject({
      method: 'POST',
      url: `${BASE}/tts_c`,
      cookies,
      headers: { 'x-csrf-token': admin.csrfToken },
      payload,
    });
    expect(accepted.statusCode, accepted.body).toBe(201);
  });
});
