/**
 * The config resolver (src/domains/runtime/resolve-config.ts): what a call or message of an assistant
 * will really use. Key precedence per vendor (the assistant's own key, then the organization's
 * api_keys, then its first enabled fallback key, the other enabled fallback keys standing behind),
 * model settings, the assistant's own fallback models, the HIPAA rule, the phone number's carrier and
 * its credentials, and tenant isolation. Everything is set up through the HTTP routes; the resolver
 * is then asked directly, as the runtime asks it, and through `resolveCurrent`, which must agree. It
 * hands secrets back in clear, so they are compared exactly. The tests share one platform; each
 * creates the organizations it needs.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { Tenant } from '../src/db/tenant.js';
import { BYO_INACTIVE_REASON } from '../src/domains/organizations/service.js';
import type { KeyChoice, ResolvedConfig } from '../src/domains/runtime/resolve-config.js';
import { Factories, type TestUser } from './support/factories.js';
import { useTestPlatform } from './support/harness.js';
import { secret } from './support/secrets.js';

// Its close lets the verification mails of the users made here finish before the database closes.
const t = useTestPlatform();
let f: Factories;
beforeAll(() => {
  f = new Factories(t);
});

type Json = Record<string, unknown>;

async function putOrg(user: TestUser, payload: Json): Promise<void> {
  const response = await t.app.inject({
    method: 'PUT',
    url: '/api/v1/organization',
    headers: user.headers,
    payload,
  });
  expect(response.statusCode, response.body).toBe(200);
}

let assistantSerial = 0;
/** Creates an assistant (a unique name unless given) and returns its id. */
async function createAssistant(user: TestUser, payload: Json = {}): Promise<number> {
  assistantSerial += 1;
  const response = await t.app.inject({
    method: 'POST',
    url: '/api/v1/assistants',
    headers: user.headers,
    payload: { name: `assistant ${assistantSerial}`, ...payload },
  });
  expect(response.statusCode, response.body).toBe(201);
  return response.json().id;
}

async function updateAssistant(user: TestUser, id: number, payload: Json): Promise<void> {
  const response = await t.app.inject({
    method: 'PUT',
    url: `/api/v1/assistants/${id}`,
    headers: user.headers,
    payload,
  });
  expect(response.statusCode, response.body).toBe(200);
}

async function addFallbackKey(
  user: TestUser,
  provider: string,
  name: string,
  apiKey: string,
  enabled = true,
): Promise<number> {
  const response = await t.app.inject({
    method: 'POST',
    url: `/api/v1/organization/fallback-keys/${provider}`,
    headers: user.headers,
    payload: { name, api_key: apiKey, enabled },
  });
  expect(response.statusCode, response.body).toBe(201);
  return response.json().id;
}

async function setFallbackEnabled(user: TestUser, provider: string, id: number, enabled: boolean) {
  const response = await t.app.inject({
    method: 'PUT',
    url: `/api/v1/organization/fallback-keys/${provider}/${id}`,
    headers: user.headers,
    payload: { enabled },
  });
  expect(response.statusCode, response.body).toBe(200);
}

// Numbers are unique on the whole platform; this file's database is its own, so a counter suffices.
let numberSerial = 0;
const longCode = () => `+1415555${1000 + ++numberSerial}`;
const tollFree = () => `+1888555${1000 + ++numberSerial}`;

interface NumberInput {
  phone_number: string;
  provider: string;
  assistant_id?: number | null;
  sms_rate_per_second?: number;
}

/** Registers a phone number and returns its id. */
async function addNumber(user: TestUser, payload: NumberInput): Promise<number> {
  const response = await t.app.inject({
    method: 'POST',
    url: '/api/v1/phone-numbers',
    headers: user.headers,
    payload: { ...payload },
  });
  expect(response.statusCode, response.body).toBe(201);
  return response.json().id;
}

async function resolve(user: TestUser, assistantId: number, phoneNumber?: string) {
  const resolver = t.platform.services.configResolver;
  const tenant = new Tenant(user.organizationId);
  const options = phoneNumber === undefined ? { assistantId } : { assistantId, phoneNumber };
  const config = await resolver.resolve(tenant, options);
  // What a call resolves (from memory while the configuration version stands) is the same answer,
  // after every change the tests make: a change the version missed would show here.
  expect(await resolver.resolveCurrent(tenant, options)).toEqual(config);
  return config;
}

async function resolved(user: TestUser, assistantId: number, phoneNumber?: string): Promise<ResolvedConfig> {
  const config = await resolve(user, assistantId, phoneNumber);
  expect(config, `assistant ${assistantId} did not resolve`).toBeDefined();
  return config as ResolvedConfig;
}

/** The `missing` lines about one part (`llm`, `stt`, `tts`, `telephony`). */
const linesOf = (config: ResolvedConfig, kind: string) =>
  config.missing.filter((m) => m.startsWith(`${kind}:`));

const fallback = (name: string, apiKey: string): KeyChoice => ({ apiKey, source: 'fallback', name });
const fromAssistant = (apiKey: string): KeyChoice => ({ apiKey, source: 'assistant' });
const fromOrganization = (apiKey: string): KeyChoice => ({ apiKey, source: 'organization' });

