/**
 * PUT /api/v1/organization: changing the name, settings and stored credentials (checked in the
 * database, opened with the test key), and vendor keys kept inactive under HIPAA without an agreement.
 * Split from the former organization.test.ts. The tests share one platform and database; each creates
 * the users and organizations it needs.
 */
import { randomBytes } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { expectValidation } from './support/assertions.js';
import { Factories } from './support/factories.js';
import { useTestPlatform } from './support/harness.js';
import {
  type Json,
  ORGANIZATION_FIELDS,
  organizationApi,
  secret,
  VENDORS,
} from './support/organization-api.js';
import { masked } from './support/secrets.js';

// Its close lets the verification mails of the users made here finish before the database closes.
const t = useTestPlatform();
const { getOrg, putOrg, organizationOf, storedCredential, countCredentials } = organizationApi(t);
let f: Factories;

beforeAll(() => {
  f = new Factories(t);
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

    // How the trunk is reached and who may call in: kept in clear with the domain.
    const reach = {
      sip_domain: 'trunk.example.com',
      port: 5080,
      transport: 'tcp',
      inbound_addresses: ['192.0.2.10', '198.51.100.0/24', '2001:db8::/32'],
      register: true,
      password,
    };
    const reached = await putOrg(admin.headers, { sip_trunk_config: reach });
    expect(reached.statusCode, reached.body).toBe(200);
    expect(reached.json().sip_trunk_config).toEqual({
      ...reach,
      username: 'sb-user',
      password: masked(password),
    });

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
});
