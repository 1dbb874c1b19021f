/**
 * Where an assistant's embeddings go (src/domains/runtime/resolve-embeddings.ts): a custom model's own
 * address and key; else EMBEDDINGS_BASE_URL with the assistant's llm_a key, the organization's
 * api_keys.llm_a, then its first enabled llm_a fallback key; the model from rag_settings; null without
 * a key, under HIPAA without a BAA, and for another organization's assistant. Set up through the
 * HTTP routes, then asked directly, as knowledge processing and retrieval ask. The tests share one
 * platform; each creates the organizations it needs.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { Tenant } from '../src/db/tenant.js';
import { resolveEmbeddings } from '../src/domains/runtime/resolve-embeddings.js';
import { Factories, type TestUser } from './support/factories.js';
import { useTestPlatform } from './support/harness.js';
import { secret } from './support/secrets.js';

const t = useTestPlatform();
let f: Factories;
beforeAll(() => {
  f = new Factories(t);
});

type Json = Record<string, unknown>;

async function send(user: TestUser, method: 'POST' | 'PUT', url: string, payload: Json): Promise<Json> {
  const response = await t.app.inject({ method, url, headers: user.headers, payload });
  expect(response.statusCode, response.body).toBeLessThan(300);
  return response.json();
}

let serial = 0;
async function createAssistant(user: TestUser, payload: Json = {}): Promise<number> {
  serial += 1;
  return (await send(user, 'POST', '/api/v1/assistants', { name: `embedder ${serial}`, ...payload }))
    .id as number;
}

function resolve(user: TestUser, assistantId: number) {
  const { database, secrets, config } = t.platform;
  return resolveEmbeddings(
    { db: database.db, secrets, urls: config.providers },
    new Tenant(user.organizationId),
    assistantId,
  );
}

describe('resolveEmbeddings', () => {
  it('takes the assistant’s llm_a key, then the organization’s, then the first enabled fallback key', async () => {
    const admin = await f.user();
    const s = { own: secret('own'), org: secret('org'), first: secret('first'), second: secret('second') };
    const url = t.platform.config.providers.embeddings;
    await send(admin, 'POST', '/api/v1/organization/fallback-keys/llm_a', {
      name: 'disabled',
      api_key: secret('disabled'),
      enabled: false,
    });
    await send(admin, 'POST', '/api/v1/organization/fallback-keys/llm_b', {
      name: 'b',
      api_key: secret('b'),
    });
    await send(admin, 'POST', '/api/v1/organization/fallback-keys/llm_a', {
      name: 'first',
      api_key: s.first,
    });
    await send(admin, 'POST', '/api/v1/organization/fallback-keys/llm_a', {
      name: 'second',
      api_key: s.second,
    });
    const withOwn = await createAssistant(admin, {
      llm_provider_config: { api_key: s.own },
      rag_settings: { embedding_model: 'text-embedding-3-large' },
    });
    const without = await createAssistant(admin);
    // An llm_b assistant's own key is llm_b's: it never embeds at the llm_a address.
    const otherVendor = await createAssistant(admin, {
      llm_provider: 'llm_b',
      llm_provider_config: { api_key: secret('llm-b-own') },
    });

    // No organization key yet: the first enabled llm_a fallback key (not the disabled one, not llm_b's).
    const model = 'text-embedding-3-small';
    expect(await resolve(admin, without)).toEqual({
      baseUrl: url,
      apiKey: s.first,
      model,
      source: 'fallback',
    });
    expect(await resolve(admin, otherVendor)).toMatchObject({ apiKey: s.first, source: 'fallback' });
    expect(await resolve(admin, withOwn)).toEqual({
      baseUrl: url,
      apiKey: s.own,
      model: 'text-embedding-3-large',
      source: 'assistant',
    });

    await send(admin, 'PUT', '/api/v1/organization', { api_keys: { llm_a: { api_key: s.org } } });
    expect(await resolve(admin, without)).toEqual({
      baseUrl: url,
      apiKey: s.org,
      model,
      source: 'organization',
    });
    expect(await resolve(admin, otherVendor)).toMatchObject({ apiKey: s.org, source: 'organization' });
    expect(await resolve(admin, withOwn)).toMatchObject({ apiKey: s.own, source: 'assistant' });
  });

  it('a custom model with its own address and key embeds there; without its key, the usual keys', async () => {
    const admin = await f.user();
    const s = { custom: secret('custom'), org: secret('org') };
    await send(admin, 'PUT', '/api/v1/organization', { api_keys: { llm_a: { api_key: s.org } } });
    const custom = await createAssistant(admin, {
      llm_provider: 'custom',
      llm_provider_config: { api_key: s.custom, base_url: 'https://models.example.test/v1', model: 'mine' },
      rag_settings: { embedding_model: 'nomic-embed-text' },
    });
    expect(await resolve(admin, custom)).toEqual({
      baseUrl: 'https://models.example.test/v1',
      apiKey: s.custom,
      model: 'nomic-embed-text',
      source: 'assistant',
    });
    const keyless = await createAssistant(admin, {
      llm_provider: 'custom',
      custom_llm_url: 'http://10.0.0.5:8080/v1',
    });
    expect(await resolve(admin, keyless)).toEqual({
      baseUrl: t.platform.config.providers.embeddings,
      apiKey: s.org,
      model: 'text-embedding-3-small',
      source: 'organization',
    });
  });

  it('no key anywhere → null; a HIPAA organization without a BAA → null', async () => {
    const admin = await f.user();
    expect(await resolve(admin, await createAssistant(admin))).toBeNull();

    const hipaa = await f.user();
    await send(hipaa, 'PUT', '/api/v1/organization', {
      settings: { hipaa_enabled: true },
      api_keys: { llm_a: { api_key: secret('hipaa-org') } },
    });
    const own = await createAssistant(hipaa, { llm_provider_config: { api_key: secret('hipaa-own') } });
    expect(await resolve(hipaa, own)).toBeNull();
  });

  it('another organization’s assistant, or none, → null (its keys are never read)', async () => {
    const owner = await f.user();
    await send(owner, 'PUT', '/api/v1/organization', { api_keys: { llm_a: { api_key: secret('owner') } } });
    const theirs = await createAssistant(owner, { llm_provider_config: { api_key: secret('theirs') } });
    expect(await resolve(owner, theirs)).not.toBeNull();
    const stranger = await f.user();
    await send(stranger, 'PUT', '/api/v1/organization', {
      api_keys: { llm_a: { api_key: secret('stranger') } },
    });
    expect(await resolve(stranger, theirs)).toBeNull();
    expect(await resolve(stranger, 99_999_999)).toBeNull();
  });
});
