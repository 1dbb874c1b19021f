/**
 * Issue 3's acceptance check on secrets: known secrets are stored through every route that takes
 * one (organization vendor keys, carrier credentials, the SIP password, LLM preset keys, fallback
 * keys, a user API key, the account password), then
 * - every GET operation the OpenAPI document lists is called (path parameters filled with the ids
 *   made here) and no response — body or headers — contains any stored secret in full, except the
 *   admin-only preset `apply`, which must contain exactly its own preset's key;
 * - the raw rows of provider_credentials, llm_presets and fallback_keys hold the secrets only
 *   sealed (and the seal opens to them), and no table of the database holds one in clear;
 * - no log line and no mail contains one.
 * All tests share the one platform set up in beforeAll, in order.
 */
import { randomBytes } from 'node:crypto';
import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Tenant } from '../src/db/tenant.js';
import { insertAnalysis, settleAnalysis } from '../src/domains/analysis/store.js';
import { SecretBox } from '../src/lib/secrets.js';
import { CarrierASimulator } from '../src/sim/carrier-a.js';
import { MULAW_8K } from '../src/voice/audio.js';
import { seedCall } from './support/call-seed.js';
import { Factories, type TestApiKey, type TestUser } from './support/factories.js';
import { TEST_SECRET_KEY, useTestPlatform, verificationToken, waitFor } from './support/harness.js';

interface Secret {
  label: string;
  value: string;
  /** Parts that must not appear either (the random part of the secret). */
  cores: string[];
}

interface Operation {
  path: string;
  parameters: Array<{ in: string; name: string; required?: boolean }>;
}

interface Exercised {
  operation: string;
  url: string;
  status: number;
}

const VENDORS = ['llm_a', 'llm_b', 'llm_c', 'llm_d', 'llm_e', 'stt_a', 'tts_a', 'tts_b', 'tts_c', 'tts_d'];
const SEALED = /^v1\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$/;

const carrier = new CarrierASimulator();
// The carrier's hooks come first: it starts before the platform and stops after it has closed.
beforeAll(() => carrier.start());
afterAll(() => carrier.stop());
const t = useTestPlatform(() => ({ CARRIER_A_BASE_URL: carrier.baseUrl }));
let f: Factories;
let admin: TestUser;
let member: TestUser;
let apiKey: TestApiKey;
let invitationToken: string;
let emailToken: string;
const box = new SecretBox(TEST_SECRET_KEY);

/** Every secret stored (or once stored and since replaced), by label. */
const secrets = new Map<string, Secret>();
/** What is stored now: provider → credential, preset id → key, fallback key id → key. */
const credentials = new Map<string, Record<string, string>>();
const presetKeys = new Map<number, string | null>();
const fallbackKeys = new Map<number, { provider: string; key: string }>();

function remember(label: string, value: string, cores: string[]): string {
  secrets.set(label, { label, value, cores });
  return value;
}
/** `<label>-<48 random hex>`; the random part is a core of its own. */
function makeSecret(label: string): string {
  const core = randomBytes(24).toString('hex');
  return remember(label, `${label}-${core}`, [core]);
}

/** The strings whose presence in `text` would reveal a secret. */
function revealing(secret: Secret): string[] {
  return [secret.value, JSON.stringify(secret.value).slice(1, -1), ...secret.cores];
}

/** Labels of the secrets that `text` reveals, leaving out `allowed`. */
function leaks(text: string, allowed: ReadonlySet<string> = new Set()): string[] {
  const found: string[] = [];
  for (const secret of secrets.values()) {
    if (allowed.has(secret.label)) continue;
    if (revealing(secret).some((s) => text.includes(s))) found.push(secret.label);
  }
  return found;
}

function responseText(response: LightMyRequestResponse): string {
  return `${JSON.stringify(response.headers)}\n${response.body}`;
}

/** JSON of raw rows: bigints as strings, bytes as UTF-8 text, so a secret in any column shows. */
function rowsText(rows: unknown[]): string {
  return JSON.stringify(rows, (_key, value) => {
    if (typeof value === 'bigint') return value.toString();
    if (value instanceof Uint8Array) return Buffer.from(value).toString('utf8');
    return value;
  });
}

