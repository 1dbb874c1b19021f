/**
 * LLM presets: GET/POST /api/v1/organization/llm-presets, PUT/DELETE …/{preset_id} and the
 * admin-only GET …/{preset_id}/apply. Happy paths, each validation rule, the api_key update rules
 * (new value replaces, null removes, empty or masked keeps), masking everywhere but apply, and who
 * may (not) touch which preset. The tests share one platform; each creates the users it needs.
 */
import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { llmPresets } from '../src/db/schema/index.js';
import { expectValidation } from './support/assertions.js';
import { Factories, type TestUser } from './support/factories.js';
import { startTestPlatform, type TestPlatform } from './support/harness.js';
import { masked, secret } from './support/secrets.js';

const PRESETS = '/api/v1/organization/llm-presets';
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;
const FIELDS = [
  'api_key',
  'base_url',
  'created_at',
  'id',
  'model',
  'name',
  'organization_id',
  'provider',
  'settings',
  'updated_at',
].sort();

let t: TestPlatform;
let f: Factories;
beforeAll(async () => {
  t = await startTestPlatform();
  f = new Factories(t);
});
afterAll(() => t.close());

type Headers = Record<string, string>;
type Preset = Record<string, unknown> & { id: number; api_key: string | null };

function list(headers: Headers) {
  return t.app.inject({ method: 'GET', url: PRESETS, headers });
}
function create(headers: Headers, payload: unknown) {
  return t.app.inject({ method: 'POST', url: PRESETS, headers, payload: payload as object });
}
function update(headers: Headers, id: number | string, payload: unknown) {
  return t.app.inject({ method: 'PUT', url: `${PRESETS}/${id}`, headers, payload: payload as object });
}
function remove(headers: Headers, id: number | string) {
  return t.app.inject({ method: 'DELETE', url: `${PRESETS}/${id}`, headers });
}
function apply(headers: Headers, id: number | string) {
  return t.app.inject({ method: 'GET', url: `${PRESETS}/${id}/apply`, headers });
}

let serial = 0;
async function createPreset(user: TestUser, payload: Record<string, unknown> = {}): Promise<Preset> {
  serial += 1;
  const response = await create(user.headers, {
    name: `preset ${serial}`,
    provider: 'llm_a',
    model: 'model-large',
    ...payload,
  });
  expect(response.statusCode, response.body).toBe(201);
  return response.json();
}

async function presetIn(user: TestUser, id: number): Promise<Preset | undefined> {
  const response = await list(user.headers);
  expect(response.statusCode, response.body).toBe(200);
  return (response.json() as Preset[]).find((p) => p.id === id);
}

async function applied(user: TestUser, id: number): Promise<Preset> {
  const response = await apply(user.headers, id);
  expect(response.statusCode, response.body).toBe(200);
  return response.json();
}

