/**
 * PUT /api/v1/organization refused: each validation rule (422, nothing changed) and who may change
 * the organization.
 * Split from the former organization.test.ts. The tests share one platform and database; each creates
 * the users and organizations it needs.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { expectValidation } from './support/assertions.js';
import { Factories, type TestUser } from './support/factories.js';
import { useTestPlatform } from './support/harness.js';
import { type Json, ORG, organizationApi, secret } from './support/organization-api.js';

// Its close lets the verification mails of the users made here finish before the database closes.
const t = useTestPlatform();
const { getOrg, putOrg, organizationOf, countCredentials } = organizationApi(t);
let f: Factories;

beforeAll(() => {
  f = new Factories(t);
});

describe('PUT /api/v1/organization', () => {
  describe('bad input answers 422 and changes nothing', () => {
    let admin: TestUser;
    let before: Json;
    beforeAll(async () => {
      admin = await f.user();
      const setup = await putOrg(admin.headers, {
        name: 'Stable',
        settings: { default_timezone: 'Europe/Paris' },
        api_keys: { llm_a: { api_key: secret('stable-llm') } },
        carrier_a: { account_sid: 'AC-stable', auth_token: secret('stable-token') },
      });
      expect(setup.statusCode, setup.body).toBe(200);
      before = setup.json();
    });

    it('empty name, name over 200 characters, name not a string', async () => {
      expectValidation(await putOrg(admin.headers, { name: '' }), ['body', 'name'], 'string_too_short');
      expectValidation(
        await putOrg(admin.headers, { name: 'n'.repeat(201) }),
        ['body', 'name'],
        'string_too_long',
      );
      expectValidation(await putOrg(admin.headers, { name: { first: 'x' } }), ['body', 'name']);
    });

    it('unknown vendor in api_keys (extra_forbidden)', async () => {
      for (const vendor of ['llm_z', 'carrier_a', 'custom', 'LLM_A', 'stt_b']) {
        expectValidation(
          await putOrg(admin.headers, { api_keys: { [vendor]: { api_key: secret('x') } } }),
          ['body', 'api_keys', vendor],
          'extra_forbidden',
        );
      }
    });

    it('a vendor key without api_key, empty, or with another field', async () => {
      expectValidation(
        await putOrg(admin.headers, { api_keys: { llm_a: {} } }),
        ['body', 'api_keys', 'llm_a', 'api_key'],
        'missing',
      );
      expectValidation(await putOrg(admin.headers, { api_keys: { llm_a: { api_key: '' } } }), [
        'body',
        'api_keys',
        'llm_a',
        'api_key',
      ]);
      expectValidation(
        await putOrg(admin.headers, { api_keys: { llm_a: { api_key: secret('x'), model: 'm' } } }),
        ['body', 'api_keys', 'llm_a', 'model'],
        'extra_forbidden',
      );
      expectValidation(await putOrg(admin.headers, { api_keys: { llm_a: 'bare-string-key' } }), [
        'body',
        'api_keys',
        'llm_a',
      ]);
    });

    it('carrier credentials with a field missing, empty or unknown', async () => {
      expectValidation(
        await putOrg(admin.headers, { carrier_a: { account_sid: 'AC1' } }),
        ['body', 'carrier_a', 'auth_token'],
        'missing',
      );
      expectValidation(
        await putOrg(admin.headers, { carrier_a: { auth_token: secret('t') } }),
        ['body', 'carrier_a', 'account_sid'],
        'missing',
      );
      expectValidation(await putOrg(admin.headers, { carrier_a: { account_sid: 'AC1', auth_token: '' } }), [
        'body',
        'carrier_a',
        'auth_token',
      ]);
      expectValidation(
        await putOrg(admin.headers, { carrier_b: { api_key: secret('k') } }),
        ['body', 'carrier_b', 'connection_id'],
        'missing',
      );
      expectValidation(
        await putOrg(admin.headers, { carrier_b: { connection_id: 'c' } }),
        ['body', 'carrier_b', 'api_key'],
        'missing',
      );
      expectValidation(
        await putOrg(admin.headers, { carrier_c: { application_id: 'a' } }),
        ['body', 'carrier_c', 'private_key'],
        'missing',
      );
      expectValidation(
        await putOrg(admin.headers, {
          carrier_a: { account_sid: 'AC1', auth_token: secret('t'), region: 'eu' },
        }),
        ['body', 'carrier_a', 'region'],
        'extra_forbidden',
      );
    });

    it('a SIP trunk with a wrong type or an unknown field', async () => {
      expectValidation(await putOrg(admin.headers, { sip_trunk_config: { inbound_enabled: 'sometimes' } }), [
        'body',
        'sip_trunk_config',
        'inbound_enabled',
      ]);
      expectValidation(await putOrg(admin.headers, { sip_trunk_config: { sip_domain: '' } }), [
        'body',
        'sip_trunk_config',
        'sip_domain',
      ]);
      expectValidation(
        await putOrg(admin.headers, {
          sip_trunk_config: { sip_domain: 'x.example.com', proxy: 'p.example.com' },
        }),
        ['body', 'sip_trunk_config', 'proxy'],
        'extra_forbidden',
      );
      expectValidation(
        await putOrg(admin.headers, { sip_trunk_config: { sip_domain: 'x.example.com', port: 70000 } }),
        ['body', 'sip_trunk_config', 'port'],
      );
      expectValidation(
        await putOrg(admin.headers, { sip_trunk_config: { sip_domain: 'x.example.com', transport: 'sctp' } }),
        ['body', 'sip_trunk_config', 'transport'],
      );
    });

    it('SIP trunk inbound addresses that are not addresses or CIDR blocks, naming the entry', async () => {
      for (const bad of ['999.1.1.1', '10.0.0.0/33', '2001:db8::/129', '1.2.3.4/8/8', '::g']) {
        expectValidation(
          await putOrg(admin.headers, {
            sip_trunk_config: { sip_domain: 'x.example.com', inbound_addresses: ['192.0.2.10', bad] },
          }),
          ['body', 'sip_trunk_config', 'inbound_addresses', 1],
        );
      }
    });

    it('an unknown time zone in settings.default_timezone', async () => {
      for (const zone of ['Mars/Olympus_Mons', 'Europe/Atlantis', 'not a zone']) {
        expectValidation(await putOrg(admin.headers, { settings: { default_timezone: zone } }), [
          'body',
          'settings',
          'default_timezone',
        ]);
      }
      expectValidation(await putOrg(admin.headers, { settings: { default_timezone: '' } }), [
        'body',
        'settings',
        'default_timezone',
      ]);
    });

    it('settings that are not an object, or known flags that are not booleans', async () => {
      expectValidation(await putOrg(admin.headers, { settings: 'hipaa' }), ['body', 'settings']);
      expectValidation(await putOrg(admin.headers, { settings: { hipaa_enabled: 'maybe' } }), [
        'body',
        'settings',
        'hipaa_enabled',
      ]);
      expectValidation(await putOrg(admin.headers, { settings: { baa_signed: 'maybe' } }), [
        'body',
        'settings',
        'baa_signed',
      ]);
    });

    it('a valid part next to an invalid part is not applied either', async () => {
      const response = await putOrg(admin.headers, {
        name: 'Half applied',
        settings: { default_timezone: 'Mars/Olympus_Mons' },
      });
      expectValidation(response, ['body', 'settings', 'default_timezone']);
    });

    it('left the organization as it was', async () => {
      const after = await organizationOf(admin);
      expect(after).toEqual(before);
      expect(after.name).toBe('Stable');
    });
  });

  describe('who may change it', () => {
    it('refuses without credentials (401)', async () => {
      const response = await putOrg({}, { name: 'x' });
      expect(response.statusCode).toBe(401);
      expect(typeof response.json().detail).toBe('string');
    });

    it('refuses a member who is not an admin (403) and changes nothing', async () => {
      const admin = await f.user();
      const before = await organizationOf(admin);
      const member = await f.member(admin.organizationId, 'user');
      const response = await putOrg(member.headers, {
        name: 'Taken over',
        carrier_a: { account_sid: 'AC-evil', auth_token: secret('evil') },
        settings: { hipaa_enabled: true },
      });
      expect(response.statusCode, response.body).toBe(403);
      expect(response.json().detail).toMatch(/admin/i);
      expect(await organizationOf(admin)).toEqual(before);
      expect(await countCredentials(admin.organizationId)).toBe(0);
    });

    it('a second admin of the organization may change it', async () => {
      const admin = await f.user();
      const second = await f.member(admin.organizationId, 'admin');
      const response = await putOrg(second.headers, { name: 'Changed by second admin' });
      expect(response.statusCode, response.body).toBe(200);
      expect((await organizationOf(admin)).name).toBe('Changed by second admin');
    });

    it('API keys: no organization area → 403; read → GET only; read_write of an admin → PUT', async () => {
      const admin = await f.user();
      const before = await organizationOf(admin);
      const none = await f.apiKey(admin, { permissions: { assistants: 'read_write', calls: 'read_write' } });
      const read = await f.apiKey(admin, { permissions: { organization: 'read' } });
      const write = await f.apiKey(admin, { permissions: { organization: 'read_write' } });

      const noneGet = await getOrg(none.headers);
      expect(noneGet.statusCode, noneGet.body).toBe(403);
      expect(noneGet.body).not.toContain(String(before.slug));
      expect((await putOrg(none.headers, { name: 'via none' })).statusCode).toBe(403);

      const readGet = await getOrg(read.headers);
      expect(readGet.statusCode, readGet.body).toBe(200);
      expect(readGet.json()).toEqual(before);
      const readPut = await putOrg(read.headers, { name: 'via read' });
      expect(readPut.statusCode, readPut.body).toBe(403);
      expect(readPut.json().detail).toMatch(/organization/);
      expect((await organizationOf(admin)).name).toBe(before.name);

      const writePut = await putOrg(write.headers, { name: 'via read_write' });
      expect(writePut.statusCode, writePut.body).toBe(200);
      expect((await organizationOf(admin)).name).toBe('via read_write');
    });

    it('an API key of a member who is not an admin cannot PUT, even with read_write', async () => {
      const admin = await f.user();
      const member = await f.member(admin.organizationId, 'user');
      const key = await f.apiKey(member, { permissions: { organization: 'read_write' } });
      expect((await getOrg(key.headers)).statusCode).toBe(200);
      const response = await putOrg(key.headers, { name: 'via member key' });
      expect(response.statusCode, response.body).toBe(403);
    });

    it('a session cookie needs X-CSRF-Token to PUT', async () => {
      const admin = await f.user();
      const cookies = { sb_session: admin.sessionCookie };
      const without = await t.app.inject({
        method: 'PUT',
        url: ORG,
        cookies,
        payload: { name: 'via cookie' },
      });
      expect(without.statusCode).toBe(403);
      expect((await organizationOf(admin)).name).not.toBe('via cookie');
      const withCsrf = await t.app.inject({
        method: 'PUT',
        url: ORG,
        cookies,
        headers: { 'x-csrf-token': admin.csrfToken },
        payload: { name: 'via cookie' },
      });
      expect(withCsrf.statusCode, withCsrf.body).toBe(200);
      expect((await organizationOf(admin)).name).toBe('via cookie');
    });

    it('GET refuses without credentials (401)', async () => {
      const response = await getOrg({});
      expect(response.statusCode).toBe(401);
      expect(Object.keys(response.json())).toEqual(['detail']);
    });
  });
});