async function expectCreated(response: LightMyRequestResponse) {
  expect(response.statusCode, response.body).toBe(201);
  return response.json();
}

beforeAll(async () => {
  f = new Factories(t);
  admin = await f.user({ organizationName: 'Secret Keepers' });
  remember('admin password', admin.password, []);
  member = await f.member(admin.organizationId, 'user');

  // Organization credentials: a key per vendor, the three carriers, the SIP trunk.
  const apiKeys: Record<string, { api_key: string }> = {};
  for (const vendor of VENDORS) {
    const value = makeSecret(`api_keys.${vendor}`);
    apiKeys[vendor] = { api_key: value };
    credentials.set(vendor, { api_key: value });
  }
  const carrierA = { account_sid: 'AC-visible-sid', auth_token: makeSecret('carrier_a.auth_token') };
  const carrierB = { api_key: makeSecret('carrier_b.api_key'), connection_id: 'visible-connection' };
  const pemBody = randomBytes(96).toString('base64');
  const carrierC = {
    application_id: 'visible-application',
    private_key: remember(
      'carrier_c.private_key',
      `-----BEGIN PRIVATE KEY-----\n${pemBody.slice(0, 64)}\n${pemBody.slice(64)}\n-----END PRIVATE KEY-----`,
      [pemBody.slice(0, 64), pemBody.slice(64)],
    ),
  };
  const sip = { username: 'visible-sip-user', password: makeSecret('sip_trunk.password') };
  const put = await t.app.inject({
    method: 'PUT',
    url: '/api/v1/organization',
    headers: admin.headers,
    payload: {
      api_keys: apiKeys,
      carrier_a: carrierA,
      carrier_b: carrierB,
      carrier_c: carrierC,
      sip_trunk_config: { sip_domain: 'trunk.example.com', inbound_enabled: true, ...sip },
    },
  });
  expect(put.statusCode, put.body).toBe(200);
  credentials.set('carrier_a', carrierA);
  credentials.set('carrier_b', carrierB);
  credentials.set('carrier_c', carrierC);
  credentials.set('sip_trunk', sip);

  // Replaced organization keys: the earlier ones must be gone everywhere.
  for (const label of ['api_keys.llm_a (second)', 'api_keys.llm_a (current)']) {
    const value = makeSecret(label);
    const rotate = await t.app.inject({
      method: 'PUT',
      url: '/api/v1/organization',
      headers: admin.headers,
      payload: { api_keys: { llm_a: { api_key: value } } },
    });
    expect(rotate.statusCode, rotate.body).toBe(200);
    credentials.set('llm_a', { api_key: value });
  }

  // LLM presets: with a key, a custom one with base_url and key, one without a key; one key replaced.
  const presets = '/api/v1/organization/llm-presets';
  const withKey = await expectCreated(
    await t.app.inject({
      method: 'POST',
      url: presets,
      headers: admin.headers,
      payload: {
        name: 'fast',
        provider: 'llm_b',
        model: 'model-fast',
        api_key: makeSecret('preset fast (replaced)'),
        settings: { temperature: 0.5 },
      },
    }),
  );
  const replacedPresetKey = makeSecret('preset fast');
  const rotated = await t.app.inject({
    method: 'PUT',
    url: `${presets}/${withKey.id}`,
    headers: admin.headers,
    payload: { api_key: replacedPresetKey },
  });
  expect(rotated.statusCode, rotated.body).toBe(200);
  presetKeys.set(withKey.id, replacedPresetKey);
  const custom = await expectCreated(
    await t.app.inject({
      method: 'POST',
      url: presets,
      headers: admin.headers,
      payload: {
        name: 'custom',
        provider: 'custom',
        model: 'house-model',
        api_key: makeSecret('preset custom'),
        base_url: 'https://llm.example.com/v1',
      },
    }),
  );
  presetKeys.set(custom.id, secrets.get('preset custom')?.value as string);
  const keyless = await expectCreated(
    await t.app.inject({
      method: 'POST',
      url: presets,
      headers: admin.headers,
      payload: { name: 'keyless', provider: 'llm_c', model: 'model-c' },
    }),
  );
  presetKeys.set(keyless.id, null);

  // Fallback keys for three providers, one disabled, one replaced.
  for (const [provider, name, enabled] of [
    ['llm_a', 'spare-llm', true],
    ['stt_a', 'spare-stt', false],
    ['tts_c', 'spare-tts', true],
  ] as const) {
    const key = makeSecret(`fallback ${provider}`);
    const created = await expectCreated(
      await t.app.inject({
        method: 'POST',
        url: `/api/v1/organization/fallback-keys/${provider}`,
        headers: admin.headers,
        payload: { name, api_key: key, enabled, concurrent_limit: 5 },
      }),
    );
    fallbackKeys.set(created.id, { provider, key });
  }
  const [rotatedId, rotatedKey] = [...fallbackKeys.entries()][0] as [number, { provider: string }];
  const newFallback = makeSecret(`fallback ${rotatedKey.provider} (rotated)`);
  const rotatedFallback = await t.app.inject({
    method: 'PUT',
    url: `/api/v1/organization/fallback-keys/${rotatedKey.provider}/${rotatedId}`,
    headers: admin.headers,
    payload: { api_key: newFallback },
  });
  expect(rotatedFallback.statusCode, rotatedFallback.body).toBe(200);
  fallbackKeys.set(rotatedId, { provider: rotatedKey.provider, key: newFallback });

  // A user API key with every area (its secret is shown once, at creation).
  apiKey = await f.apiKey(admin, {
    name: 'everything',
    permissions: {
      assistants: 'read_write',
      calls: 'read_write',
      campaigns: 'read_write',
      graphs: 'read_write',
      sms: 'read_write',
      phone_numbers: 'read_write',
      organization: 'read_write',
    },
  });
  remember('user API key', apiKey.key, [apiKey.key.slice(12)]);

  // An invitation (for GET /users/invitation/{token}) and an email token (for GET /auth/verify-email).
  const inviteeEmail = `invitee.${randomBytes(3).toString('hex')}@example.test`;
  const invite = await t.app.inject({
    method: 'POST',
    url: '/api/v1/users/invite',
    headers: admin.headers,
    payload: { email: inviteeEmail, first_name: 'In', last_name: 'Vitee', role: 'user' },
  });
  expect(invite.statusCode, invite.body).toBe(201);
  const mail = await waitFor(() => t.mails().find((m) => m.to === inviteeEmail));
  invitationToken = /invitation\/([A-Za-z0-9_-]+)/.exec(mail.body)?.[1] as string;
  expect(invitationToken).toMatch(/^[A-Za-z0-9_-]{20,}$/);
  const unverified = await f.user({ verified: false });
  emailToken = await verificationToken(t, unverified.email);
});