describe('POST /api/v1/organization/llm-presets', () => {
  it('creates a preset: 201 with every field, the key masked', async () => {
    const user = await f.user();
    const key = secret('create');
    const response = await create(user.headers, {
      name: 'Fast answers',
      provider: 'llm_b',
      model: 'model-mini',
      api_key: key,
      base_url: 'https://llm.example.test/v1',
      settings: { temperature: 0.4, max_tokens: 512, top_p: 1, stop: ['###'], vendor_flag: true },
    });
    expect(response.statusCode, response.body).toBe(201);
    const body = response.json();
    expect(Object.keys(body).sort()).toEqual(FIELDS);
    expect(body).toMatchObject({
      organization_id: user.organizationId,
      name: 'Fast answers',
      provider: 'llm_b',
      model: 'model-mini',
      api_key: masked(key),
      base_url: 'https://llm.example.test/v1',
      // Known parameters are range-checked, unknown ones are kept as given.
      settings: { temperature: 0.4, max_tokens: 512, top_p: 1, stop: ['###'], vendor_flag: true },
    });
    expect(Number.isInteger(body.id)).toBe(true);
    expect(body.created_at).toMatch(ISO);
    expect(body.updated_at).toMatch(ISO);
    expect(response.body).not.toContain(key);
    expect(response.body).not.toContain(key.slice(0, -4));
  });

  it('takes only the required fields: no key, no base_url, empty settings', async () => {
    const user = await f.user();
    const response = await create(user.headers, { name: 'bare', provider: 'llm_e', model: 'm' });
    expect(response.statusCode, response.body).toBe(201);
    expect(response.json()).toMatchObject({ api_key: null, base_url: null, settings: {} });
    expect((await applied(user, response.json().id)).api_key).toBeNull();
  });

  it('accepts an explicit null api_key and base_url', async () => {
    const user = await f.user();
    const response = await create(user.headers, {
      name: 'nulls',
      provider: 'llm_c',
      model: 'm',
      api_key: null,
      base_url: null,
    });
    expect(response.statusCode, response.body).toBe(201);
    expect(response.json()).toMatchObject({ api_key: null, base_url: null });
  });

  it('accepts every provider id, and custom with a base_url', async () => {
    const user = await f.user();
    for (const provider of ['llm_a', 'llm_b', 'llm_c', 'llm_d', 'llm_e']) {
      const preset = await createPreset(user, { name: `p-${provider}`, provider });
      expect(preset.provider).toBe(provider);
    }
    const custom = await createPreset(user, {
      name: 'self hosted',
      provider: 'custom',
      base_url: 'http://10.0.0.5:8080/v1',
    });
    expect(custom).toMatchObject({ provider: 'custom', base_url: 'http://10.0.0.5:8080/v1' });
  });

  it('stores the key sealed, not in clear', async () => {
    const user = await f.user();
    const key = secret('sealed');
    const preset = await createPreset(user, { api_key: key });
    const [row] = await t.database.db.select().from(llmPresets).where(eq(llmPresets.id, preset.id));
    expect(row?.apiKeySealed).toBeTruthy();
    expect(row?.apiKeySealed).not.toContain(key);
    expect(t.platform.secrets.open(row?.apiKeySealed as string)).toBe(key);
  });

  it('masks a short key without showing any of it', async () => {
    const user = await f.user();
    const preset = await createPreset(user, { api_key: 'abc12345' });
    expect(preset.api_key).toMatch(/^\*{4}/);
    expect(preset.api_key).not.toContain('2345');
    expect((await applied(user, preset.id)).api_key).toBe('abc12345');
  });

  it('refuses a name already used in the organization (409) and keeps the first preset', async () => {
    const user = await f.user();
    const first = await createPreset(user, { name: 'Support bot', model: 'first-model' });
    const again = await create(user.headers, { name: 'Support bot', provider: 'llm_b', model: 'other' });
    expect(again.statusCode, again.body).toBe(409);
    expect(typeof again.json().detail).toBe('string');
    const presets = (await list(user.headers)).json() as Preset[];
    expect(presets.filter((p) => p.name === 'Support bot')).toHaveLength(1);
    expect(presets.find((p) => p.name === 'Support bot')?.id).toBe(first.id);
    expect(presets.find((p) => p.name === 'Support bot')?.model).toBe('first-model');
  });

  it('allows the same name in another organization, and again after a delete', async () => {
    const a = await f.user();
    const b = await f.user();
    const inA = await createPreset(a, { name: 'Shared name' });
    const inB = await createPreset(b, { name: 'Shared name' });
    expect(inB.organization_id).toBe(b.organizationId);
    expect(inA.id).not.toBe(inB.id);

    expect((await remove(a.headers, inA.id)).statusCode).toBe(204);
    const reused = await create(a.headers, { name: 'Shared name', provider: 'llm_a', model: 'm' });
    expect(reused.statusCode, reused.body).toBe(201);
  });

  it('lets only an admin create presets: a member who is not admin gets 403 and nothing is created', async () => {
    const admin = await f.user();
    const member = await f.member(admin.organizationId, 'user');
    const refused = await create(member.headers, { name: 'by a member', provider: 'llm_a', model: 'm' });
    expect(refused.statusCode, refused.body).toBe(403);
    expect((await list(admin.headers)).json()).toEqual([]);
    const secondAdmin = await f.member(admin.organizationId, 'admin');
    const preset = await createPreset(secondAdmin, { name: 'by an admin' });
    expect(preset.organization_id).toBe(admin.organizationId);
    expect(await presetIn(admin, preset.id)).toBeDefined();
  });

  describe('bad input answers 422 with the validation list', () => {
    let user: TestUser;
    const valid = { name: 'x', provider: 'llm_a', model: 'm' };
    beforeAll(async () => {
      user = await f.user();
    });

    it.each(['llm_z', 'LLM_A', 'openai', '', 'tts_a', 'carrier_a'])('provider %j', async (provider) => {
      expectValidation(await create(user.headers, { ...valid, provider }), ['body', 'provider']);
    });

    it('a provider that is not a string', async () => {
      expectValidation(await create(user.headers, { ...valid, provider: 1 }), ['body', 'provider']);
    });

    it('custom without base_url names body.base_url', async () => {
      for (const payload of [
        { ...valid, provider: 'custom' },
        { ...valid, provider: 'custom', base_url: null },
      ]) {
        const response = await create(user.headers, payload);
        expectValidation(response, ['body', 'base_url']);
        expect(response.json().detail).toHaveLength(1);
      }
    });

    it.each([
      'ftp://files.example.test/x',
      'file:///etc/passwd',
      'javascript:alert(1)',
      'llm.example.test/v1',
      'not a url',
      '',
    ])('base_url %j', async (base_url) => {
      expectValidation(await create(user.headers, { ...valid, base_url }), ['body', 'base_url']);
    });

    it('base_url over 2048 characters', async () => {
      const base_url = `https://example.test/${'a'.repeat(2048)}`;
      expectValidation(await create(user.headers, { ...valid, base_url }), ['body', 'base_url']);
    });

    it.each([
      ['temperature', 3],
      ['temperature', -0.1],
      ['temperature', 'hot'],
      ['max_tokens', 0],
      ['max_tokens', 1.5],
      ['top_p', 1.5],
      ['frequency_penalty', 2.5],
      ['presence_penalty', -3],
    ])('settings.%s %j', async (field, value) => {
      expectValidation(await create(user.headers, { ...valid, settings: { [field]: value } }), [
        'body',
        'settings',
        field,
      ]);
    });

    it('settings that are not an object', async () => {
      for (const settings of ['hot', 5, ['temperature']]) {
        expectValidation(await create(user.headers, { ...valid, settings }), ['body', 'settings']);
      }
    });

    it.each(['name', 'provider', 'model'])('missing %s', async (field) => {
      const payload: Record<string, unknown> = { ...valid };
      delete payload[field];
      expectValidation(await create(user.headers, payload), ['body', field], 'missing');
    });

    it('empty or over-long name and model', async () => {
      expectValidation(
        await create(user.headers, { ...valid, name: '' }),
        ['body', 'name'],
        'string_too_short',
      );
      expectValidation(
        await create(user.headers, { ...valid, name: 'n'.repeat(101) }),
        ['body', 'name'],
        'string_too_long',
      );
      expectValidation(
        await create(user.headers, { ...valid, model: '' }),
        ['body', 'model'],
        'string_too_short',
      );
      expectValidation(
        await create(user.headers, { ...valid, model: 'm'.repeat(201) }),
        ['body', 'model'],
        'string_too_long',
      );
    });

    it('an empty api_key, or one that is not a string', async () => {
      expectValidation(await create(user.headers, { ...valid, api_key: '' }), ['body', 'api_key']);
      expectValidation(await create(user.headers, { ...valid, api_key: 1234 }), ['body', 'api_key']);
    });

    it('a body that is not JSON', async () => {
      const response = await t.app.inject({
        method: 'POST',
        url: PRESETS,
        headers: { ...user.headers, 'content-type': 'application/json' },
        payload: '{"name": ',
      });
      expectValidation(response, ['body'], 'json_invalid');
    });

    it('created no preset while refusing', async () => {
      const response = await list(user.headers);
      expect(response.statusCode).toBe(200);
      expect(response.json()).toEqual([]);
    });
  });
});

