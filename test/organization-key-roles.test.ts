/**
 * Who may change organization-level keys (issue 14, item 7): the organization's `api_keys` (and its
 * carrier and SIP credentials, in the same PUT), its fallback keys and its LLM presets are written by
 * admins only. A member gets 403 by token and by an API key with organization read_write, an admin's
 * API key that may only read the organization gets 403, and nothing changes; an admin may, by token
 * and by a read_write API key. The tests share one platform; each makes the organization it needs.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Factories, type TestUser } from './support/factories.js';
import { startTestPlatform, type TestPlatform } from './support/harness.js';
import { secret } from './support/secrets.js';

type Json = Record<string, unknown>;

let t: TestPlatform;
let f: Factories;
beforeAll(async () => {
  t = await startTestPlatform();
  f = new Factories(t);
});
afterAll(() => t.close());

const PRESETS = '/api/v1/organization/llm-presets';

function call(method: string, url: string, headers: Record<string, string>, payload?: Json) {
  return t.app.inject({ method: method as 'PUT', url, headers, ...(payload ? { payload } : {}) });
}

async function expectCreated(response: Awaited<ReturnType<typeof call>>): Promise<Json> {
  expect([200, 201], response.body).toContain(response.statusCode);
  return response.json();
}

describe('only an admin changes organization-level keys', () => {
  /** Every route that writes an organization-level key, given the ids an admin created. */
  function writes(ids: { preset: number; fallback: number }) {
    const presetUrl = `${PRESETS}/${ids.preset}`;
    const fallbackUrl = `/api/v1/organization/fallback-keys/llm_a/${ids.fallback}`;
    return [
      ['PUT', '/api/v1/organization', { api_keys: { llm_a: { api_key: secret('org') } } }],
      ['POST', '/api/v1/organization/fallback-keys/llm_a', { name: secret('name'), api_key: secret('fb') }],
      ['PUT', fallbackUrl, { api_key: secret('fb') }],
      ['DELETE', fallbackUrl, undefined],
      ['POST', PRESETS, { name: secret('name'), provider: 'llm_a', model: 'm', api_key: secret('p') }],
      ['PUT', presetUrl, { api_key: secret('p') }],
      ['DELETE', presetUrl, undefined],
    ] as const;
  }

  async function organizationWithKeys() {
    const admin = await f.user();
    const preset = await expectCreated(
      await call('POST', PRESETS, admin.headers, {
        name: 'p',
        provider: 'llm_a',
        model: 'm',
        api_key: secret('p'),
      }),
    );
    const fallback = await expectCreated(
      await call('POST', '/api/v1/organization/fallback-keys/llm_a', admin.headers, {
        name: 'f',
        api_key: secret('f'),
      }),
    );
    return { admin, ids: { preset: preset.id as number, fallback: fallback.id as number } };
  }

  /** What the organization's keys look like to its admin (masked), to see that nothing changed. */
  async function keysOf(admin: TestUser) {
    const [organization, presets, fallbacks] = await Promise.all([
      call('GET', '/api/v1/organization', admin.headers),
      call('GET', PRESETS, admin.headers),
      call('GET', '/api/v1/organization/fallback-keys/llm_a', admin.headers),
    ]);
    return { api_keys: organization.json().api_keys, presets: presets.json(), fallbacks: fallbacks.json() };
  }

  it('a member who is not admin gets 403 on every such route, by token and by API key, and nothing changes', async () => {
    const { admin, ids } = await organizationWithKeys();
    const member = await f.member(admin.organizationId, 'user');
    const memberKey = await f.apiKey(member, { permissions: { organization: 'read_write' } });
    const before = await keysOf(admin);
    for (const who of [member, memberKey]) {
      for (const [method, url, payload] of writes(ids)) {
        const response = await call(method, url, who.headers, payload);
        expect(response.statusCode, `${method} ${url}: ${response.body}`).toBe(403);
        expect(response.json().detail).toMatch(/admin/i);
      }
    }
    expect(await keysOf(admin)).toEqual(before);
    // Reading stays open to members: the keys masked.
    expect((await call('GET', PRESETS, member.headers)).statusCode).toBe(200);
    expect((await call('GET', '/api/v1/organization/fallback-keys/llm_a', member.headers)).statusCode).toBe(
      200,
    );
  });

  it("an admin's API key that may only read the organization gets 403 on every such route", async () => {
    const { admin, ids } = await organizationWithKeys();
    const viewer = await f.apiKey(admin, { permissions: { organization: 'read' } });
    const before = await keysOf(admin);
    for (const [method, url, payload] of writes(ids)) {
      const response = await call(method, url, viewer.headers, payload);
      expect(response.statusCode, `${method} ${url}: ${response.body}`).toBe(403);
    }
    expect(await keysOf(admin)).toEqual(before);
  });

  it('an admin may, by token and by an API key with organization read_write', async () => {
    for (const useKey of [false, true]) {
      const { admin, ids } = await organizationWithKeys();
      const who = useKey ? await f.apiKey(admin, { permissions: { organization: 'read_write' } }) : admin;
      for (const [method, url, payload] of writes(ids)) {
        const response = await call(method, url, who.headers, payload);
        expect([200, 201, 204], `${method} ${url}: ${response.body}`).toContain(response.statusCode);
      }
    }
  });
});