describe('the stored secrets', () => {
  it('are many, distinct, and long enough that a mask cannot reveal them', () => {
    expect(secrets.size).toBeGreaterThanOrEqual(22);
    const values = [...secrets.values()].map((s) => s.value);
    expect(new Set(values).size).toBe(values.length);
    for (const secret of secrets.values()) {
      expect(secret.value.length, secret.label).toBeGreaterThan(12);
      for (const core of secret.cores) expect(core.length, secret.label).toBeGreaterThanOrEqual(16);
    }
  });

  it('are in use: the organization shows every credential (masked), presets and fallback keys exist', async () => {
    const org = await t.app.inject({ method: 'GET', url: '/api/v1/organization', headers: admin.headers });
    expect(org.statusCode).toBe(200);
    expect(Object.keys(org.json().api_keys).sort()).toEqual([...VENDORS].sort());
    expect(org.json().api_keys.llm_a.api_key).toBe(
      `****${String(credentials.get('llm_a')?.api_key).slice(-4)}`,
    );
    expect(org.json().carrier_a.account_sid).toBe('AC-visible-sid');
    expect(org.json().sip_trunk_config.username).toBe('visible-sip-user');
    const presets = await t.app.inject({
      method: 'GET',
      url: '/api/v1/organization/llm-presets',
      headers: admin.headers,
    });
    expect((presets.json() as unknown[]).length).toBe(presetKeys.size);
  });
});