describe('GET /api/v1/organization/llm-presets', () => {
  it("lists the organization's presets in creation order, every key masked", async () => {
    const admin = await f.user();
    const member = await f.member(admin.organizationId, 'user');
    const secondAdmin = await f.member(admin.organizationId, 'admin');
    const keys = [secret('one'), secret('two')];
    const first = await createPreset(admin, { name: 'one', api_key: keys[0] });
    const second = await createPreset(secondAdmin, { name: 'two', api_key: keys[1], provider: 'llm_d' });
    const third = await createPreset(admin, { name: 'three' });

    for (const viewer of [admin, member]) {
      const response = await list(viewer.headers);
      expect(response.statusCode).toBe(200);
      const presets = response.json() as Preset[];
      expect(presets.map((p) => p.id)).toEqual([first.id, second.id, third.id]);
      expect(presets.map((p) => p.api_key)).toEqual([
        masked(keys[0] as string),
        masked(keys[1] as string),
        null,
      ]);
      expect(presets[1]).toEqual(second);
      for (const preset of presets) expect(Object.keys(preset).sort()).toEqual(FIELDS);
      for (const key of keys) {
        expect(response.body).not.toContain(key);
        expect(response.body).not.toContain(key.slice(0, -4));
      }
    }
  });

  it('is an empty list for a new organization', async () => {
    const user = await f.user();
    const response = await list(user.headers);
    expect(response.statusCode).toBe(200);
    expect(response.json()).toEqual([]);
  });
});

