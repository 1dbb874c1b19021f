/**
 * The organization routes as the organization-*.test.ts files call them, and what those files read
 * back from the database: the stored credential opened with the test key, so a "kept" or "removed"
 * secret is proven, not inferred from its mask.
 */
import { randomBytes } from 'node:crypto';
import { expect } from 'vitest';
import { SecretBox } from '../../src/lib/secrets.js';
import type { TestUser } from './factories.js';
import { TEST_SECRET_KEY, type TestPlatform } from './harness.js';

export const ORG = '/api/v1/organization';
export const CREATE = '/api/v1/organization/create';
export const STATUS = '/api/v1/organization/configuration-status';
export const CONCURRENCY = '/api/v1/organization/concurrency-settings';
export const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;
export const VENDORS = [
  'llm_a',
  'llm_b',
  'llm_c',
  'llm_d',
  'llm_e',
  'stt_a',
  'tts_a',
  'tts_b',
  'tts_c',
  'tts_d',
];
export const ORGANIZATION_FIELDS = [
  'api_keys',
  'carrier_a',
  'carrier_b',
  'carrier_c',
  'cloud_functions',
  'created_at',
  'description',
  'domain',
  'id',
  'inactive_keys',
  'name',
  'settings',
  'sip_trunk_config',
  'slug',
  'updated_at',
].sort();

export type Headers = Record<string, string>;
export type Json = Record<string, unknown>;

/** A secret long enough to be masked as `****` + its last four characters. */
export const secret = (label: string) => `${label}-${randomBytes(12).toString('hex')}`;
export const uniqueSlug = (label = 'org') => `${label}-${randomBytes(4).toString('hex')}`;

/** The requests and database reads, bound to the file's platform (a `useTestPlatform` handle). */
export function organizationApi(t: TestPlatform) {
  const box = new SecretBox(TEST_SECRET_KEY);

  const getOrg = (headers: Headers) => t.app.inject({ method: 'GET', url: ORG, headers });
  const putOrg = (headers: Headers, payload: unknown) =>
    t.app.inject({ method: 'PUT', url: ORG, headers, payload: payload as object });
  const createOrg = (headers: Headers, payload: unknown) =>
    t.app.inject({ method: 'POST', url: CREATE, headers, payload: payload as object });
  const getStatus = (headers: Headers) => t.app.inject({ method: 'GET', url: STATUS, headers });
  const getConcurrency = (headers: Headers) => t.app.inject({ method: 'GET', url: CONCURRENCY, headers });
  const putConcurrency = (headers: Headers, payload: unknown) =>
    t.app.inject({ method: 'PUT', url: CONCURRENCY, headers, payload: payload as object });
  const postFallback = (headers: Headers, provider: string, payload: unknown) =>
    t.app.inject({
      method: 'POST',
      url: `/api/v1/organization/fallback-keys/${provider}`,
      headers,
      payload: payload as object,
    });

  async function organizationOf(user: { headers: Headers }): Promise<Json> {
    const response = await getOrg(user.headers);
    expect(response.statusCode, response.body).toBe(200);
    return response.json();
  }

  /** The credential stored for (organization, provider), opened with the test key; undefined if none. */
  async function storedCredential(organizationId: number, provider: string) {
    const { rows } = await t.database.executeSql(
      'select sealed from provider_credentials where organization_id = $1 and provider = $2',
      [organizationId, provider],
    );
    const sealed = rows[0]?.sealed;
    return typeof sealed === 'string' ? box.openJson<Record<string, string>>(sealed) : undefined;
  }

  async function countCredentials(organizationId: number): Promise<number> {
    const { rows } = await t.database.executeSql(
      'select count(*)::int as n from provider_credentials where organization_id = $1',
      [organizationId],
    );
    return Number(rows[0]?.n);
  }

  async function balanceOf(headers: Headers): Promise<number> {
    const response = await t.app.inject({ method: 'GET', url: '/v1/billing/wallet', headers });
    expect(response.statusCode, response.body).toBe(200);
    return response.json().balance;
  }

  async function switchTo(user: TestUser, organizationId: number) {
    return t.app.inject({
      method: 'POST',
      url: '/api/v1/auth/switch-organization',
      headers: user.headers,
      payload: { organization_id: organizationId },
    });
  }

  return {
    getOrg,
    putOrg,
    createOrg,
    getStatus,
    getConcurrency,
    putConcurrency,
    postFallback,
    organizationOf,
    storedCredential,
    countCredentials,
    balanceOf,
    switchTo,
  };
}