/** Assistants holding a secret in every secret-bearing field, nested and flat (issue 4). */
const assistantIds: number[] = [];
/** Phone numbers, one of them routed to the first assistant. */
const phoneNumberIds: number[] = [];
const messageIds: string[] = [];
beforeAll(async () => {
  const created = await t.app.inject({
    method: 'POST',
    url: '/api/v1/assistants',
    headers: admin.headers,
    payload: {
      name: 'holds every secret',
      llm_provider_config: { api_key: makeSecret('assistant.llm_provider_config.api_key'), model: 'm' },
      llm_fallback_providers: {
        enabled: true,
        fallbacks: [
          { provider: 'llm_b', api_key: makeSecret('assistant.fallbacks.0.api_key') },
          { provider: 'llm_c', api_key: makeSecret('assistant.fallbacks.1.api_key') },
        ],
      },
      carrier_a_config: {
        account_sid: 'AC-visible',
        auth_token: makeSecret('assistant.carrier_a_config.auth_token'),
      },
      carrier_b_config: {
        api_key: makeSecret('assistant.carrier_b_config.api_key'),
        connection_id: 'conn-visible',
      },
      stt_settings: { api_key: makeSecret('assistant.stt_settings.api_key') },
      tts_settings: {
        provider: 'tts_d',
        api_key: makeSecret('assistant.tts_settings.api_key'),
        provider_config: {
          project_uuid: 'visible-project',
          api_key: makeSecret('assistant.tts_settings.provider_config.api_key'),
        },
      },
    },
  });
  assistantIds.push((await expectCreated(created)).id);
  const flat = await t.app.inject({
    method: 'POST',
    url: '/api/v1/assistants',
    headers: admin.headers,
    payload: {
      name: 'flat secret fields',
      llm_a_api_key: makeSecret('assistant.llm_a_api_key'),
      stt_api_key: makeSecret('assistant.stt_api_key'),
      tts_a_api_key: makeSecret('assistant.tts_a_api_key'),
      carrier_a_account_sid: 'AC-flat-visible',
      carrier_a_auth_token: makeSecret('assistant.carrier_a_auth_token'),
    },
  });
  assistantIds.push((await expectCreated(flat)).id);
  // Every assistant answer already passed through; none of them may carry a secret either.
  expect(leaks(responseText(created))).toEqual([]);
  expect(leaks(responseText(flat))).toEqual([]);

  // Phone numbers: one routed to the assistant holding every secret (its answers name the
  // assistant), one routed nowhere.
  for (const payload of [
    { phone_number: '+14155552671', provider: 'carrier_a', assistant_id: assistantIds[0] },
    { phone_number: '+18005550199', provider: 'sip_trunk', friendly_name: 'toll-free line' },
  ]) {
    const number = await t.app.inject({
      method: 'POST',
      url: '/api/v1/phone-numbers',
      headers: admin.headers,
      payload,
    });
    phoneNumberIds.push((await expectCreated(number)).id);
    expect(leaks(responseText(number))).toEqual([]);
  }

  // A message sent through the assistant's own carrier_a credentials (its answers and GET name
  // the provider, never the token).
  carrier.addAccount({
    account_sid: 'AC-visible',
    auth_token: secrets.get('assistant.carrier_a_config.auth_token')!.value,
  });
  const sent = await t.app.inject({
    method: 'POST',
    url: '/sms/send',
    headers: admin.headers,
    payload: {
      from_phone_number: '+14155552671',
      to_phone_number: '+14155550123',
      message: 'hello',
      queue: false,
    },
  });
  expect(sent.statusCode, sent.body).toBe(200);
  expect(leaks(responseText(sent))).toEqual([]);
  messageIds.push(sent.json().message_id);
});

