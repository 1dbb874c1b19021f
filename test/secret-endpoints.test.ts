/**
 * A stored secret follows no endpoint (issue 14, item 7). Every stored secret the API keeps — an
 * assistant's LLM, fallback-model and TTS keys, an LLM preset's key, the SIP trunk's password — is
 * bound to the fields that say where it is sent (provider, base URL, domain). Changing one of them
 * while the secret is sent back masked, or not sent at all, answers 422 at the secret's field and
 * keeps what is stored; sending the secret itself with the new endpoint works. The same table runs
 * for every role that may change the resource. Then the organization's own keys: never paired with an
 * address an assistant names. Who may change organization-level keys at all:
 * organization-key-roles.test.ts. The tests share one platform; each case creates the organization
 * it needs.
 */
import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { assistants } from '../src/db/schema/index.js';
import { Tenant } from '../src/db/tenant.js';
import { SECRET_PATHS } from '../src/domains/assistants/schemas.js';
import { openPaths } from '../src/lib/secret-paths.js';
import { SecretBox } from '../src/lib/secrets.js';
import { expectValidation } from './support/assertions.js';
import { Factories, type TestUser } from './support/factories.js';
import { startTestPlatform, TEST_SECRET_KEY, type TestPlatform } from './support/harness.js';
import { masked, secret } from './support/secrets.js';

type Json = Record<string, unknown>;
type Loc = Array<string | number>;

let t: TestPlatform;
let f: Factories;
const box = new SecretBox(TEST_SECRET_KEY);
beforeAll(async () => {
  t = await startTestPlatform();
  f = new Factories(t);
});
afterAll(() => t.close());

function call(method: string, url: string, headers: Record<string, string>, payload?: Json) {
  return t.app.inject({ method: method as 'PUT', url, headers, ...(payload ? { payload } : {}) });
}

async function expectCreated(response: Awaited<ReturnType<typeof call>>): Promise<Json> {
  expect([200, 201], response.body).toContain(response.statusCode);
  return response.json();
}

/** The assistant as stored: its llm_provider column beside its configuration, secrets opened. */
async function assistantState(id: number): Promise<Json> {
  const [row] = await t.database.db.select().from(assistants).where(eq(assistants.id, id));
  return { llm_provider: row?.llmProvider, ...openPaths(row?.config as Json, SECRET_PATHS, box) };
}

const display = (path: Loc) =>
  path.map((key, i) => (typeof key === 'number' ? `[${key}]` : i === 0 ? key : `.${key}`)).join('');

const dig = (value: unknown, ...path: Loc): unknown =>
  path.reduce<unknown>((node, key) => (node as Record<string | number, unknown> | undefined)?.[key], value);

/** One stored secret and one field that says where it goes. */
interface EndpointCase {
  resource: 'assistant' | 'llm preset' | 'organization';
  secret: string;
  endpoint: string;
  /** Roles allowed to change the resource at all; each must be refused the move alike. */
  roles: Array<'admin' | 'user'>;
  /** Stores `key` through the API as the organization's admin; answers the URL a PUT changes. */
  store(admin: TestUser, key: string): Promise<string>;
  /** The PUT body that moves the endpoint, with the secret as given; undefined leaves it out. */
  move(secret: string | undefined): Json;
  /** Ways of not sending the secret itself that the request allows. */
  kept: Array<'masked' | 'omitted'>;
  loc: Loc;
  /** The stored secret and endpoint value, read back. */
  read(admin: TestUser, url: string): Promise<{ secret: unknown; endpoint: unknown }>;
  endpointBefore: unknown;
  endpointAfter: unknown;
}

const ASSISTANTS = '/api/v1/assistants';
const PRESETS = '/api/v1/organization/llm-presets';
const OLD_URL = 'https://llm.example.test/v1';
const NEW_URL = 'https://elsewhere.example.test/v1';

async function storeAssistant(admin: TestUser, config: Json): Promise<string> {
  const body = await expectCreated(
    await call('POST', ASSISTANTS, admin.headers, { name: `assistant ${secret('n')}`, ...config }),
  );
  return `${ASSISTANTS}/${body.id}`;
}

function assistantCase(
  secretPath: Loc,
  endpointPath: Loc,
  fields: Omit<EndpointCase, 'resource' | 'roles' | 'read' | 'secret' | 'endpoint' | 'loc'> & {
    endpoint?: string;
  },
): EndpointCase {
  return {
    resource: 'assistant',
    secret: display(secretPath),
    endpoint: display(endpointPath),
    roles: ['admin', 'user'],
    loc: ['body', ...secretPath],
    read: async (_admin, url) => {
      const state = await assistantState(Number(url.split('/').pop()));
      return { secret: dig(state, ...secretPath), endpoint: dig(state, ...endpointPath) };
    },
    ...fields,
  };
}

