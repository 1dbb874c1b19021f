/**
 * ConfigResolver.resolveCurrent (src/domains/runtime/resolve-config.ts): a call's configuration kept in
 * memory at its organization's configuration version (versioned-cache.ts, migrations 0019 and 0021).
 * Every column the resolved configuration reads is changed here by plain SQL — as another process,
 * the CLI or an operator would — and the very next resolveCurrent must show it; a caller changing
 * the object it was given must not change what the next caller gets; and organizations are apart.
 */
import { sql } from 'drizzle-orm';
import { beforeAll, describe, expect, it } from 'vitest';
import { Tenant } from '../src/db/tenant.js';
import { Factories } from './support/factories.js';
import { useTestPlatform } from './support/harness.js';
import { secret } from './support/secrets.js';

const t = useTestPlatform();
let f: Factories;
beforeAll(() => {
  f = new Factories(t);
});

const run = (statement: ReturnType<typeof sql>) => t.platform.database.db.execute(statement);

async function current(organizationId: number, assistantId: number, phoneNumber?: string) {
  const options = phoneNumber === undefined ? { assistantId } : { assistantId, phoneNumber };
  const resolved = await t.platform.services.configResolver.resolveCurrent(
    new Tenant(organizationId),
    options,
  );
  expect(resolved, `assistant ${assistantId} did not resolve`).toBeDefined();
  return resolved!;
}

describe('resolveCurrent sees every change to what it read, whoever made it', () => {
  it('the assistant: name, activity, model provider and settings', async () => {
    const { admin, assistantId } = await f.carrierOrganization();
    const org = admin.organizationId;
    expect((await current(org, assistantId)).assistant.name).toBe('Caller');

    await run(sql`update assistants set name = 'Renamed' where id = ${assistantId}`);
    expect((await current(org, assistantId)).assistant.name).toBe('Renamed');
    await run(sql`update assistants set is_active = false where id = ${assistantId}`);
    expect((await current(org, assistantId)).assistant.isActive).toBe(false);
    await run(sql`update assistants set llm_provider = 'llm_b' where id = ${assistantId}`);
    expect((await current(org, assistantId)).llm.provider).toBe('llm_b');
    await run(
      sql`update assistants set config = config || '{"llm_provider_config": {"model": "model-from-sql"}}'::jsonb
        where id = ${assistantId}`,
    );
    expect((await current(org, assistantId)).llm.model).toBe('model-from-sql');
  });

  it("the organization's keys, settings and vendor limits", async () => {
    const { admin, assistantId } = await f.carrierOrganization();
    const org = admin.organizationId;
    const organizationKey = secret('organization');
    const tts = (await current(org, assistantId)).tts.provider;
    await t.app.inject({
      method: 'PUT',
      url: '/api/v1/organization',
      headers: admin.headers,
      payload: { api_keys: { [tts]: { api_key: organizationKey } } },
    });
    expect((await current(org, assistantId)).tts.key?.apiKey).toBe(organizationKey);

    const limits = JSON.stringify({ tts: { [tts]: { enabled: true, concurrent_limit: 3 } } });
    await run(sql`update organizations set concurrency_settings = ${limits}::jsonb where id = ${org}`);
    expect((await current(org, assistantId)).tts.key?.limit?.max).toBe(3);
    await run(
      sql`update organizations set settings = settings || '{"hipaa_enabled": true}'::jsonb where id = ${org}`,
    );
    expect((await current(org, assistantId)).tts.key).toBeNull();
  });

  it("the fallback keys and the number's carrier credentials and SMS rate", async () => {
    const { admin, assistantId, number } = await f.carrierOrganization();
    const org = admin.organizationId;
    const fallbackKey = secret('fallback');
    expect((await current(org, assistantId)).stt.key).toBeNull();

    const added = await t.app.inject({
      method: 'POST',
      url: '/api/v1/organization/fallback-keys/stt_a',
      headers: admin.headers,
      payload: { name: 'spare', api_key: fallbackKey, enabled: true },
    });
    expect(added.statusCode, added.body).toBe(201);
    expect((await current(org, assistantId)).stt.key?.apiKey).toBe(fallbackKey);
    await run(sql`update fallback_keys set enabled = false where organization_id = ${org}`);
    expect((await current(org, assistantId)).stt.key).toBeNull();

    expect((await current(org, assistantId, number)).telephony?.credentials).not.toBeNull();
    await run(sql`delete from provider_credentials where organization_id = ${org}`);
    expect((await current(org, assistantId, number)).telephony?.credentials).toBeNull();
    await run(sql`update phone_numbers set sms_rate_per_second = 7 where phone_number = ${number}`);
    expect((await current(org, assistantId, number)).telephony?.smsRatePerSecond).toBe(7);
  });
});

describe('what resolveCurrent hands out', () => {
  it('is a copy: a caller changing it changes nothing for the next', async () => {
    const { admin, assistantId } = await f.carrierOrganization();
    const first = await current(admin.organizationId, assistantId);
    first.assistant.name = 'scribbled';
    first.missing.push('scribbled');
    const second = await current(admin.organizationId, assistantId);
    expect(second.assistant.name).toBe('Caller');
    expect(second.missing).not.toContain('scribbled');
  });

  it("is one organization's: another's assistant resolves to nothing, also after it was kept", async () => {
    const one = await f.carrierOrganization();
    const other = await f.carrierOrganization();
    await current(one.admin.organizationId, one.assistantId);
    const resolver = t.platform.services.configResolver;
    const across = await resolver.resolveCurrent(new Tenant(other.admin.organizationId), {
      assistantId: one.assistantId,
    });
    expect(across).toBeUndefined();
  });
});