/** A graph whose nodes are the assistants above, and a conversation session of it with a call SID. */
const graphIds: number[] = [];
const callSids: string[] = [];
beforeAll(async () => {
  const graph = await t.app.inject({
    method: 'POST',
    url: '/api/v1/assistant-graphs',
    headers: admin.headers,
    payload: {
      name: 'routes to the secret holders',
      nodes: [
        { assistant_id: assistantIds[0], node_type: 'entry', position: { x: 0, y: 0 } },
        { assistant_id: assistantIds[1], node_type: 'exit', position: { x: 1, y: 0 } },
      ],
      edges: [{ from_node_id: 0, to_node_id: 1, condition_type: 'intent', intent_pattern: 'bye' }],
    },
  });
  const created = await expectCreated(graph);
  expect(leaks(responseText(graph))).toEqual([]);
  graphIds.push(created.id);
  const tenant = new Tenant(admin.organizationId);
  const session = await t.platform.services.graphSessions.start(tenant, {
    graphId: created.id,
    callSid: 'CA-visible-session',
    context: { customer: 'visible' },
  });
  await t.platform.services.graphSessions.transition(tenant, session.id, {
    toNodeId: created.nodes[1].id,
    edgeId: created.edges[0].id,
    reason: 'keyword "bye"',
  });
  callSids.push('CA-visible-session');
});

/** A call of the first assistant with a transcript (the call, transcript, search and export GETs). */
const callIds: number[] = [];
/** The signed recording link's query (expires, signature). */
const recordingQuery: Record<string, string> = {};
beforeAll(async () => {
  const call = await seedCall(t.database, admin.organizationId, {
    assistantId: assistantIds[0],
    callMeta: { variables: { name: 'visible' } },
    transcript: [
      ['assistant', 'Hello, visible caller.'],
      ['user', 'Just checking.'],
    ],
  });
  callIds.push(call.id);
  // Its recording and its analysis, so their GETs answer too (the signed link's query comes from it).
  const tenant = new Tenant(admin.organizationId);
  const recordings = t.platform.services.recordings;
  const tap = recordings.start(tenant, call.id, MULAW_8K, { recording_settings: { enabled: true } });
  for (let i = 0; i < 10; i++) {
    tap?.caller(new Uint8Array(160).fill(0x7f));
    tap?.assistant(new Uint8Array(160).fill(0x7f));
  }
  tap?.close();
  await recordings.drain();
  const signed = new URL(recordings.signedUrl(call.id));
  recordingQuery.expires = signed.searchParams.get('expires') ?? '';
  recordingQuery.signature = signed.searchParams.get('signature') ?? '';
  await insertAnalysis(t.database.db, tenant, call.id, { status: 'pending' });
  await settleAnalysis(t.database.db, tenant, call.id, {
    status: 'completed',
    result: {
      summary: 'A visible caller checked in.',
      sentiment: 'neutral',
      sentimentScore: 0,
      provider: 'llm_a',
    },
  });
});

/** A document of each assistant (not processed: no vendor is called), so the documents' GETs answer. */
const documentsOf = new Map<string, string>();
beforeAll(async () => {
  for (const assistantId of assistantIds) {
    const data = new FormData();
    data.append('auto_process', 'false');
    data.append('file', new Blob(['Visible words of a document.\n'], { type: 'text/plain' }), 'visible.txt');
    const encoded = new Response(data);
    const uploaded = await t.app.inject({
      method: 'POST',
      url: `/api/v1/assistants/${assistantId}/documents/upload`,
      headers: { ...admin.headers, 'content-type': encoded.headers.get('content-type')! },
      payload: Buffer.from(await encoded.arrayBuffer()),
    });
    documentsOf.set(String(assistantId), String((await expectCreated(uploaded)).id));
  }
});

/** A campaign of the first assistant, with templates (its GET answers must not reveal a secret either). */
const campaignIds: number[] = [];
beforeAll(async () => {
  const campaign = await t.app.inject({
    method: 'POST',
    url: '/api/v1/campaigns',
    headers: admin.headers,
    payload: {
      name: 'calls through the secret holder',
      campaign_type: 'mixed',
      assistant_id: assistantIds[0],
      welcome_message_template: 'Hi {{ name | title_case }}',
      fallback_values: { name: 'there' },
    },
  });
  campaignIds.push((await expectCreated(campaign)).id);
  expect(leaks(responseText(campaign))).toEqual([]);
});