const CASES: EndpointCase[] = [
  assistantCase(['llm_provider_config', 'api_key'], ['llm_provider_config', 'base_url'], {
    store: (admin, key) =>
      storeAssistant(admin, {
        llm_provider: 'llm_a',
        llm_provider_config: { api_key: key, base_url: OLD_URL },
      }),
    move: (key) => ({ llm_provider_config: { ...(key ? { api_key: key } : {}), base_url: NEW_URL } }),
    kept: ['masked'],
    endpointBefore: OLD_URL,
    endpointAfter: NEW_URL,
  }),
  // The flat field of the same URL, the secret left out: the stored object is completed, key and all.
  assistantCase(['llm_provider_config', 'api_key'], ['llm_provider_config', 'base_url'], {
    store: (admin, key) =>
      storeAssistant(admin, { llm_provider: 'llm_a', llm_provider_config: { api_key: key } }),
    endpoint: 'llm_provider_config.base_url (as the flat custom_llm_url)',
    move: (key) => ({ custom_llm_url: NEW_URL, ...(key ? { llm_a_api_key: key } : {}) }),
    kept: ['masked', 'omitted'],
    endpointBefore: undefined,
    endpointAfter: NEW_URL,
  }),
  assistantCase(['llm_provider_config', 'api_key'], ['llm_provider'], {
    store: (admin, key) =>
      storeAssistant(admin, { llm_provider: 'llm_a', llm_provider_config: { api_key: key } }),
    move: (key) => ({ llm_provider: 'llm_b', ...(key ? { llm_provider_config: { api_key: key } } : {}) }),
    kept: ['masked', 'omitted'],
    endpointBefore: 'llm_a',
    endpointAfter: 'llm_b',
  }),
  // The review's finding: a custom provider at the caller's server, the admin's key sent back masked.
  assistantCase(['llm_provider_config', 'api_key'], ['llm_provider'], {
    store: (admin, key) =>
      storeAssistant(admin, { llm_provider: 'llm_a', llm_provider_config: { api_key: key } }),
    endpoint: 'llm_provider (to custom, at a new base_url)',
    move: (key) => ({
      llm_provider: 'custom',
      llm_provider_config: { ...(key ? { api_key: key } : {}), base_url: NEW_URL },
    }),
    kept: ['masked'],
    endpointBefore: 'llm_a',
    endpointAfter: 'custom',
  }),
  assistantCase(
    ['llm_fallback_providers', 'fallbacks', 0, 'api_key'],
    ['llm_fallback_providers', 'fallbacks', 0, 'provider'],
    {
      store: (admin, key) =>
        storeAssistant(admin, {
          llm_fallback_providers: { enabled: true, fallbacks: [{ provider: 'llm_a', api_key: key }] },
        }),
      move: (key) => ({
        llm_fallback_providers: { enabled: true, fallbacks: [{ provider: 'llm_c', api_key: key }] },
      }),
      kept: ['masked'],
      endpointBefore: 'llm_a',
      endpointAfter: 'llm_c',
    },
  ),
  // Reordered fallbacks: the masked key of item 1 would otherwise be taken from the stored item 1.
  assistantCase(
    ['llm_fallback_providers', 'fallbacks', 1, 'api_key'],
    ['llm_fallback_providers', 'fallbacks', 1, 'base_url'],
    {
      store: (admin, key) =>
        storeAssistant(admin, {
          llm_fallback_providers: {
            enabled: true,
            fallbacks: [
              { provider: 'custom', api_key: secret('first'), base_url: 'https://first.example.test/v1' },
              { provider: 'custom', api_key: key, base_url: OLD_URL },
            ],
          },
        }),
      move: (key) => ({
        llm_fallback_providers: {
          enabled: true,
          fallbacks: [
            { provider: 'custom', api_key: secret('first'), base_url: 'https://first.example.test/v1' },
            { provider: 'custom', api_key: key, base_url: NEW_URL },
          ],
        },
      }),
      kept: ['masked'],
      endpointBefore: OLD_URL,
      endpointAfter: NEW_URL,
    },
  ),
  assistantCase(['tts_settings', 'api_key'], ['tts_settings', 'provider'], {
    store: (admin, key) =>
      storeAssistant(admin, { tts_settings: { provider: 'tts_b', voice_id: 'alloy', api_key: key } }),
    move: (key) => ({
      tts_settings: { provider: 'tts_c', voice_id: 'alloy', ...(key ? { api_key: key } : {}) },
    }),
    kept: ['masked'],
    endpointBefore: 'tts_b',
    endpointAfter: 'tts_c',
  }),
  assistantCase(['tts_settings', 'provider_config', 'api_key'], ['tts_settings', 'provider'], {
    store: (admin, key) =>
      storeAssistant(admin, {
        tts_settings: { provider: 'tts_b', voice_id: 'alloy', provider_config: { api_key: key } },
      }),
    move: (key) => ({
      tts_settings: { provider: 'tts_c', voice_id: 'alloy', provider_config: key ? { api_key: key } : {} },
    }),
    kept: ['masked'],
    endpointBefore: 'tts_b',
    endpointAfter: 'tts_c',
  }),
  ...(['base_url', 'provider'] as const).map(
    (endpoint): EndpointCase => ({
      resource: 'llm preset',
      secret: 'api_key',
      endpoint,
      roles: ['admin'],
      store: async (admin, key) => {
        const body = await expectCreated(
          await call('POST', PRESETS, admin.headers, {
            name: `preset ${secret('n')}`,
            provider: 'llm_a',
            model: 'model-large',
            api_key: key,
            base_url: OLD_URL,
          }),
        );
        return `${PRESETS}/${body.id}`;
      },
      move: (key) => ({
        ...(endpoint === 'base_url' ? { base_url: NEW_URL } : { provider: 'llm_d' }),
        ...(key ? { api_key: key } : {}),
      }),
      kept: ['masked', 'omitted'],
      loc: ['body', 'api_key'],
      // apply: the admin's view of the preset, key in clear.
      read: async (admin, url) => {
        const preset = (await call('GET', `${url}/apply`, admin.headers)).json();
        return { secret: preset.api_key, endpoint: preset[endpoint] };
      },
      endpointBefore: endpoint === 'base_url' ? OLD_URL : 'llm_a',
      endpointAfter: endpoint === 'base_url' ? NEW_URL : 'llm_d',
    }),
  ),
  {
    resource: 'organization',
    secret: 'sip_trunk_config.password',
    endpoint: 'sip_trunk_config.sip_domain',
    roles: ['admin'],
    store: async (admin, key) => {
      await expectCreated(
        await call('PUT', '/api/v1/organization', admin.headers, {
          sip_trunk_config: { sip_domain: 'trunk.example.test', username: 'sb', password: key },
        }),
      );
      return '/api/v1/organization';
    },
    move: (key) => ({
      sip_trunk_config: {
        sip_domain: 'elsewhere.example.test',
        username: 'sb',
        ...(key ? { password: key } : {}),
      },
    }),
    kept: ['masked', 'omitted'],
    loc: ['body', 'sip_trunk_config', 'password'],
    read: async (admin) => {
      const { rows } = await t.database.executeSql(
        'select sealed from provider_credentials where organization_id = $1 and provider = $2',
        [admin.organizationId, 'sip_trunk'],
      );
      const organization = (await call('GET', '/api/v1/organization', admin.headers)).json();
      return {
        secret: box.openJson<Json>(String(rows[0]?.sealed)).password,
        endpoint: organization.sip_trunk_config?.sip_domain,
      };
    },
    endpointBefore: 'trunk.example.test',
    endpointAfter: 'elsewhere.example.test',
  },
];