describe('vendor keys: the assistant, then the organization, then the enabled fallback keys', () => {
  const KINDS = [
    {
      kind: 'llm',
      vendor: 'llm_a',
      other: 'llm_b',
      own: (key: string): Json => ({ llm_provider_config: { api_key: key } }),
      flat: (key: string): Json => ({ llm_a_api_key: key }),
    },
    {
      kind: 'stt',
      vendor: 'stt_a',
      other: 'tts_a',
      own: (key: string): Json => ({ stt_settings: { api_key: key } }),
      flat: (key: string): Json => ({ stt_api_key: key }),
    },
    {
      kind: 'tts',
      vendor: 'tts_a',
      other: 'tts_b',
      own: (key: string): Json => ({ tts_settings: { api_key: key } }),
      flat: (key: string): Json => ({ tts_a_api_key: key }),
    },
  ] as const;

  it.each(KINDS)(
    '$kind ($vendor): each source in turn; backups are the enabled fallback keys in creation order',
    async ({ kind, vendor, other, own }) => {
      const admin = await f.user();
      const s = {
        own: secret(`${kind}-own`),
        org: secret(`${kind}-org`),
        zulu: secret('zulu'),
        alpha: secret('alpha'),
        mike: secret('mike'),
        other: secret('other'),
      };
      await putOrg(admin, { api_keys: { [vendor]: { api_key: s.org } } });
      // Created zulu, alpha (disabled), mike: neither alphabetical nor (later) update order.
      const zulu = await addFallbackKey(admin, vendor, 'zulu', s.zulu);
      const alpha = await addFallbackKey(admin, vendor, 'alpha', s.alpha, false);
      const mike = await addFallbackKey(admin, vendor, 'mike', s.mike);
      // A key of another provider never stands in.
      await addFallbackKey(admin, other, 'other', s.other);
      const withOwn = await createAssistant(admin, own(s.own));
      const without = await createAssistant(admin);
      const ZULU = fallback('zulu', s.zulu);
      const ALPHA = fallback('alpha', s.alpha);
      const MIKE = fallback('mike', s.mike);

      const expectChoice = async (id: number, key: KeyChoice | null, backups: KeyChoice[]) => {
        const config = await resolved(admin, id);
        const part = config[kind];
        expect(part.provider).toBe(vendor);
        expect(part.key).toEqual(key);
        expect(part.backups).toEqual(backups);
        const lines = linesOf(config, kind);
        if (key) expect(lines).toEqual([]);
        else {
          expect(lines).toHaveLength(1);
          expect(lines[0]).toContain(vendor);
        }
      };

      // All three sources present; the disabled key is never a backup.
      await expectChoice(withOwn, fromAssistant(s.own), [ZULU, MIKE]);
      await expectChoice(without, fromOrganization(s.org), [ZULU, MIKE]);

      // Without the organization key: the first enabled fallback key, the others behind it.
      await putOrg(admin, { api_keys: { [vendor]: null } });
      await expectChoice(withOwn, fromAssistant(s.own), [ZULU, MIKE]);
      await expectChoice(without, ZULU, [MIKE]);

      // The first one disabled: the next enabled one moves up.
      await setFallbackEnabled(admin, vendor, zulu, false);
      await expectChoice(withOwn, fromAssistant(s.own), [MIKE]);
      await expectChoice(without, MIKE, []);

      // None enabled: no key, and a missing line naming the vendor.
      await setFallbackEnabled(admin, vendor, mike, false);
      await expectChoice(withOwn, fromAssistant(s.own), []);
      await expectChoice(without, null, []);

      // All enabled again (in another order than created): creation order still rules.
      await setFallbackEnabled(admin, vendor, mike, true);
      await setFallbackEnabled(admin, vendor, alpha, true);
      await setFallbackEnabled(admin, vendor, zulu, true);
      await expectChoice(without, ZULU, [ALPHA, MIKE]);
      await expectChoice(withOwn, fromAssistant(s.own), [ZULU, ALPHA, MIKE]);

      // An organization key again goes before every fallback key.
      await putOrg(admin, { api_keys: { [vendor]: { api_key: s.org } } });
      await expectChoice(without, fromOrganization(s.org), [ZULU, ALPHA, MIKE]);
    },
  );

  it.each(KINDS)(
    '$kind: the flat secret field of the assistant is its own key too',
    async ({ kind, vendor, flat }) => {
      const admin = await f.user();
      const own = secret(`${kind}-flat`);
      await putOrg(admin, { api_keys: { [vendor]: { api_key: secret('org') } } });
      const id = await createAssistant(admin, flat(own));
      const config = await resolved(admin, id);
      expect(config[kind].key).toEqual(fromAssistant(own));
    },
  );

  it("the llm key is the assistant's llm_provider's: keys of other llm providers are not used", async () => {
    const admin = await f.user();
    const s = {
      a: secret('org-llm-a'),
      c: secret('org-llm-c'),
      fbA: secret('fb-llm-a'),
      fbC: secret('fb-c'),
    };
    await putOrg(admin, { api_keys: { llm_a: { api_key: s.a }, llm_c: { api_key: s.c } } });
    await addFallbackKey(admin, 'llm_a', 'spare a', s.fbA);
    const id = await createAssistant(admin, { llm_provider: 'llm_c' });

    let config = await resolved(admin, id);
    expect(config.assistant.llmProvider).toBe('llm_c');
    expect(config.llm).toMatchObject({ provider: 'llm_c', key: fromOrganization(s.c), backups: [] });

    await putOrg(admin, { api_keys: { llm_c: null } });
    config = await resolved(admin, id);
    expect(config.llm).toMatchObject({ provider: 'llm_c', key: null, backups: [] });
    expect(linesOf(config, 'llm')).toHaveLength(1);
    expect(linesOf(config, 'llm')[0]).toContain('llm_c');

    await addFallbackKey(admin, 'llm_c', 'spare c', s.fbC);
    config = await resolved(admin, id);
    expect(config.llm).toMatchObject({ key: fallback('spare c', s.fbC), backups: [] });
    expect(linesOf(config, 'llm')).toEqual([]);
  });

  it.each([
    { provider: 'tts_c', base: { language: 'de-DE' } },
    { provider: 'tts_d', base: { project_uuid: 'p-123' } },
  ])(
    '$provider: the key in tts_settings.provider_config.api_key, else api_keys.$provider, else its fallback keys',
    async ({ provider, base }) => {
      const admin = await f.user();
      const s = { own: secret('own'), org: secret('org'), ttsA: secret('tts-a'), spare: secret('spare') };
      await putOrg(admin, { api_keys: { tts_a: { api_key: s.ttsA }, [provider]: { api_key: s.org } } });
      await addFallbackKey(admin, 'tts_a', 'spare a', secret('spare-a'));
      await addFallbackKey(admin, provider, 'spare', s.spare);
      const withOwn = await createAssistant(admin, {
        tts_settings: { provider, voice_id: 'v', provider_config: { ...base, api_key: s.own } },
      });
      const without = await createAssistant(admin, {
        tts_settings: { provider, voice_id: 'v', provider_config: base },
      });

      let config = await resolved(admin, withOwn);
      expect(config.tts).toEqual({
        provider,
        key: fromAssistant(s.own),
        backups: [fallback('spare', s.spare)],
        providerConfig: { ...base, api_key: s.own },
      });
      config = await resolved(admin, without);
      expect(config.tts).toEqual({
        provider,
        key: fromOrganization(s.org),
        backups: [fallback('spare', s.spare)],
        providerConfig: base,
      });

      // Without its own organization key, tts_a's key does not stand in: the provider's fallback key does.
      await putOrg(admin, { api_keys: { [provider]: null } });
      config = await resolved(admin, without);
      expect(config.tts).toMatchObject({ provider, key: fallback('spare', s.spare), backups: [] });
      expect(linesOf(config, 'tts')).toEqual([]);
    },
  );
});