describe('every GET operation of the OpenAPI document', () => {
  let operations: Operation[];
  beforeAll(async () => {
    const response = await t.app.inject({ method: 'GET', url: '/openapi.json' });
    expect(response.statusCode).toBe(200);
    const doc = response.json() as {
      paths: Record<string, Record<string, { parameters?: Operation['parameters'] }>>;
    };
    operations = Object.entries(doc.paths)
      .filter(([, item]) => item.get)
      .map(([path, item]) => ({ path, parameters: item.get?.parameters ?? [] }));
  });

  /** The URLs to call for an operation: every combination of the path values made here. */
  function urlsOf(operation: Operation): string[] {
    const pathValues: Record<string, string[]> = {
      provider: [...new Set([...fallbackKeys.values()].map((k) => k.provider))],
      preset_id: [...presetKeys.keys()].map(String),
      assistant_id: assistantIds.map(String),
      phone_number_id: phoneNumberIds.map(String),
      message_id: messageIds,
      token: [invitationToken],
      graph_id: graphIds.map(String),
      call_sid: callSids,
      campaign_id: campaignIds.map(String),
      call_id: callIds.map(String),
      document_id: [...documentsOf.values()],
    };
    const queryValues: Record<string, string> = {
      token: emailToken,
      page: '1',
      per_page: '50',
      q: 'visible',
      ...recordingQuery,
    };
    let urls = [operation.path];
    for (const name of operation.path.match(/\{[^}]+\}/g) ?? []) {
      const values = pathValues[name.slice(1, -1)];
      if (!values || values.length === 0) throw new Error(`No value for ${name} in ${operation.path}`);
      urls = urls.flatMap((url) => values.map((v) => url.replace(name, encodeURIComponent(v))));
    }
    const query = operation.parameters
      .filter((p) => p.in === 'query' && p.required)
      .map((p) => {
        const value = queryValues[p.name];
        if (value === undefined) throw new Error(`No value for query ${p.name} in ${operation.path}`);
        return `${p.name}=${encodeURIComponent(value)}`;
      });
    // A document is found under its own assistant only.
    urls = urls.filter((url) => {
      const pair = /\/assistants\/(\d+)\/documents\/(\d+)/.exec(url);
      return !pair || documentsOf.get(pair[1]!) === pair[2];
    });
    return urls.map((url) => (query.length > 0 ? `${url}?${query.join('&')}` : url));
  }

  async function callAll(headers: Record<string, string>): Promise<Array<Exercised & { body: string }>> {
    const results: Array<Exercised & { body: string }> = [];
    for (const operation of operations) {
      for (const url of urlsOf(operation)) {
        const response = await t.app.inject({ method: 'GET', url, headers });
        results.push({
          operation: `GET ${operation.path}`,
          url,
          status: response.statusCode,
          body: responseText(response),
        });
      }
    }
    return results;
  }

  const APPLY = 'GET /api/v1/organization/llm-presets/{preset_id}/apply';

  it('as the admin: all answer 200 and none reveals a secret, except apply its own preset key', async () => {
    const results = await callAll(admin.headers);
    const exercised = [...new Set(results.map((r) => r.operation))].sort();
    // Nothing was left out, and the list is not trivial.
    expect(exercised).toEqual(operations.map((o) => `GET ${o.path}`).sort());
    expect(exercised.length).toBeGreaterThanOrEqual(15);
    for (const name of [
      'GET /api/v1/organization',
      'GET /api/v1/organization/configuration-status',
      'GET /api/v1/organization/concurrency-settings',
      'GET /api/v1/organization/llm-presets',
      APPLY,
      'GET /api/v1/organization/fallback-keys/{provider}',
      'GET /api/v1/users/me/api-keys',
      'GET /api/v1/users/me',
      'GET /api/v1/users',
      'GET /api/v1/users/invitation/{token}',
      'GET /api/v1/phone-numbers',
      'GET /api/v1/phone-numbers/{phone_number_id}',
      'GET /sms/{message_id}',
      'GET /sms/queue/stats',
      'GET /v1/billing/wallet',
      'GET /v1/billing/ledger',
    ]) {
      expect(exercised, name).toContain(name);
    }
    console.info(
      `secrets-at-rest: exercised ${results.length} GET requests on ${exercised.length} operations:\n  ${exercised.join('\n  ')}`,
    );

    for (const result of results) {
      expect(result.status, `${result.url} → ${result.body}`).toBe(200);
      if (result.operation === APPLY) {
        const id = Number(/llm-presets\/(\d+)\/apply/.exec(result.url)?.[1]);
        const key = presetKeys.get(id);
        const label = [...secrets.values()].find((s) => s.value === key)?.label;
        if (key) {
          expect(result.body, result.url).toContain(`"api_key":"${key}"`);
        } else {
          expect(result.body, result.url).toContain('"api_key":null');
        }
        expect(leaks(result.body, new Set(label ? [label] : [])), result.url).toEqual([]);
      } else {
        expect(leaks(result.body), `${result.url} → ${result.body}`).toEqual([]);
      }
    }
    // Nor does any answer echo the one-time tokens used in the calls (invitation, email).
    for (const result of results) {
      expect(result.body.includes(invitationToken), `${result.operation} echoes the invitation token`).toBe(
        false,
      );
      expect(result.body.includes(emailToken), `${result.operation} echoes the email token`).toBe(false);
    }
    // The fallback listings did list the keys (metadata and hint), so the scan looked at them.
    for (const { provider } of fallbackKeys.values()) {
      const listing = results.find((r) => r.url === `/api/v1/organization/fallback-keys/${provider}`);
      expect(listing?.body, provider).toContain('"key_hint":"****');
    }
  });

  it('as a member who is not an admin: apply is refused, and nothing reveals a secret', async () => {
    const results = await callAll(member.headers);
    expect(results.length).toBeGreaterThanOrEqual(15);
    for (const result of results) {
      if (result.operation === APPLY) expect(result.status, result.url).toBe(403);
      expect(leaks(result.body), `${result.url} → ${result.body}`).toEqual([]);
    }
    const listed = results.find((r) => r.operation === 'GET /api/v1/organization');
    expect(listed?.status).toBe(200);
  });

  it('with the API key as credential: no response echoes it or any other secret (apply aside)', async () => {
    const results = await callAll(apiKey.headers);
    expect(results.filter((r) => r.status === 200).length).toBeGreaterThanOrEqual(10);
    for (const result of results) {
      const allowed = new Set<string>();
      if (result.operation === APPLY && result.status === 200) {
        const id = Number(/llm-presets\/(\d+)\/apply/.exec(result.url)?.[1]);
        const label = [...secrets.values()].find((s) => s.value === presetKeys.get(id))?.label;
        if (label) allowed.add(label);
      }
      expect(leaks(result.body, allowed), `${result.url} → ${result.body}`).toEqual([]);
    }
  });
});