describe('PUT /api/v1/organization/llm-presets/{preset_id}', () => {
  it('changes only the fields it names', async () => {
    const user = await f.user();
    const key = secret('partial');
    const preset = await createPreset(user, {
      name: 'partial',
      provider: 'llm_a',
      model: 'model-one',
      api_key: key,
      base_url: 'https://one.example.test',
      settings: { temperature: 0.2 },
    });
    const response = await update(user.headers, preset.id, { model: 'model-two' });
    expect(response.statusCode, response.body).toBe(200);
    expect(response.json()).toMatchObject({
      id: preset.id,
      name: 'partial',
      provider: 'llm_a',
      model: 'model-two',
      api_key: masked(key),
      base_url: 'https://one.example.test',
      settings: { temperature: 0.2 },
      created_at: preset.created_at,
    });
    expect(Date.parse(response.json().updated_at)).toBeGreaterThanOrEqual(
      Date.parse(String(preset.updated_at)),
    );
    expect(await presetIn(user, preset.id)).toEqual(response.json());
    expect((await applied(user, preset.id)).api_key).toBe(key);
  });

  it('changes name, provider, base_url and settings together (settings are replaced)', async () => {
    const user = await f.user();
    const preset = await createPreset(user, { settings: { temperature: 0.2, top_p: 0.5 } });
    const response = await update(user.headers, preset.id, {
      name: 'renamed',
      provider: 'custom',
      base_url: 'https://custom.example.test/api',
      settings: { max_tokens: 100 },
    });
    expect(response.statusCode, response.body).toBe(200);
    expect(response.json()).toMatchObject({
      name: 'renamed',
      provider: 'custom',
      base_url: 'https://custom.example.test/api',
      settings: { max_tokens: 100 },
    });
    expect(response.json().settings).not.toHaveProperty('temperature');
  });

  it('an empty body changes nothing', async () => {
    const user = await f.user();
    const preset = await createPreset(user, { api_key: secret('empty-body') });
    const response = await update(user.headers, preset.id, {});
    expect(response.statusCode, response.body).toBe(200);
    const { updated_at: _u, ...rest } = preset;
    expect(response.json()).toMatchObject(rest);
  });

  describe('api_key', () => {
    let user: TestUser;
    beforeAll(async () => {
      user = await f.user();
    });

    it('a new value replaces the key', async () => {
      const oldKey = secret('old');
      const newKey = secret('new');
      const preset = await createPreset(user, { api_key: oldKey });
      const response = await update(user.headers, preset.id, { api_key: newKey });
      expect(response.statusCode, response.body).toBe(200);
      expect(response.json().api_key).toBe(masked(newKey));
      expect(response.body).not.toContain(newKey);
      expect((await presetIn(user, preset.id))?.api_key).toBe(masked(newKey));
      expect((await applied(user, preset.id)).api_key).toBe(newKey);
    });

    it('a new value with the same last four characters still replaces the key', async () => {
      const oldKey = `sk-first-secret-${'7777'}`;
      const newKey = `sk-second-secret-${'7777'}`;
      const preset = await createPreset(user, { api_key: oldKey });
      const response = await update(user.headers, preset.id, { api_key: newKey });
      expect(response.json().api_key).toBe('****7777');
      expect((await applied(user, preset.id)).api_key).toBe(newKey);
    });

    it('a key can be added to a preset that had none', async () => {
      const key = secret('added');
      const preset = await createPreset(user);
      expect(preset.api_key).toBeNull();
      const response = await update(user.headers, preset.id, { api_key: key });
      expect(response.json().api_key).toBe(masked(key));
      expect((await applied(user, preset.id)).api_key).toBe(key);
    });

    it('null removes the key', async () => {
      const preset = await createPreset(user, { api_key: secret('removed') });
      const response = await update(user.headers, preset.id, { api_key: null });
      expect(response.statusCode, response.body).toBe(200);
      expect(response.json().api_key).toBeNull();
      expect((await presetIn(user, preset.id))?.api_key).toBeNull();
      expect((await applied(user, preset.id)).api_key).toBeNull();
    });

    it("'' keeps the key", async () => {
      const key = secret('kept-empty');
      const preset = await createPreset(user, { api_key: key });
      const response = await update(user.headers, preset.id, { api_key: '', model: 'changed' });
      expect(response.statusCode, response.body).toBe(200);
      expect(response.json()).toMatchObject({ api_key: masked(key), model: 'changed' });
      expect((await applied(user, preset.id)).api_key).toBe(key);
    });

    it('the masked value (as listed) keeps the key', async () => {
      const key = secret('kept-masked');
      const preset = await createPreset(user, { api_key: key });
      const listed = await presetIn(user, preset.id);
      expect(listed?.api_key).toBe(masked(key));
      const response = await update(user.headers, preset.id, {
        api_key: listed?.api_key,
        model: 'round-trip',
      });
      expect(response.statusCode, response.body).toBe(200);
      expect(response.json()).toMatchObject({ api_key: masked(key), model: 'round-trip' });
      expect((await applied(user, preset.id)).api_key).toBe(key);
    });

    it('omitting it keeps the key', async () => {
      const key = secret('kept-omitted');
      const preset = await createPreset(user, { api_key: key });
      await update(user.headers, preset.id, { name: `renamed ${preset.id}` });
      expect((await applied(user, preset.id)).api_key).toBe(key);
    });
  });

  it('refuses a name another preset of the organization has (409) and changes nothing', async () => {
    const user = await f.user();
    await createPreset(user, { name: 'taken' });
    const other = await createPreset(user, { name: 'free', model: 'kept' });
    const response = await update(user.headers, other.id, { name: 'taken', model: 'changed' });
    expect(response.statusCode, response.body).toBe(409);
    expect(typeof response.json().detail).toBe('string');
    expect(await presetIn(user, other.id)).toMatchObject({ name: 'free', model: 'kept' });
  });

  it('keeping its own name is no conflict, and a name of another organization is free', async () => {
    const a = await f.user();
    const b = await f.user();
    await createPreset(b, { name: 'elsewhere' });
    const preset = await createPreset(a, { name: 'mine' });
    expect((await update(a.headers, preset.id, { name: 'mine' })).statusCode).toBe(200);
    const renamed = await update(a.headers, preset.id, { name: 'elsewhere' });
    expect(renamed.statusCode, renamed.body).toBe(200);
    expect(renamed.json().name).toBe('elsewhere');
  });

  it('answers 404 for an unknown preset', async () => {
    const user = await f.user();
    const response = await update(user.headers, 2_000_000_000, { model: 'x' });
    expect(response.statusCode, response.body).toBe(404);
    expect(typeof response.json().detail).toBe('string');
  });

  describe('bad input answers 422 and changes nothing', () => {
    let user: TestUser;
    let preset: Preset;
    beforeAll(async () => {
      user = await f.user();
      preset = await createPreset(user, { name: 'stable', provider: 'llm_a', settings: { temperature: 1 } });
    });

    it('a provider outside llm_a..llm_e and custom', async () => {
      expectValidation(await update(user.headers, preset.id, { provider: 'llm_f' }), ['body', 'provider']);
    });

    it('switching to custom while no base_url is stored names body.base_url', async () => {
      const response = await update(user.headers, preset.id, { provider: 'custom' });
      expectValidation(response, ['body', 'base_url']);
    });

    it('removing the base_url of a custom preset names body.base_url', async () => {
      const custom = await createPreset(user, {
        name: 'custom one',
        provider: 'custom',
        base_url: 'https://c.example.test',
      });
      expectValidation(await update(user.headers, custom.id, { base_url: null }), ['body', 'base_url']);
      expect((await presetIn(user, custom.id))?.base_url).toBe('https://c.example.test');
    });

    it('a base_url that is not http(s)', async () => {
      expectValidation(await update(user.headers, preset.id, { base_url: 'ws://x.example.test' }), [
        'body',
        'base_url',
      ]);
    });

    it('settings out of range', async () => {
      expectValidation(await update(user.headers, preset.id, { settings: { temperature: 3 } }), [
        'body',
        'settings',
        'temperature',
      ]);
    });

    it('empty name or model', async () => {
      expectValidation(await update(user.headers, preset.id, { name: '' }), ['body', 'name']);
      expectValidation(await update(user.headers, preset.id, { model: '' }), ['body', 'model']);
    });

    it('an api_key that is not a string or null', async () => {
      expectValidation(await update(user.headers, preset.id, { api_key: 42 }), ['body', 'api_key']);
    });

    it.each(['abc', '0', '-1', '1.5', '99999999999'])('preset_id %j', async (id) => {
      expectValidation(await update(user.headers, id, { model: 'x' }), ['path', 'preset_id']);
    });

    it('left the preset as it was', async () => {
      expect(await presetIn(user, preset.id)).toEqual(preset);
    });
  });
});