describe('a stored secret does not follow a changed provider or address', () => {
  for (const c of CASES) {
    for (const role of c.roles) {
      for (const how of c.kept) {
        it(`${c.resource}: ${c.secret} ${how} with ${c.endpoint} changed, by ${role === 'user' ? 'a member' : 'an admin'}: 422, nothing changes`, async () => {
          const admin = await f.user();
          const caller = role === 'admin' ? admin : await f.member(admin.organizationId, role);
          const key = secret('bound');
          const url = await c.store(admin, key);
          expect(await c.read(admin, url)).toEqual({ secret: key, endpoint: c.endpointBefore });

          const response = await call(
            'PUT',
            url,
            caller.headers,
            c.move(how === 'masked' ? masked(key) : undefined),
          );
          expectValidation(response, c.loc, 'value_error');
          expect(JSON.stringify(response.json().detail)).toMatch(/send the secret itself again/);
          expect(response.body).not.toContain(key);
          expect(await c.read(admin, url)).toEqual({ secret: key, endpoint: c.endpointBefore });
        });
      }
      it(`${c.resource}: ${c.secret} sent again with ${c.endpoint} changed, by ${role === 'user' ? 'a member' : 'an admin'}: both change`, async () => {
        const admin = await f.user();
        const caller = role === 'admin' ? admin : await f.member(admin.organizationId, role);
        const url = await c.store(admin, secret('old'));
        const fresh = secret('fresh');
        const response = await call('PUT', url, caller.headers, c.move(fresh));
        expect(response.statusCode, response.body).toBe(200);
        expect(await c.read(admin, url)).toEqual({ secret: fresh, endpoint: c.endpointAfter });
      });
    }
  }

  it('a masked secret with its provider and address unchanged still keeps the stored one', async () => {
    const admin = await f.user();
    const key = secret('kept');
    const url = await storeAssistant(admin, {
      llm_provider: 'custom',
      llm_provider_config: { api_key: key, base_url: OLD_URL },
      llm_fallback_providers: { enabled: true, fallbacks: [{ provider: 'llm_b', api_key: key }] },
      tts_settings: { provider: 'tts_b', voice_id: 'alloy', api_key: key },
    });
    const shown = (await call('GET', url, admin.headers)).json();
    const response = await call('PUT', url, admin.headers, {
      llm_provider: 'custom',
      llm_provider_config: { ...shown.llm_provider_config, model: 'another-model' },
      llm_fallback_providers: shown.llm_fallback_providers,
      tts_settings: { ...shown.tts_settings, voice_id: 'nova' },
      custom_llm_url: OLD_URL,
    });
    expect(response.statusCode, response.body).toBe(200);
    const state = await assistantState(Number(url.split('/').pop()));
    expect(dig(state, 'llm_provider_config', 'api_key')).toBe(key);
    expect(dig(state, 'llm_fallback_providers', 'fallbacks', 0, 'api_key')).toBe(key);
    expect(dig(state, 'tts_settings', 'api_key')).toBe(key);
  });

  it('a fallback key: its provider is its address, so a PUT under another provider finds nothing (404)', async () => {
    const admin = await f.user();
    const key = secret('spare');
    const created = await expectCreated(
      await call('POST', '/api/v1/organization/fallback-keys/llm_a', admin.headers, {
        name: 'spare',
        api_key: key,
      }),
    );
    const moved = await call('PUT', `/api/v1/organization/fallback-keys/llm_b/${created.id}`, admin.headers, {
      api_key: masked(key),
      provider: 'llm_b',
    });
    expect(moved.statusCode, moved.body).toBe(404);
    const listed = (await call('GET', '/api/v1/organization/fallback-keys/llm_a', admin.headers)).json();
    expect(listed).toMatchObject([{ id: created.id, provider: 'llm_a', key_hint: masked(key) }]);
  });
});