describe('error answers', () => {
  it('a refused request carrying a secret does not echo it', async () => {
    const leaked = makeSecret('refused secret');
    const attempts = [
      { method: 'PUT', url: '/api/v1/organization', payload: { api_keys: { llm_z: { api_key: leaked } } } },
      {
        method: 'PUT',
        url: '/api/v1/organization',
        payload: { carrier_a: { account_sid: 'x', auth_token: leaked, extra: leaked } },
      },
      {
        method: 'PUT',
        url: '/api/v1/organization',
        payload: { sip_trunk_config: { password: leaked, port: 0 } },
      },
      {
        method: 'POST',
        url: '/api/v1/organization/fallback-keys/llm_z',
        payload: { name: 'x', api_key: leaked, enabled: true },
      },
      {
        method: 'POST',
        url: '/api/v1/organization/llm-presets',
        payload: { name: 'x', provider: 'custom', model: 'm', api_key: leaked },
      },
    ] as const;
    for (const attempt of attempts) {
      const response = await t.app.inject({
        ...attempt,
        headers: admin.headers,
        payload: { ...attempt.payload },
      });
      expect(response.statusCode, `${attempt.url} → ${response.body}`).toBe(422);
      expect(leaks(responseText(response)), response.body).toEqual([]);
    }
    // Nor does a member's refused PUT.
    const member403 = await t.app.inject({
      method: 'PUT',
      url: '/api/v1/organization',
      headers: member.headers,
      payload: { carrier_b: { api_key: leaked, connection_id: 'c' } },
    });
    expect(member403.statusCode).toBe(403);
    expect(leaks(responseText(member403))).toEqual([]);
  });
});