describe('models, URLs and languages from the assistant settings', () => {
  it('takes model and base_url of llm_provider_config and model and language of stt_settings', async () => {
    const admin = await f.user();
    const key = secret('llm');
    const id = await createAssistant(admin, {
      llm_provider: 'llm_b',
      llm_provider_config: { api_key: key, model: 'model-x', base_url: 'https://llm.example.test/v1' },
      stt_settings: { model: 'nova-2', language: 'de-DE' },
    });
    const config = await resolved(admin, id);
    expect(config.llm).toEqual({
      provider: 'llm_b',
      key: fromAssistant(key),
      backups: [],
      model: 'model-x',
      baseUrl: 'https://llm.example.test/v1',
    });
    expect(config.stt).toMatchObject({ provider: 'stt_a', model: 'nova-2', language: 'de-DE' });
  });

  it('an assistant with the defaults: no llm model or URL, stt nova-3 in en-US, tts_a with {}', async () => {
    const admin = await f.user();
    const config = await resolved(admin, await createAssistant(admin));
    expect(config.llm).toMatchObject({ provider: 'llm_a', model: null, baseUrl: null });
    expect(config.stt).toMatchObject({ model: 'nova-3', language: 'en-US' });
    expect(config.tts).toMatchObject({ provider: 'tts_a', providerConfig: {} });
    expect(config.llmFallbacks).toEqual([]);
  });

  it('a custom model at its own URL needs no key: not in missing; any other provider without a key is', async () => {
    const admin = await f.user();
    const custom = await createAssistant(admin, {
      llm_provider: 'custom',
      custom_llm_url: 'http://10.0.0.5:8080/v1',
    });
    let config = await resolved(admin, custom);
    expect(config.llm).toEqual({
      provider: 'custom',
      key: null,
      backups: [],
      model: null,
      baseUrl: 'http://10.0.0.5:8080/v1',
    });
    expect(linesOf(config, 'llm')).toEqual([]);

    // The same URL on a vendor model is no key.
    const vendor = await createAssistant(admin, { custom_llm_url: 'http://10.0.0.5:8080/v1' });
    config = await resolved(admin, vendor);
    expect(config.llm).toMatchObject({ provider: 'llm_a', key: null, baseUrl: 'http://10.0.0.5:8080/v1' });
    expect(linesOf(config, 'llm')).toHaveLength(1);

    // A custom model with a key uses it.
    const key = secret('custom');
    const keyed = await createAssistant(admin, {
      llm_provider: 'custom',
      llm_provider_config: { api_key: key, base_url: 'https://custom.example.test/v1', model: 'mine' },
    });
    config = await resolved(admin, keyed);
    expect(config.llm).toMatchObject({
      provider: 'custom',
      key: fromAssistant(key),
      model: 'mine',
      baseUrl: 'https://custom.example.test/v1',
    });
  });

  it('lists the fallback models only when llm_fallback_providers.enabled is true', async () => {
    const admin = await f.user();
    const s = { b: secret('fb-b'), custom: secret('fb-custom') };
    const fallbacks = [
      { provider: 'llm_b', api_key: s.b, model: 'model-b' },
      { provider: 'custom', api_key: s.custom, base_url: 'https://fallback.example.test/v1' },
    ];
    const expected = [
      { provider: 'llm_b', apiKey: s.b, model: 'model-b', baseUrl: null },
      { provider: 'custom', apiKey: s.custom, model: null, baseUrl: 'https://fallback.example.test/v1' },
    ];
    const enabled = await createAssistant(admin, { llm_fallback_providers: { enabled: true, fallbacks } });
    expect((await resolved(admin, enabled)).llmFallbacks).toEqual(expected);

    const disabled = await createAssistant(admin, { llm_fallback_providers: { enabled: false, fallbacks } });
    expect((await resolved(admin, disabled)).llmFallbacks).toEqual([]);
    await updateAssistant(admin, disabled, { llm_fallback_providers: { enabled: true, fallbacks } });
    expect((await resolved(admin, disabled)).llmFallbacks).toEqual(expected);
  });
});