describe('DELETE /api/v1/organization/llm-presets/{preset_id}', () => {
  it('deletes: 204 with no body, then it is gone everywhere', async () => {
    const user = await f.user();
    const keep = await createPreset(user, { name: 'keep' });
    const gone = await createPreset(user, { name: 'gone' });
    const response = await remove(user.headers, gone.id);
    expect(response.statusCode, response.body).toBe(204);
    expect(response.body).toBe('');
    expect(((await list(user.headers)).json() as Preset[]).map((p) => p.id)).toEqual([keep.id]);
    expect((await remove(user.headers, gone.id)).statusCode).toBe(404);
    expect((await update(user.headers, gone.id, { model: 'x' })).statusCode).toBe(404);
    expect((await apply(user.headers, gone.id)).statusCode).toBe(404);
  });

  it('answers 422 for a malformed id', async () => {
    const user = await f.user();
    expectValidation(await remove(user.headers, 'abc'), ['path', 'preset_id']);
  });
});

describe('GET /api/v1/organization/llm-presets/{preset_id}/apply', () => {
  it('gives an admin the preset with its key in clear', async () => {
    const user = await f.user();
    const key = secret('apply');
    const preset = await createPreset(user, {
      name: 'to apply',
      provider: 'custom',
      model: 'my-model',
      api_key: key,
      base_url: 'https://apply.example.test',
      settings: { temperature: 1.5 },
    });
    const response = await apply(user.headers, preset.id);
    expect(response.statusCode, response.body).toBe(200);
    expect(response.json()).toEqual({ ...preset, api_key: key });
  });

  it('answers 404 for an unknown preset and 422 for a malformed id', async () => {
    const user = await f.user();
    expect((await apply(user.headers, 2_000_000_000)).statusCode).toBe(404);
    expectValidation(await apply(user.headers, 'x'), ['path', 'preset_id']);
  });
});