describe("the organization's keys never go to an address an assistant names", () => {
  it('an assistant with its own base_url and no key of its own gets no organization or fallback key', async () => {
    const admin = await f.user();
    const member = await f.member(admin.organizationId, 'user');
    const organizationKey = secret('org');
    const fallbackKey = secret('fallback');
    await expectCreated(
      await call('PUT', '/api/v1/organization', admin.headers, {
        api_keys: { llm_a: { api_key: organizationKey } },
      }),
    );
    await expectCreated(
      await call('POST', '/api/v1/organization/fallback-keys/llm_a', admin.headers, {
        name: 'spare',
        api_key: fallbackKey,
      }),
    );
    const resolve = (url: string) =>
      t.platform.services.configResolver.resolve(new Tenant(admin.organizationId), {
        assistantId: Number(url.split('/').pop()),
      });

    // At the vendor's address the organization's key is used, the fallback key behind it.
    const plain = await storeAssistant(member, { llm_provider: 'llm_a' });
    expect((await resolve(plain))?.llm).toMatchObject({
      key: { apiKey: organizationKey, source: 'organization' },
      backups: [{ apiKey: fallbackKey, source: 'fallback' }],
    });

    // A member points the assistant elsewhere, sending no key: none of the organization's goes there.
    const moved = await call('PUT', plain, member.headers, { custom_llm_url: NEW_URL });
    expect(moved.statusCode, moved.body).toBe(200);
    const config = await resolve(plain);
    expect(config?.llm).toMatchObject({ provider: 'llm_a', key: null, backups: [], baseUrl: NEW_URL });
    expect(JSON.stringify(config)).not.toContain(organizationKey);
    expect(JSON.stringify(config)).not.toContain(fallbackKey);
    expect(config?.missing.join('\n')).toMatch(/needs the assistant's own key/);

    // With a key of its own, that key goes there.
    const own = secret('own');
    await call('PUT', plain, member.headers, { llm_a_api_key: own, custom_llm_url: NEW_URL });
    expect((await resolve(plain))?.llm).toMatchObject({
      key: { apiKey: own, source: 'assistant' },
      backups: [],
    });
  });
});