describe('HIPAA without a business associate agreement', () => {
  it('uses no bring-your-own key at all, says why, and uses them all again once baa_signed is recorded', async () => {
    const admin = await f.user();
    const s = {
      ownLlm: secret('own-llm'),
      ownStt: secret('own-stt'),
      ownTts: secret('own-tts'),
      orgLlm: secret('org-llm'),
      fbLlm: secret('fb-llm'),
      fbStt: secret('fb-stt'),
      fbTts: secret('fb-tts'),
      model: secret('model-fb'),
      token: secret('carrier'),
    };
    await putOrg(admin, {
      settings: { hipaa_enabled: true },
      api_keys: { llm_a: { api_key: s.orgLlm } },
      carrier_a: { account_sid: 'AC-hipaa', auth_token: s.token },
    });
    await addFallbackKey(admin, 'llm_a', 'fb llm', s.fbLlm);
    await addFallbackKey(admin, 'stt_a', 'fb stt', s.fbStt);
    await addFallbackKey(admin, 'tts_a', 'fb tts', s.fbTts);
    // One assistant with its own keys for all three, one with none (organization and fallback keys).
    const own = await createAssistant(admin, {
      llm_a_api_key: s.ownLlm,
      stt_api_key: s.ownStt,
      tts_a_api_key: s.ownTts,
      llm_fallback_providers: { enabled: true, fallbacks: [{ provider: 'llm_b', api_key: s.model }] },
    });
    const bare = await createAssistant(admin);
    await addNumber(admin, { phone_number: longCode(), provider: 'carrier_a', assistant_id: own });

    for (const id of [own, bare]) {
      const config = await resolved(admin, id);
      for (const kind of ['llm', 'stt', 'tts'] as const) {
        expect(config[kind].key, `${kind} of assistant ${id}`).toBeNull();
        expect(config[kind].backups, `${kind} of assistant ${id}`).toEqual([]);
        const lines = linesOf(config, kind);
        expect(lines, kind).toHaveLength(1);
        expect(lines[0]).toContain(BYO_INACTIVE_REASON);
      }
      expect(config.llmFallbacks).toEqual([]);
    }
    // Carrier credentials are no vendor keys: the routed number still resolves.
    const blocked = await resolved(admin, own);
    expect(blocked.telephony).toMatchObject({
      provider: 'carrier_a',
      credentials: { account_sid: 'AC-hipaa', auth_token: s.token },
      source: 'organization',
    });
    expect(blocked.missing).toHaveLength(3);

    await putOrg(admin, { settings: { baa_signed: true } });
    const restored = await resolved(admin, own);
    expect(restored.llm).toMatchObject({
      key: fromAssistant(s.ownLlm),
      backups: [fallback('fb llm', s.fbLlm)],
    });
    expect(restored.stt).toMatchObject({
      key: fromAssistant(s.ownStt),
      backups: [fallback('fb stt', s.fbStt)],
    });
    expect(restored.tts).toMatchObject({
      key: fromAssistant(s.ownTts),
      backups: [fallback('fb tts', s.fbTts)],
    });
    expect(restored.llmFallbacks).toEqual([
      { provider: 'llm_b', apiKey: s.model, model: null, baseUrl: null },
    ]);
    expect(restored.missing).toEqual([]);

    const bareRestored = await resolved(admin, bare);
    expect(bareRestored.llm).toMatchObject({
      key: fromOrganization(s.orgLlm),
      backups: [fallback('fb llm', s.fbLlm)],
    });
    expect(bareRestored.stt).toMatchObject({ key: fallback('fb stt', s.fbStt), backups: [] });
    expect(bareRestored.tts).toMatchObject({ key: fallback('fb tts', s.fbTts), backups: [] });
    expect(bareRestored.missing).toEqual(['telephony: no phone number is routed to this assistant']);
  });

  it('hipaa_enabled false, or true with baa_signed from the start, blocks nothing', async () => {
    for (const settings of [{ hipaa_enabled: false }, { hipaa_enabled: true, baa_signed: true }]) {
      const admin = await f.user();
      const key = secret('llm');
      await putOrg(admin, { settings, api_keys: { llm_a: { api_key: key } } });
      const config = await resolved(admin, await createAssistant(admin));
      expect(config.llm.key, JSON.stringify(settings)).toEqual(fromOrganization(key));
      expect(linesOf(config, 'llm')).toEqual([]);
    }
  });
});