describe('at rest', () => {
  it('provider_credentials rows are sealed, and the seal opens to the stored credentials', async () => {
    const { rows } = await t.database.executeSql('select * from provider_credentials');
    const ours = rows.filter((r) => r.organization_id === admin.organizationId);
    expect(ours.map((r) => r.provider).sort()).toEqual([...credentials.keys()].sort());
    expect(ours).toHaveLength(VENDORS.length + 4);
    for (const row of ours) {
      expect(row.sealed, String(row.provider)).toMatch(SEALED);
      expect(box.openJson(String(row.sealed)), String(row.provider)).toEqual(
        credentials.get(String(row.provider)),
      );
    }
    expect(leaks(rowsText(rows))).toEqual([]);
  });

  it('llm_presets rows are sealed, and the seal opens to the preset keys', async () => {
    const { rows } = await t.database.executeSql('select * from llm_presets');
    expect(rows).toHaveLength(presetKeys.size);
    for (const row of rows) {
      const key = presetKeys.get(Number(row.id));
      if (key === null) {
        expect(row.api_key_sealed).toBeNull();
      } else {
        expect(row.api_key_sealed).toMatch(SEALED);
        expect(box.open(String(row.api_key_sealed))).toBe(key);
      }
    }
    expect(leaks(rowsText(rows))).toEqual([]);
  });

  it('fallback_keys rows are sealed, and the seal opens to the fallback keys', async () => {
    const { rows } = await t.database.executeSql('select * from fallback_keys');
    expect(rows).toHaveLength(fallbackKeys.size);
    for (const row of rows) {
      const expected = fallbackKeys.get(Number(row.id));
      expect(row.provider).toBe(expected?.provider);
      expect(row.api_key_sealed).toMatch(SEALED);
      expect(box.open(String(row.api_key_sealed))).toBe(expected?.key);
    }
    expect(leaks(rowsText(rows))).toEqual([]);
  });

  it('no table of the database holds a secret in clear', async () => {
    const { rows: tables } = await t.database.executeSql(
      "select table_schema, table_name from information_schema.tables where table_type = 'BASE TABLE' and table_schema not in ('pg_catalog', 'information_schema')",
    );
    const names = tables.map((r) => `"${r.table_schema}"."${r.table_name}"`);
    expect(names).toContain('"public"."provider_credentials"');
    expect(names).toContain('"public"."api_keys"');
    expect(names).toContain('"public"."users"');
    const found: string[] = [];
    for (const name of names) {
      const { rows } = await t.database.executeSql(`select * from ${name}`);
      for (const label of leaks(rowsText(rows))) found.push(`${name}: ${label}`);
    }
    expect(found).toEqual([]);
  });
});

describe('logs and mails', () => {
  it('the logs were written, and contain no stored secret', () => {
    const text = t.logs.join('\n');
    expect(t.logs.length).toBeGreaterThan(20);
    expect(text).toContain('/api/v1/organization');
    expect(leaks(text)).toEqual([]);
  });

  it('the logs contain neither the invitation token nor the email verification token', () => {
    const text = t.logs.join('\n');
    expect(text).toContain('/api/v1/users/invitation/');
    expect(text).toContain('verify-email');
    const lineWith = (token: string) => t.logs.find((line) => line.includes(token)) ?? '';
    // The path of GET /users/invitation/{token} carries the token: it must be redacted like
    // token-bearing query parameters are.
    expect(lineWith(invitationToken), 'the invitation token is in this log line').toBe('');
    expect(lineWith(emailToken), 'the email verification token is in this log line').toBe('');
  });

  it('no mail contains a stored secret', () => {
    const mails = t.mails();
    expect(mails.length).toBeGreaterThanOrEqual(3);
    expect(leaks(mails.map((m) => `${m.subject}\n${m.body}`).join('\n'))).toEqual([]);
  });
});