describe('security', () => {
  let admin: TestUser;
  let member: TestUser;
  let outsider: TestUser;
  let preset: Preset;
  const key = secret('guarded');
  beforeAll(async () => {
    admin = await f.user();
    member = await f.member(admin.organizationId, 'user');
    outsider = await f.user();
    preset = await createPreset(admin, { name: 'guarded', api_key: key });
  });

  function everyRoute(id: number) {
    return [
      { method: 'GET', url: PRESETS },
      { method: 'POST', url: PRESETS, payload: { name: 'n', provider: 'llm_a', model: 'm' } },
      { method: 'PUT', url: `${PRESETS}/${id}`, payload: { model: 'hijacked' } },
      { method: 'DELETE', url: `${PRESETS}/${id}` },
      { method: 'GET', url: `${PRESETS}/${id}/apply` },
    ] as const;
  }

  it('every route answers 401 without credentials or with bad ones', async () => {
    for (const route of everyRoute(preset.id)) {
      for (const headers of [
        {},
        { authorization: 'Bearer not-a-token' },
        { authorization: 'Bearer sk_nope' },
      ]) {
        const response = await t.app.inject({ ...route, headers });
        expect(response.statusCode, `${route.method} ${route.url}`).toBe(401);
        expect(typeof response.json().detail).toBe('string');
        expect(response.body).not.toContain(key);
      }
    }
    expect(await applied(admin, preset.id)).toMatchObject({ model: 'model-large', api_key: key });
  });

  it('apply by a member who is not admin answers 403', async () => {
    const response = await apply(member.headers, preset.id);
    expect(response.statusCode, response.body).toBe(403);
    expect(response.json().detail).toMatch(/admin/i);
    expect(response.body).not.toContain(key);
  });

  it("the member's API key, even with organization read_write, cannot apply (403)", async () => {
    const memberKey = await f.apiKey(member, { permissions: { organization: 'read_write' } });
    const response = await apply(memberKey.headers, preset.id);
    expect(response.statusCode, response.body).toBe(403);
    expect(response.body).not.toContain(key);
    // The same key may do what members may: read the presets.
    expect((await list(memberKey.headers)).statusCode).toBe(200);
  });

  it('an API key without the organization area answers 403 on every route', async () => {
    const apiKey = await f.apiKey(admin, {
      permissions: { assistants: 'read_write', calls: 'read_write', campaigns: 'read_write' },
    });
    for (const route of everyRoute(preset.id)) {
      const response = await t.app.inject({ ...route, headers: apiKey.headers });
      expect(response.statusCode, `${route.method} ${route.url}`).toBe(403);
      expect(response.json().detail).toMatch(/organization/);
      expect(response.body).not.toContain(key);
    }
    expect(await applied(admin, preset.id)).toMatchObject({ model: 'model-large', api_key: key });
  });

  it('an API key with organization read may read but not write', async () => {
    const apiKey = await f.apiKey(admin, { permissions: { organization: 'read' } });
    const listed = await list(apiKey.headers);
    expect(listed.statusCode).toBe(200);
    expect((listed.json() as Preset[]).map((p) => p.id)).toContain(preset.id);
    expect(listed.body).not.toContain(key);
    for (const route of everyRoute(preset.id).filter((r) => r.method !== 'GET')) {
      const response = await t.app.inject({ ...route, headers: apiKey.headers });
      expect(response.statusCode, `${route.method} ${route.url}`).toBe(403);
    }
    expect(await presetIn(admin, preset.id)).toMatchObject({ model: 'model-large' });
  });

  it("an admin's API key with only organization read cannot apply: apply reveals the key (403)", async () => {
    const apiKey = await f.apiKey(admin, { permissions: { organization: 'read' } });
    const response = await apply(apiKey.headers, preset.id);
    expect(response.statusCode, response.body).toBe(403);
    expect(response.json().detail).toMatch(/read_write permission for organization/);
    expect(response.body).not.toContain(key);
    const writer = await f.apiKey(admin, { permissions: { organization: 'read_write' } });
    const allowed = await apply(writer.headers, preset.id);
    expect(allowed.statusCode, allowed.body).toBe(200);
    expect(allowed.json().api_key).toBe(key);
  });

  it('an admin API key with organization read_write manages presets', async () => {
    const apiKey = await f.apiKey(admin, { permissions: { organization: 'read_write' } });
    const created = await create(apiKey.headers, { name: 'via key', provider: 'llm_b', model: 'm' });
    expect(created.statusCode, created.body).toBe(201);
    expect(created.json().organization_id).toBe(admin.organizationId);
    expect((await update(apiKey.headers, created.json().id, { model: 'm2' })).statusCode).toBe(200);
    expect((await remove(apiKey.headers, created.json().id)).statusCode).toBe(204);
  });

  it("another organization's preset is not found: PUT, DELETE and apply answer 404", async () => {
    for (const response of [
      await update(outsider.headers, preset.id, { model: 'hijacked', api_key: 'sk-attacker-key' }),
      await update(outsider.headers, preset.id, { api_key: null }),
      await remove(outsider.headers, preset.id),
      await apply(outsider.headers, preset.id),
    ]) {
      expect(response.statusCode, response.body).toBe(404);
      expect(response.body).not.toContain(key);
    }
    const theirs = (await list(outsider.headers)).json() as Preset[];
    expect(theirs.map((p) => p.id)).not.toContain(preset.id);
    // Untouched.
    expect(await applied(admin, preset.id)).toMatchObject({ model: 'model-large', api_key: key });
  });

  it("another organization's API key with full organization access gets 404 too", async () => {
    const apiKey = await f.apiKey(outsider, { permissions: { organization: 'read_write' } });
    expect((await apply(apiKey.headers, preset.id)).statusCode).toBe(404);
    expect((await remove(apiKey.headers, preset.id)).statusCode).toBe(404);
    expect(await presetIn(admin, preset.id)).toBeDefined();
  });

  it('a user of two organizations sees only the presets of the one signed in to', async () => {
    const second = await t.app.inject({
      method: 'POST',
      url: '/api/v1/organization/create',
      headers: admin.headers,
      payload: { name: 'Second org', slug: `second-${Date.now().toString(36)}` },
    });
    expect(second.statusCode, second.body).toBe(201);
    const inSecond = await f.login(admin, second.json().id);
    expect(inSecond.organizationId).toBe(second.json().id);
    expect((await list(inSecond.headers)).json()).toEqual([]);
    expect((await apply(inSecond.headers, preset.id)).statusCode).toBe(404);
    const own = await createPreset(inSecond, { name: 'guarded' });
    expect(own.organization_id).toBe(second.json().id);
    expect((await presetIn(admin, own.id)) === undefined).toBe(true);
  });

  it('a cookie session must echo X-CSRF-Token to write', async () => {
    const cookies = { sb_session: admin.sessionCookie };
    const payload = { name: 'cookie preset', provider: 'llm_a', model: 'm' };
    const refused = await t.app.inject({ method: 'POST', url: PRESETS, cookies, payload });
    expect(refused.statusCode).toBe(403);
    const accepted = await t.app.inject({
      method: 'POST',
      url: PRESETS,
      cookies,
      headers: { 'x-csrf-token': admin.csrfToken },
      payload,
    });
    expect(accepted.statusCode, accepted.body).toBe(201);
  });
});