describe('telephony: the phone number and its carrier credentials', () => {
  it('no number routed to the assistant: telephony null and a missing line', async () => {
    const admin = await f.user();
    await putOrg(admin, { carrier_a: { account_sid: 'AC-x', auth_token: secret('tok') } });
    const id = await createAssistant(admin);
    // A number of the organization routed elsewhere, or to nothing, is not the assistant's.
    const elsewhere = await createAssistant(admin);
    await addNumber(admin, { phone_number: longCode(), provider: 'carrier_a', assistant_id: elsewhere });
    await addNumber(admin, { phone_number: longCode(), provider: 'carrier_a' });
    const config = await resolved(admin, id);
    expect(config.telephony).toBeNull();
    expect(linesOf(config, 'telephony')).toEqual(['telephony: no phone number is routed to this assistant']);
  });

  const CARRIERS = [
    {
      provider: 'carrier_a',
      field: 'carrier_a_config',
      own: () => ({ account_sid: 'AC-own', auth_token: secret('own-token') }),
      org: () => ({ account_sid: 'AC-org', auth_token: secret('org-token') }),
    },
    {
      provider: 'carrier_b',
      field: 'carrier_b_config',
      own: () => ({ api_key: secret('own-key'), connection_id: 'conn-own' }),
      org: () => ({ api_key: secret('org-key'), connection_id: 'conn-org' }),
    },
  ];

  it.each(CARRIERS)(
    "$provider: the assistant's $field first, else the organization's $provider, else none",
    async ({ provider, field, own, org }) => {
      const admin = await f.user();
      const ownCredentials = own();
      const orgCredentials = org();
      await putOrg(admin, { [provider]: orgCredentials });
      const withOwn = await createAssistant(admin, { [field]: ownCredentials });
      const without = await createAssistant(admin);
      const ownNumber = longCode();
      const orgNumber = longCode();
      const ownId = await addNumber(admin, { phone_number: ownNumber, provider, assistant_id: withOwn });
      const orgId = await addNumber(admin, { phone_number: orgNumber, provider, assistant_id: without });

      let config = await resolved(admin, withOwn);
      expect(config.telephony).toEqual({
        phoneNumberId: ownId,
        phoneNumber: ownNumber,
        provider,
        credentials: ownCredentials,
        source: 'assistant',
        smsRatePerSecond: 1,
        isTollFree: false,
      });
      expect(linesOf(config, 'telephony')).toEqual([]);

      config = await resolved(admin, without);
      expect(config.telephony).toEqual({
        phoneNumberId: orgId,
        phoneNumber: orgNumber,
        provider,
        credentials: orgCredentials,
        source: 'organization',
        smsRatePerSecond: 1,
        isTollFree: false,
      });
      expect(linesOf(config, 'telephony')).toEqual([]);

      // Without the organization's credentials the number stays, with no credentials and a missing line.
      await putOrg(admin, { [provider]: null });
      config = await resolved(admin, without);
      expect(config.telephony).toMatchObject({
        phoneNumberId: orgId,
        provider,
        credentials: null,
        source: null,
      });
      const lines = linesOf(config, 'telephony');
      expect(lines).toHaveLength(1);
      expect(lines[0]).toContain(provider);
      expect((await resolved(admin, withOwn)).telephony).toMatchObject({
        credentials: ownCredentials,
        source: 'assistant',
      });
    },
  );

  it("an assistant's carrier config counts only for a number of that carrier", async () => {
    const admin = await f.user();
    const orgB = { api_key: secret('org-b'), connection_id: 'conn-org' };
    await putOrg(admin, { carrier_b: orgB });
    const id = await createAssistant(admin, {
      carrier_a_config: { account_sid: 'AC-own', auth_token: secret('own-a') },
    });
    await addNumber(admin, { phone_number: longCode(), provider: 'carrier_b', assistant_id: id });
    const config = await resolved(admin, id);
    expect(config.telephony).toMatchObject({
      provider: 'carrier_b',
      credentials: orgB,
      source: 'organization',
    });
  });

  it("carrier_c: only the organization's credentials", async () => {
    const admin = await f.user();
    const orgC = { application_id: 'app-c', private_key: secret('pem') };
    await putOrg(admin, { carrier_c: orgC });
    const id = await createAssistant(admin, {
      carrier_a_config: { account_sid: 'AC-own', auth_token: secret('own-a') },
      carrier_b_config: { api_key: secret('own-b'), connection_id: 'conn-own' },
    });
    const number = longCode();
    const numberId = await addNumber(admin, {
      phone_number: number,
      provider: 'carrier_c',
      assistant_id: id,
    });
    let config = await resolved(admin, id);
    expect(config.telephony).toEqual({
      phoneNumberId: numberId,
      phoneNumber: number,
      provider: 'carrier_c',
      credentials: orgC,
      source: 'organization',
      smsRatePerSecond: 1,
      isTollFree: false,
    });

    await putOrg(admin, { carrier_c: null });
    config = await resolved(admin, id);
    expect(config.telephony).toMatchObject({ provider: 'carrier_c', credentials: null, source: null });
    expect(linesOf(config, 'telephony')).toHaveLength(1);
    expect(linesOf(config, 'telephony')[0]).toContain('carrier_c');
  });

  it("sip_trunk: the organization's sip_domain with username and password; missing without a sip_domain", async () => {
    const admin = await f.user();
    const password = secret('sip');
    await putOrg(admin, {
      sip_trunk_config: { sip_domain: 'trunk.example.test', username: 'sb-user', password },
    });
    const id = await createAssistant(admin, {
      carrier_a_config: { account_sid: 'AC-own', auth_token: secret('own-a') },
    });
    const number = longCode();
    const numberId = await addNumber(admin, {
      phone_number: number,
      provider: 'sip_trunk',
      assistant_id: id,
    });
    const config = await resolved(admin, id);
    expect(config.telephony).toEqual({
      phoneNumberId: numberId,
      phoneNumber: number,
      provider: 'sip_trunk',
      credentials: { sip_domain: 'trunk.example.test', username: 'sb-user', password },
      source: 'organization',
      smsRatePerSecond: 1,
      isTollFree: false,
    });
    expect(linesOf(config, 'telephony')).toEqual([]);

    // Username and password alone are no trunk.
    const other = await f.user();
    await putOrg(other, { sip_trunk_config: { username: 'sb-user', password: secret('sip') } });
    const otherId = await createAssistant(other);
    await addNumber(other, { phone_number: longCode(), provider: 'sip_trunk', assistant_id: otherId });
    const noDomain = await resolved(other, otherId);
    expect(noDomain.telephony).toMatchObject({ provider: 'sip_trunk', credentials: null, source: null });
    const lines = linesOf(noDomain, 'telephony');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain('sip_domain');

    // No trunk at all: the same.
    const none = await f.user();
    const noneId = await createAssistant(none);
    await addNumber(none, { phone_number: longCode(), provider: 'sip_trunk', assistant_id: noneId });
    const noTrunk = await resolved(none, noneId);
    expect(noTrunk.telephony).toMatchObject({ credentials: null, source: null });
    expect(linesOf(noTrunk, 'telephony')[0]).toContain('sip_domain');
  });

  it('picks the first routed number by default and the number given in phoneNumber otherwise', async () => {
    const admin = await f.user();
    const creds = {
      carrier_a: { account_sid: 'AC-a', auth_token: secret('a') },
      carrier_b: { api_key: secret('b'), connection_id: 'conn-b' },
      carrier_c: { application_id: 'app-c', private_key: secret('c') },
    };
    await putOrg(admin, creds);
    const id = await createAssistant(admin);
    const elsewhere = await createAssistant(admin);
    const [first, second, unrouted, routedElsewhere] = [longCode(), longCode(), longCode(), longCode()];
    const firstId = await addNumber(admin, { phone_number: first, provider: 'carrier_a', assistant_id: id });
    const secondId = await addNumber(admin, {
      phone_number: second,
      provider: 'carrier_b',
      assistant_id: id,
    });
    const unroutedId = await addNumber(admin, { phone_number: unrouted, provider: 'carrier_c' });
    const elsewhereId = await addNumber(admin, {
      phone_number: routedElsewhere,
      provider: 'carrier_a',
      assistant_id: elsewhere,
    });

    const pick = async (phoneNumber?: string) => (await resolved(admin, id, phoneNumber)).telephony;
    expect(await pick()).toMatchObject({ phoneNumberId: firstId, phoneNumber: first, provider: 'carrier_a' });
    expect(await pick(first)).toMatchObject({ phoneNumberId: firstId, provider: 'carrier_a' });
    expect(await pick(second)).toMatchObject({
      phoneNumberId: secondId,
      phoneNumber: second,
      provider: 'carrier_b',
      credentials: creds.carrier_b,
      source: 'organization',
    });
    // The number a message goes out from need not route calls to this assistant.
    expect(await pick(unrouted)).toMatchObject({
      phoneNumberId: unroutedId,
      provider: 'carrier_c',
      credentials: creds.carrier_c,
    });
    expect(await pick(routedElsewhere)).toMatchObject({ phoneNumberId: elsewhereId, provider: 'carrier_a' });

    // The first routed number unrouted: the next one is the default.
    const put = await t.app.inject({
      method: 'PUT',
      url: `/api/v1/phone-numbers/${firstId}`,
      headers: admin.headers,
      payload: { assistant_id: null },
    });
    expect(put.statusCode, put.body).toBe(200);
    expect(await pick()).toMatchObject({ phoneNumberId: secondId, phoneNumber: second });
  });

  it('a phoneNumber of another organization, or of none, gives no telephony and a missing line', async () => {
    const admin = await f.user();
    const stranger = await f.user();
    await putOrg(admin, { carrier_a: { account_sid: 'AC-mine', auth_token: secret('mine') } });
    const theirToken = secret('theirs');
    await putOrg(stranger, { carrier_a: { account_sid: 'AC-theirs', auth_token: theirToken } });
    const id = await createAssistant(admin);
    await addNumber(admin, { phone_number: longCode(), provider: 'carrier_a', assistant_id: id });
    const theirAssistant = await createAssistant(stranger);
    const theirs = longCode();
    await addNumber(stranger, { phone_number: theirs, provider: 'carrier_a', assistant_id: theirAssistant });

    for (const phoneNumber of [theirs, longCode()]) {
      const config = await resolved(admin, id, phoneNumber);
      expect(config.telephony, phoneNumber).toBeNull();
      expect(linesOf(config, 'telephony')).toEqual([
        `telephony: ${phoneNumber} is not a phone number of this organization`,
      ]);
      expect(JSON.stringify(config)).not.toContain(theirToken);
      expect(JSON.stringify(config)).not.toContain('AC-theirs');
    }
  });

  it('smsRatePerSecond and isTollFree reflect the number', async () => {
    const admin = await f.user();
    await putOrg(admin, { carrier_a: { account_sid: 'AC-sms', auth_token: secret('sms') } });
    const id = await createAssistant(admin);
    const cases = [
      { phone_number: longCode(), sms_rate_per_second: undefined, rate: 1, tollFree: false },
      { phone_number: tollFree(), sms_rate_per_second: undefined, rate: 3, tollFree: true },
      { phone_number: longCode(), sms_rate_per_second: 2.5, rate: 2.5, tollFree: false },
      { phone_number: tollFree(), sms_rate_per_second: 10, rate: 10, tollFree: true },
    ];
    for (const c of cases) {
      await addNumber(admin, {
        phone_number: c.phone_number,
        provider: 'carrier_a',
        assistant_id: id,
        ...(c.sms_rate_per_second === undefined ? {} : { sms_rate_per_second: c.sms_rate_per_second }),
      });
    }
    for (const c of cases) {
      const telephony = (await resolved(admin, id, c.phone_number)).telephony;
      expect(telephony, c.phone_number).toMatchObject({
        phoneNumber: c.phone_number,
        smsRatePerSecond: c.rate,
        isTollFree: c.tollFree,
      });
    }
  });
});

