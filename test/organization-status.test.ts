/**
 * GET /api/v1/organization/configuration-status: which providers are ready, from the organization's
 * own keys, fallback keys and the keys its assistants carry.
 * Split from the former organization.test.ts. The tests share one platform and database; each creates
 * the users and organizations it needs.
 */
import { randomBytes } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { Factories, type TestUser } from './support/factories.js';
import { useTestPlatform } from './support/harness.js';
import { type Json, organizationApi, secret } from './support/organization-api.js';

// Its close lets the verification mails of the users made here finish before the database closes.
const t = useTestPlatform();
const { putOrg, getStatus, postFallback } = organizationApi(t);
let f: Factories;

beforeAll(() => {
  f = new Factories(t);
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