describe('secrets', () => {
  it('come back in clear, in the settings too, never sealed or masked', async () => {
    const admin = await f.user();
    const s = {
      llm: secret('llm'),
      fallback: secret('fallback-model'),
      carrierA: secret('carrier-a'),
      carrierB: secret('carrier-b'),
      stt: secret('stt'),
      tts: secret('tts'),
      ttsProvider: secret('tts-provider'),
    };
    const id = await createAssistant(admin, {
      llm_provider_config: { api_key: s.llm, model: 'm' },
      llm_fallback_providers: { enabled: true, fallbacks: [{ provider: 'llm_b', api_key: s.fallback }] },
      carrier_a_config: { account_sid: 'AC-clear', auth_token: s.carrierA },
      carrier_b_config: { api_key: s.carrierB, connection_id: 'conn-clear' },
      stt_settings: { api_key: s.stt },
      tts_settings: {
        provider: 'tts_b',
        api_key: s.tts,
        provider_config: { api_key: s.ttsProvider, region: 'eu' },
      },
    });
    await addNumber(admin, { phone_number: longCode(), provider: 'carrier_a', assistant_id: id });
    const config = await resolved(admin, id);
    expect(config.settings).toMatchObject({
      llm_provider_config: { api_key: s.llm, model: 'm' },
      llm_fallback_providers: { enabled: true, fallbacks: [{ provider: 'llm_b', api_key: s.fallback }] },
      carrier_a_config: { account_sid: 'AC-clear', auth_token: s.carrierA },
      carrier_b_config: { api_key: s.carrierB, connection_id: 'conn-clear' },
      stt_settings: { api_key: s.stt },
      tts_settings: {
        provider: 'tts_b',
        api_key: s.tts,
        provider_config: { api_key: s.ttsProvider, region: 'eu' },
      },
    });
    expect(config.llm.key).toEqual(fromAssistant(s.llm));
    expect(config.stt.key).toEqual(fromAssistant(s.stt));
    // tts_settings.api_key goes before provider_config.api_key.
    expect(config.tts.key).toEqual(fromAssistant(s.tts));
    expect(config.tts.providerConfig).toEqual({ api_key: s.ttsProvider, region: 'eu' });
    expect(config.telephony?.credentials).toEqual({ account_sid: 'AC-clear', auth_token: s.carrierA });
    const text = JSON.stringify(config);
    expect(text).not.toContain('****');
    expect(text).not.toMatch(/"v1\.[A-Za-z0-9_-]+\./);
  });
});

describe('tenant isolation', () => {
  it("another organization's assistant (or no assistant) resolves to undefined", async () => {
    const mine = await f.user();
    const theirs = await f.user();
    const myAssistant = await createAssistant(mine, { llm_a_api_key: secret('mine') });
    const theirAssistant = await createAssistant(theirs, { llm_a_api_key: secret('theirs') });
    expect(await resolve(mine, theirAssistant)).toBeUndefined();
    expect(await resolve(theirs, myAssistant)).toBeUndefined();
    expect(await resolve(mine, theirAssistant, '+14155552671')).toBeUndefined();
    expect(await resolve(mine, 2_000_000_000)).toBeUndefined();
    expect((await resolve(mine, myAssistant))?.assistant.id).toBe(myAssistant);
  });

  it("another organization's keys, fallback keys and carriers are never used", async () => {
    const mine = await f.user();
    const theirs = await f.user();
    const s = {
      llm: secret('their-llm'),
      stt: secret('their-stt'),
      tts: secret('their-tts'),
      tok: secret('tok'),
    };
    await putOrg(theirs, {
      api_keys: { llm_a: { api_key: s.llm } },
      carrier_a: { account_sid: 'AC-theirs', auth_token: s.tok },
    });
    await addFallbackKey(theirs, 'stt_a', 'their spare', s.stt);
    await addFallbackKey(theirs, 'tts_a', 'their spare', s.tts);
    const id = await createAssistant(mine);
    await addNumber(mine, { phone_number: longCode(), provider: 'carrier_a', assistant_id: id });
    const config = await resolved(mine, id);
    for (const kind of ['llm', 'stt', 'tts'] as const) {
      expect(config[kind].key, kind).toBeNull();
      expect(config[kind].backups, kind).toEqual([]);
    }
    expect(config.telephony).toMatchObject({ provider: 'carrier_a', credentials: null, source: null });
    expect(config.missing.map((m) => m.split(':')[0]).sort()).toEqual(['llm', 'stt', 'telephony', 'tts']);
    const text = JSON.stringify(config);
    for (const value of Object.values(s)) expect(text).not.toContain(value);
  });
});

describe('everything configured', () => {
  it('missing is empty and every part is filled in', async () => {
    const admin = await f.user();
    const s = { llm: secret('llm'), stt: secret('stt'), tts: secret('tts'), tok: secret('tok') };
    await putOrg(admin, {
      api_keys: { llm_a: { api_key: s.llm }, stt_a: { api_key: s.stt }, tts_a: { api_key: s.tts } },
      carrier_a: { account_sid: 'AC-all', auth_token: s.tok },
    });
    const id = await createAssistant(admin, { name: 'Front desk' });
    const number = tollFree();
    const numberId = await addNumber(admin, {
      phone_number: number,
      provider: 'carrier_a',
      assistant_id: id,
    });
    const config = await resolved(admin, id);
    expect(config.missing).toEqual([]);
    expect(config.assistant).toEqual({ id, name: 'Front desk', isActive: true, llmProvider: 'llm_a' });
    expect(config.llm).toEqual({
      provider: 'llm_a',
      key: fromOrganization(s.llm),
      backups: [],
      model: null,
      baseUrl: null,
    });
    expect(config.llmFallbacks).toEqual([]);
    expect(config.stt).toEqual({
      provider: 'stt_a',
      key: fromOrganization(s.stt),
      backups: [],
      model: 'nova-3',
      language: 'en-US',
    });
    expect(config.tts).toEqual({
      provider: 'tts_a',
      key: fromOrganization(s.tts),
      backups: [],
      providerConfig: {},
    });
    expect(config.telephony).toEqual({
      phoneNumberId: numberId,
      phoneNumber: number,
      provider: 'carrier_a',
      credentials: { account_sid: 'AC-all', auth_token: s.tok },
      source: 'organization',
      smsRatePerSecond: 3,
      isTollFree: true,
    });
  });

  it('an inactive assistant still resolves, showing isActive false', async () => {
    const admin = await f.user();
    const id = await createAssistant(admin, { is_active: false });
    expect((await resolved(admin, id)).assistant).toMatchObject({ id, isActive: false });
  });
});
