/**
 * Assistants: POST/GET /api/v1/assistants and GET/PUT/DELETE /api/v1/assistants/{assistant_id}.
 * The full round trip of every documented field (secrets masked), every documented default, the
 * flat secret fields folded into their nested objects, PUT semantics (named fields only, nested
 * objects replaced, masked secrets kept), one test per validation rule, per-organization name
 * uniqueness, and who may (not) touch which assistant. The tests share one platform; each creates
 * the users it needs.
 */
import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { assistants } from '../src/db/schema/index.js';
import { SECRET_PATHS } from '../src/domains/assistants/schemas.js';
import { openPaths } from '../src/lib/secret-paths.js';
import { SecretBox } from '../src/lib/secrets.js';
import { expectValidation } from './support/assertions.js';
import { Factories, type TestUser } from './support/factories.js';
import { startTestPlatform, TEST_SECRET_KEY, type TestPlatform } from './support/harness.js';
import { masked, secret } from './support/secrets.js';

const BASE = '/api/v1/assistants';
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;
const RESPONSE_FIELDS = [
  'id',
  'organization_id',
  'user_id',
  'name',
  'description',
  'is_active',
  'llm_provider',
  'llm_provider_config',
  'carrier_a_config',
  'carrier_b_config',
  'llm_settings',
  'webhook_url',
  'sms_webhook_url',
  'messaging_service_sid',
  'interruption_settings',
  'tts_settings',
  'stt_settings',
  'end_call_message',
  'transfer_call_message',
  'idle_message',
  'max_idle_messages',
  'idle_timeout',
  'tools_settings',
  'voicemail_settings',
  'rag_settings',
  'llm_fallback_providers',
  'custom_settings',
  'recording_settings',
  'created_at',
  'updated_at',
].sort();
const FLAT_FIELDS = [
  'llm_a_api_key',
  'custom_llm_url',
  'stt_api_key',
  'tts_a_api_key',
  'carrier_a_account_sid',
  'carrier_a_auth_token',
];

let t: TestPlatform;
let f: Factories;
beforeAll(async () => {
  t = await startTestPlatform();
  f = new Factories(t);
});
afterAll(() => t.close());

type Headers = Record<string, string>;
type Json = Record<string, unknown>;
type Assistant = Json & { id: number; name: string };

function create(headers: Headers, payload: unknown) {
  return t.app.inject({ method: 'POST', url: BASE, headers, payload: payload as object });
}
function list(headers: Headers, query = '') {
  return t.app.inject({ method: 'GET', url: `${BASE}${query}`, headers });
}
function get(headers: Headers, id: number | string) {
  return t.app.inject({ method: 'GET', url: `${BASE}/${id}`, headers });
}
function update(headers: Headers, id: number | string, payload: unknown) {
  return t.app.inject({ method: 'PUT', url: `${BASE}/${id}`, headers, payload: payload as object });
}
function remove(headers: Headers, id: number | string) {
  return t.app.inject({ method: 'DELETE', url: `${BASE}/${id}`, headers });
}

let serial = 0;
function uniqueName(label = 'assistant'): string {
  serial += 1;
  return `${label} ${serial}`;
}

async function createAssistant(user: TestUser, payload: Json = {}): Promise<Assistant> {
  const response = await create(user.headers, { name: uniqueName(), ...payload });
  expect(response.statusCode, response.body).toBe(201);
  return response.json();
}

async function storedConfig(id: number): Promise<Json> {
  const [row] = await t.database.db.select().from(assistants).where(eq(assistants.id, id));
  expect(row, `no row ${id}`).toBeDefined();
  return row?.config as Json;
}

async function openedConfig(id: number): Promise<Json> {
  return openPaths(await storedConfig(id), SECRET_PATHS, new SecretBox(TEST_SECRET_KEY));
}

interface Secrets {
  llm: string;
  carrierA: string;
  carrierB: string;
  tts: string;
  ttsProvider: string;
  stt: string;
  fallback1: string;
  fallback2: string;
}

function newSecrets(): Secrets {
  return {
    llm: secret('llm'),
    carrierA: secret('carrier-a'),
    carrierB: secret('carrier-b'),
    tts: secret('tts'),
    ttsProvider: secret('tts-pc'),
    stt: secret('stt'),
    fallback1: secret('fb1'),
    fallback2: secret('fb2'),
  };
}

/** Every documented field set to a value other than its default. */
function fullBody(name: string, s: Secrets): Json {
  return {
    name,
    description: 'Answers every question about orders',
    is_active: false,
    // A vendor that takes every sampling parameter below (llm_b, for one, has no penalties).
    llm_provider: 'llm_d',
    llm_provider_config: {
      api_key: s.llm,
      model: 'model-large',
      base_url: 'https://llm.example.test/v1',
      custom_config: { region: 'eu', retries: 2, nested: { on: true } },
    },
    carrier_a_config: { account_sid: 'AC0123456789abcdef', auth_token: s.carrierA },
    carrier_b_config: { api_key: s.carrierB, connection_id: 'conn-4242' },
    llm_settings: {
      temperature: 1.3,
      max_tokens: 2048,
      system_prompt: 'You are Olga, a terse order clerk.',
      welcome_message: 'Orders desk, Olga speaking.',
      top_p: 0.9,
      frequency_penalty: 0.5,
      presence_penalty: -0.75,
      stop_sequences: ['END', '###'],
    },
    webhook_url: 'https://hooks.example.test/calls',
    sms_webhook_url: 'http://hooks.example.test/sms',
    messaging_service_sid: 'MG00000000000000000000000000000001',
    interruption_settings: { interruption_threshold: 5, min_speaking_time: 1.5, interruption_cooldown: 4 },
    tts_settings: {
      provider: 'tts_a',
      voice_id: 'voice-olga',
      model_id: 'tts-model-2',
      latency: 3,
      provider_config: { region: 'us-east', api_key: s.ttsProvider },
      api_key: s.tts,
      stability: 0.3,
      similarity_boost: 0.9,
      style: 0.2,
      use_speaker_boost: false,
    },
    stt_settings: {
      model: 'nova-3',
      language: 'fr-FR',
      punctuate: false,
      interim_results: false,
      endpointing: { silence_threshold: 700, min_silence_duration: 300 },
      utterance_end_ms: 1500,
      vad_turnoff: 800,
      smart_format: false,
      keywords: [],
      keyterms: ['Switchboard', 'order number'],
      audio_denoising: true,
      api_key: s.stt,
    },
    end_call_message: 'Goodbye and thank you.',
    transfer_call_message: 'Transferring you now.',
    idle_message: 'Hello? Anyone on the line?',
    max_idle_messages: 4,
    idle_timeout: 25,
    tools_settings: {
      enabled_tools: ['end_call', 'transfer_call', 'lookup_order'],
      end_call: { enabled: true, scenarios: ['the caller says goodbye'], custom_message: 'Bye now' },
      transfer_call: {
        enabled: true,
        scenarios: ['the caller wants a human'],
        custom_message: 'One moment please',
        transfer_numbers: ['+14155552671', '+442071838750'],
      },
      custom_tools: [
        {
          name: 'lookup_order',
          description: 'Finds an order by id',
          type: 'http',
          parameters: { type: 'object', properties: { id: { type: 'string' } }, required: ['id'] },
          filler_message: 'Let me look that up.',
          timeout_seconds: 8,
          http: { url: 'https://tools.example.test/orders', method: 'GET' },
        },
      ],
    },
    voicemail_settings: {
      detection: true,
      action: 'leave_message',
      message: 'Hi {{ name }}, please call us back.',
      max_wait_seconds: 30,
    },
    rag_settings: {
      enabled: true,
      search_limit: 7,
      similarity_threshold: 0.55,
      embedding_model: 'embed-large-v2',
      chunking_strategy: 'sentence',
      chunk_size: 1500,
      chunk_overlap: 100,
      auto_process: false,
      include_metadata: false,
      context_window_tokens: 8000,
    },
    llm_fallback_providers: {
      enabled: true,
      fallbacks: [
        { provider: 'llm_c', api_key: s.fallback1, model: 'c-model' },
        {
          provider: 'custom',
          api_key: s.fallback2,
          base_url: 'https://fallback.example.test/v1',
          model: 'local-model',
        },
      ],
    },
    custom_settings: {
      structured_data_prompt: 'Extract the order id and whether the caller was satisfied.',
      structured_data_schema: {
        type: 'object',
        properties: { order_id: { type: 'string' }, satisfied: { type: 'boolean' } },
        required: ['order_id'],
      },
    },
    recording_settings: { enabled: false },
  };
}

/** What the full body looks like in an answer: the same, with every secret masked. */
function maskedFull(body: Json, s: Secrets): Json {
  const copy = structuredClone(body) as Record<
    | 'llm_provider_config'
    | 'carrier_a_config'
    | 'carrier_b_config'
    | 'tts_settings'
    | 'stt_settings'
    | 'llm_fallback_providers',
    Json
  >;
  copy.llm_provider_config.api_key = masked(s.llm);
  copy.carrier_a_config.auth_token = masked(s.carrierA);
  copy.carrier_b_config.api_key = masked(s.carrierB);
  copy.tts_settings.api_key = masked(s.tts);
  (copy.tts_settings.provider_config as Json).api_key = masked(s.ttsProvider);
  copy.stt_settings.api_key = masked(s.stt);
  const fallbacks = copy.llm_fallback_providers.fallbacks as Json[];
  (fallbacks[0] as Json).api_key = masked(s.fallback1);
  (fallbacks[1] as Json).api_key = masked(s.fallback2);
  return copy;
}

function expectNoSecret(text: string, s: Secrets | string[]) {
  for (const value of Array.isArray(s) ? s : Object.values(s)) {
    expect(text).not.toContain(value);
    expect(text).not.toContain(value.slice(0, -4));
  }
}

describe('POST /api/v1/assistants — round trip', () => {
  it('returns every field of a fully specified assistant, secrets masked; GET returns the same', async () => {
    const user = await f.user();
    const s = newSecrets();
    const body = fullBody('Full round trip', s);
    const response = await create(user.headers, body);
    expect(response.statusCode, response.body).toBe(201);
    const created = response.json() as Assistant;
    expect(Object.keys(created).sort()).toEqual(RESPONSE_FIELDS);
    const { id, organization_id, user_id, created_at, updated_at, ...config } = created;
    expect(config).toEqual(maskedFull(body, s));
    expect(Number.isInteger(id)).toBe(true);
    expect(organization_id).toBe(user.organizationId);
    expect(user_id).toBe(user.id);
    expect(created_at).toMatch(ISO);
    expect(updated_at).toMatch(ISO);
    expectNoSecret(response.body, s);

    const fetched = await get(user.headers, created.id);
    expect(fetched.statusCode, fetched.body).toBe(200);
    expect(fetched.json()).toEqual(created);
    expectNoSecret(fetched.body, s);

    const listed = await list(user.headers);
    expect(listed.statusCode, listed.body).toBe(200);
    expect((listed.json() as Assistant[]).find((a) => a.id === created.id)).toEqual(created);
    expectNoSecret(listed.body, s);
  });

  it('stores every secret sealed, and opening the row gives the secrets back', async () => {
    const user = await f.user();
    const s = newSecrets();
    const created = await createAssistant(user, fullBody(uniqueName('sealed'), s));
    const raw = JSON.stringify(await storedConfig(created.id));
    expectNoSecret(raw, s);
    const opened = await openedConfig(created.id);
    expect(opened).toMatchObject({
      llm_provider_config: { api_key: s.llm },
      carrier_a_config: { auth_token: s.carrierA },
      carrier_b_config: { api_key: s.carrierB },
      tts_settings: { api_key: s.tts, provider_config: { api_key: s.ttsProvider, region: 'us-east' } },
      stt_settings: { api_key: s.stt },
      llm_fallback_providers: { fallbacks: [{ api_key: s.fallback1 }, { api_key: s.fallback2 }] },
    });
  });

  it('fills every documented default when only a name is given; unset optional fields are null', async () => {
    const user = await f.user();
    const response = await create(user.headers, { name: 'Defaults only' });
    expect(response.statusCode, response.body).toBe(201);
    const body = response.json();
    expect(Object.keys(body).sort()).toEqual(RESPONSE_FIELDS);
    expect(body).toMatchObject({
      name: 'Defaults only',
      description: null,
      is_active: true,
      llm_provider: 'llm_a',
      llm_provider_config: null,
      carrier_a_config: null,
      carrier_b_config: null,
      webhook_url: null,
      sms_webhook_url: null,
      messaging_service_sid: null,
      end_call_message: null,
      transfer_call_message: null,
      llm_settings: {
        temperature: 0.7,
        max_tokens: 1000,
        top_p: 1,
        frequency_penalty: 0,
        presence_penalty: 0,
        stop_sequences: [],
      },
      interruption_settings: { interruption_threshold: 3, min_speaking_time: 0.5, interruption_cooldown: 2 },
      tts_settings: {
        provider: 'tts_a',
        latency: 1,
        provider_config: {},
        stability: 0.5,
        similarity_boost: 0.75,
        style: 0,
        use_speaker_boost: true,
      },
      stt_settings: {
        punctuate: true,
        interim_results: true,
        smart_format: true,
        endpointing: { silence_threshold: 500, min_silence_duration: 500 },
        utterance_end_ms: 1000,
        vad_turnoff: 500,
        audio_denoising: false,
        keywords: [],
        keyterms: [],
      },
      tools_settings: {
        enabled_tools: [],
        end_call: { enabled: false, scenarios: [] },
        transfer_call: { enabled: false, scenarios: [], transfer_numbers: [] },
        custom_tools: [],
      },
      rag_settings: {
        enabled: false,
        search_limit: 3,
        similarity_threshold: 0.7,
        chunking_strategy: 'recursive',
        chunk_size: 1000,
        chunk_overlap: 200,
        auto_process: true,
        include_metadata: true,
        context_window_tokens: 4000,
      },
      llm_fallback_providers: { enabled: false, fallbacks: [] },
      custom_settings: {},
      recording_settings: null,
    });
    // Documented as having a default text.
    expect(typeof body.llm_settings.system_prompt).toBe('string');
    expect(body.llm_settings.system_prompt.length).toBeGreaterThan(0);
    expect(typeof body.llm_settings.welcome_message).toBe('string');
    // The defaults chosen where the document gives none (docs/assistants.md).
    expect(body.idle_message).toBe('Are you still there?');
    expect(body.max_idle_messages).toBe(2);
    expect(body.idle_timeout).toBe(10);
    expect(typeof body.tts_settings.voice_id).toBe('string');
    expect(typeof body.stt_settings.model).toBe('string');
    expect(typeof body.rag_settings.embedding_model).toBe('string');
    expect(body.voicemail_settings).toEqual({
      detection: true,
      action: 'leave_message',
      message: null,
      max_wait_seconds: 20,
    });
    expect((await get(user.headers, body.id)).json()).toEqual(body);
  });

  it('completes a partly given nested object with the defaults of its omitted fields', async () => {
    const user = await f.user();
    const body = await createAssistant(user, {
      llm_settings: { temperature: 0.2 },
      rag_settings: { enabled: true },
      stt_settings: { endpointing: { silence_threshold: 900 } },
      voicemail_settings: { action: 'hang_up' },
    });
    expect(body.voicemail_settings).toEqual({
      detection: true,
      action: 'hang_up',
      message: null,
      max_wait_seconds: 20,
    });
    expect(body.llm_settings).toMatchObject({ temperature: 0.2, max_tokens: 1000, top_p: 1 });
    expect(body.rag_settings).toMatchObject({ enabled: true, search_limit: 3, chunk_size: 1000 });
    expect(body.stt_settings).toMatchObject({
      endpointing: { silence_threshold: 900, min_silence_duration: 500 },
      utterance_end_ms: 1000,
    });
  });

  it('gives tts_a extras only to tts_a; tts_c and tts_d keep their provider_config', async () => {
    const user = await f.user();
    const ttsC = await createAssistant(user, {
      tts_settings: { provider: 'tts_c', voice_id: 'v-c', provider_config: { language: 'de-DE' } },
    });
    expect(ttsC.tts_settings).toMatchObject({ provider: 'tts_c', provider_config: { language: 'de-DE' } });
    expect(ttsC.tts_settings).not.toHaveProperty('stability');
    const ttsD = await createAssistant(user, {
      tts_settings: { provider: 'tts_d', voice_id: 'v-d', provider_config: { project_uuid: 'p-123' } },
    });
    expect(ttsD.tts_settings).toMatchObject({
      provider: 'tts_d',
      provider_config: { project_uuid: 'p-123' },
    });
  });

  it('normalises a formatted transfer number to E.164', async () => {
    const user = await f.user();
    const body = await createAssistant(user, {
      tools_settings: { transfer_call: { enabled: true, transfer_numbers: ['+1 (415) 555-2671'] } },
    });
    expect((body.tools_settings as Json).transfer_call).toMatchObject({ transfer_numbers: ['+14155552671'] });
    expect((await get(user.headers, body.id)).json().tools_settings.transfer_call.transfer_numbers).toEqual([
      '+14155552671',
    ]);
  });

  it('accepts keywords with older models and keyterms with nova-3', async () => {
    const user = await f.user();
    const nova2 = await createAssistant(user, {
      stt_settings: { model: 'nova-2', keywords: [{ keyword: 'Switchboard', intensifier: 2 }] },
    });
    expect(nova2.stt_settings).toMatchObject({
      model: 'nova-2',
      keywords: [{ keyword: 'Switchboard', intensifier: 2 }],
    });
    const enhanced = await createAssistant(user, {
      stt_settings: { model: 'enhanced', keywords: [{ keyword: 'order' }] },
    });
    expect(enhanced.stt_settings).toMatchObject({ model: 'enhanced', keywords: [{ keyword: 'order' }] });
    const nova3 = await createAssistant(user, { stt_settings: { model: 'nova-3', keyterms: ['PGlite'] } });
    expect(nova3.stt_settings).toMatchObject({ model: 'nova-3', keyterms: ['PGlite'] });
  });
});

describe('flat secret fields', () => {
  it('are folded into their nested objects and never appear in a response', async () => {
    const user = await f.user();
    const llmKey = secret('flat-llm');
    const sttKey = secret('flat-stt');
    const ttsKey = secret('flat-tts');
    const token = secret('flat-token');
    const response = await create(user.headers, {
      name: uniqueName('flat'),
      llm_provider: 'custom',
      llm_a_api_key: llmKey,
      custom_llm_url: 'https://my-llm.example.test/v1',
      stt_api_key: sttKey,
      tts_a_api_key: ttsKey,
      carrier_a_account_sid: 'AC-flat-0001',
      carrier_a_auth_token: token,
    });
    expect(response.statusCode, response.body).toBe(201);
    const body = response.json();
    for (const field of FLAT_FIELDS) expect(body).not.toHaveProperty(field);
    expect(body.llm_provider).toBe('custom');
    expect(body.llm_provider_config).toEqual({
      api_key: masked(llmKey),
      base_url: 'https://my-llm.example.test/v1',
    });
    expect(body.stt_settings.api_key).toBe(masked(sttKey));
    expect(body.stt_settings.punctuate).toBe(true);
    expect(body.tts_settings.api_key).toBe(masked(ttsKey));
    expect(body.tts_settings.provider).toBe('tts_a');
    expect(body.carrier_a_config).toEqual({ account_sid: 'AC-flat-0001', auth_token: masked(token) });
    expectNoSecret(response.body, [llmKey, sttKey, ttsKey, token]);

    const fetched = await get(user.headers, body.id);
    for (const field of FLAT_FIELDS) expect(fetched.json()).not.toHaveProperty(field);
    expectNoSecret(fetched.body, [llmKey, sttKey, ttsKey, token]);

    const opened = await openedConfig(body.id);
    expect(opened).toMatchObject({
      llm_provider_config: { api_key: llmKey, base_url: 'https://my-llm.example.test/v1' },
      stt_settings: { api_key: sttKey },
      tts_settings: { api_key: ttsKey },
      carrier_a_config: { account_sid: 'AC-flat-0001', auth_token: token },
    });
  });

  it('flat secrets in a PUT change only the secret, keeping the rest of the stored object', async () => {
    const user = await f.user();
    const created = await createAssistant(user, {
      stt_settings: { model: 'nova-2', language: 'es-ES', api_key: secret('stt-old') },
    });
    const newKey = secret('stt-new');
    const response = await update(user.headers, created.id, { stt_api_key: newKey });
    expect(response.statusCode, response.body).toBe(200);
    const body = response.json();
    expect(body).not.toHaveProperty('stt_api_key');
    expect(body.stt_settings).toMatchObject({ model: 'nova-2', language: 'es-ES', api_key: masked(newKey) });
    expect(response.body).not.toContain(newKey);
    expect(((await openedConfig(created.id)).stt_settings as Json).api_key).toBe(newKey);
  });

  it('no log line contains a secret sent through any secret-bearing field', async () => {
    const user = await f.user();
    const s = newSecrets();
    const flat = [secret('log-llm'), secret('log-stt'), secret('log-tts'), secret('log-token')];
    const created = await createAssistant(user, fullBody(uniqueName('logs'), s));
    await update(user.headers, created.id, {
      llm_a_api_key: flat[0],
      stt_api_key: flat[1],
      tts_a_api_key: flat[2],
      carrier_a_auth_token: flat[3],
    });
    await get(user.headers, created.id);
    await list(user.headers);
    const logs = t.logs.join('\n');
    expect(logs.length).toBeGreaterThan(0);
    expectNoSecret(logs, [...Object.values(s), ...flat]);
  });
});

describe('PUT /api/v1/assistants/{assistant_id}', () => {
  it('changes only the fields it names', async () => {
    const user = await f.user();
    const s = newSecrets();
    const created = await createAssistant(user, fullBody(uniqueName('put-named'), s));
    const response = await update(user.headers, created.id, {
      description: 'New description',
      webhook_url: 'https://hooks.example.test/v2',
      is_active: true,
    });
    expect(response.statusCode, response.body).toBe(200);
    const body = response.json();
    const { updated_at: _a, ...after } = body;
    const { updated_at: _b, ...before } = created;
    expect(after).toEqual({
      ...before,
      description: 'New description',
      webhook_url: 'https://hooks.example.test/v2',
      is_active: true,
    });
    expect((await get(user.headers, created.id)).json()).toEqual(body);
  });

  it('replaces a nested object given; its omitted inner fields take their defaults', async () => {
    const user = await f.user();
    const created = await createAssistant(user, fullBody(uniqueName('put-nested'), newSecrets()));
    const response = await update(user.headers, created.id, {
      llm_settings: { temperature: 0.1 },
      rag_settings: { enabled: true, chunk_size: 2000 },
    });
    expect(response.statusCode, response.body).toBe(200);
    const body = response.json();
    expect(body.llm_settings).toMatchObject({
      temperature: 0.1,
      max_tokens: 1000,
      top_p: 1,
      frequency_penalty: 0,
      presence_penalty: 0,
      stop_sequences: [],
    });
    expect(body.llm_settings.system_prompt).not.toBe('You are Olga, a terse order clerk.');
    expect(body.rag_settings).toMatchObject({
      enabled: true,
      chunk_size: 2000,
      search_limit: 3,
      similarity_threshold: 0.7,
      chunking_strategy: 'recursive',
      auto_process: true,
    });
    // Objects it did not name stay as they were.
    expect(body.interruption_settings).toEqual(created.interruption_settings);
    expect(body.stt_settings).toEqual(created.stt_settings);
  });

  it('keeps the stored secrets when the masked values read from the API are sent back', async () => {
    const user = await f.user();
    const s = newSecrets();
    const created = await createAssistant(user, fullBody(uniqueName('put-masked'), s));
    const response = await update(user.headers, created.id, {
      llm_provider_config: { ...(created.llm_provider_config as Json), model: 'model-huge' },
      carrier_a_config: created.carrier_a_config,
      carrier_b_config: created.carrier_b_config,
      tts_settings: created.tts_settings,
      stt_settings: created.stt_settings,
      llm_fallback_providers: created.llm_fallback_providers,
    });
    expect(response.statusCode, response.body).toBe(200);
    const body = response.json();
    expect(body.llm_provider_config).toMatchObject({ api_key: masked(s.llm), model: 'model-huge' });
    expect(body.carrier_a_config.auth_token).toBe(masked(s.carrierA));
    expect(body.carrier_b_config.api_key).toBe(masked(s.carrierB));
    expect(body.tts_settings.api_key).toBe(masked(s.tts));
    expect(body.tts_settings.provider_config.api_key).toBe(masked(s.ttsProvider));
    expect(body.stt_settings.api_key).toBe(masked(s.stt));
    expect(body.llm_fallback_providers.fallbacks.map((fb: Json) => fb.api_key)).toEqual([
      masked(s.fallback1),
      masked(s.fallback2),
    ]);
    const opened = await openedConfig(created.id);
    expect(opened).toMatchObject({
      llm_provider_config: { api_key: s.llm, model: 'model-huge' },
      carrier_a_config: { auth_token: s.carrierA },
      carrier_b_config: { api_key: s.carrierB },
      tts_settings: { api_key: s.tts, provider_config: { api_key: s.ttsProvider } },
      stt_settings: { api_key: s.stt },
      llm_fallback_providers: { fallbacks: [{ api_key: s.fallback1 }, { api_key: s.fallback2 }] },
    });
  });

  it('replaces a secret when a new one is sent', async () => {
    const user = await f.user();
    const old = secret('old');
    const created = await createAssistant(user, { llm_provider_config: { api_key: old } });
    const fresh = secret('new');
    const response = await update(user.headers, created.id, { llm_provider_config: { api_key: fresh } });
    expect(response.statusCode, response.body).toBe(200);
    expect(response.json().llm_provider_config.api_key).toBe(masked(fresh));
    expect(((await openedConfig(created.id)).llm_provider_config as Json).api_key).toBe(fresh);
  });

  it('answers 422 for a masked secret with nothing stored behind it, and changes nothing', async () => {
    const user = await f.user();
    const created = await createAssistant(user);
    const response = await update(user.headers, created.id, {
      description: 'should not stick',
      carrier_b_config: { api_key: '****abcd', connection_id: 'conn-1' },
    });
    expectValidation(response, ['body', 'carrier_b_config', 'api_key']);
    const after = (await get(user.headers, created.id)).json();
    expect(after.carrier_b_config).toBeNull();
    expect(after.description).toBeNull();
  });

  it('validates a PUT like a create, and a refused PUT changes nothing', async () => {
    const user = await f.user();
    const created = await createAssistant(user, { llm_settings: { temperature: 1 } });
    expectValidation(await update(user.headers, created.id, { llm_settings: { temperature: 3 } }), [
      'body',
      'llm_settings',
      'temperature',
    ]);
    expectValidation(await update(user.headers, created.id, { llm_provider: 'custom' }), [
      'body',
      'llm_provider_config',
      'base_url',
    ]);
    expectValidation(await update(user.headers, created.id, { unknown_field: 1 }), ['body', 'unknown_field']);
    const after = (await get(user.headers, created.id)).json();
    expect(after.llm_settings.temperature).toBe(1);
    expect(after.llm_provider).toBe('llm_a');
  });

  it('answers 422 for an empty body', async () => {
    const user = await f.user();
    const created = await createAssistant(user);
    const response = await update(user.headers, created.id, {});
    expect(response.statusCode, response.body).toBe(422);
  });

  it('answers 404 for an id that does not exist', async () => {
    const user = await f.user();
    const response = await update(user.headers, 987654321, { description: 'x' });
    expect(response.statusCode, response.body).toBe(404);
  });
});

describe('validation: 422 with the location of the fault', () => {
  const cases: Array<[string, Json, Array<string | number>, string?]> = [
    ['llm_provider not an allowed value', { llm_provider: 'llm_z' }, ['body', 'llm_provider']],
    [
      'tts provider not an allowed value',
      { tts_settings: { provider: 'tts_z' } },
      ['body', 'tts_settings', 'provider'],
    ],
    [
      'voicemail action not an allowed value',
      { voicemail_settings: { action: 'sing' } },
      ['body', 'voicemail_settings', 'action'],
    ],
    [
      'voicemail max_wait_seconds below 1',
      { voicemail_settings: { max_wait_seconds: 0 } },
      ['body', 'voicemail_settings', 'max_wait_seconds'],
    ],
    [
      'voicemail max_wait_seconds above 120',
      { voicemail_settings: { max_wait_seconds: 121 } },
      ['body', 'voicemail_settings', 'max_wait_seconds'],
    ],
    [
      'chunking_strategy not an allowed value',
      { rag_settings: { chunking_strategy: 'banana' } },
      ['body', 'rag_settings', 'chunking_strategy'],
    ],
    [
      'a flat carrier_a_account_sid without its auth token',
      { carrier_a_account_sid: 'AC-only' },
      ['body', 'carrier_a_config', 'auth_token'],
      'missing',
    ],
    [
      'a flat carrier_a_auth_token without its account SID',
      { carrier_a_auth_token: 'token-only-123456' },
      ['body', 'carrier_a_config', 'account_sid'],
      'missing',
    ],
    ['temperature below 0', { llm_settings: { temperature: -0.1 } }, ['body', 'llm_settings', 'temperature']],
    ['temperature above 2', { llm_settings: { temperature: 2.1 } }, ['body', 'llm_settings', 'temperature']],
    ['top_p above 1', { llm_settings: { top_p: 1.1 } }, ['body', 'llm_settings', 'top_p']],
    [
      'frequency_penalty below -2',
      { llm_settings: { frequency_penalty: -2.5 } },
      ['body', 'llm_settings', 'frequency_penalty'],
    ],
    [
      'presence_penalty above 2',
      { llm_settings: { presence_penalty: 2.5 } },
      ['body', 'llm_settings', 'presence_penalty'],
    ],
    ['max_tokens 0', { llm_settings: { max_tokens: 0 } }, ['body', 'llm_settings', 'max_tokens']],
    [
      'interruption_threshold 0',
      { interruption_settings: { interruption_threshold: 0 } },
      ['body', 'interruption_settings', 'interruption_threshold'],
    ],
    [
      'similarity_threshold above 1',
      { rag_settings: { similarity_threshold: 1.5 } },
      ['body', 'rag_settings', 'similarity_threshold'],
    ],
    ['idle_timeout 0', { idle_timeout: 0 }, ['body', 'idle_timeout']],
    ['webhook_url not http(s)', { webhook_url: 'ftp://hooks.example.test/calls' }, ['body', 'webhook_url']],
    ['sms_webhook_url not a URL', { sms_webhook_url: 'not a url' }, ['body', 'sms_webhook_url']],
    [
      'transfer number not E.164',
      { tools_settings: { transfer_call: { transfer_numbers: ['555-1234'] } } },
      ['body', 'tools_settings', 'transfer_call', 'transfer_numbers', 0],
    ],
    [
      'transfer number with a + but not a valid number',
      { tools_settings: { transfer_call: { transfer_numbers: ['+14155552671', '+1234'] } } },
      ['body', 'tools_settings', 'transfer_call', 'transfer_numbers', 1],
    ],
    [
      'custom provider without base_url',
      { llm_provider: 'custom', llm_provider_config: { api_key: 'sk-custom-0000-1111' } },
      ['body', 'llm_provider_config', 'base_url'],
    ],
    [
      'custom provider without any config',
      { llm_provider: 'custom' },
      ['body', 'llm_provider_config', 'base_url'],
    ],
    [
      'llm_provider_config without api_key',
      { llm_provider_config: { model: 'model-x' } },
      ['body', 'llm_provider_config', 'api_key'],
    ],
    [
      'keywords with nova-3',
      { stt_settings: { model: 'nova-3', keywords: [{ keyword: 'order' }] } },
      ['body', 'stt_settings', 'keywords'],
    ],
    [
      'keywords with the default model',
      { stt_settings: { keywords: [{ keyword: 'order' }] } },
      ['body', 'stt_settings', 'keywords'],
    ],
    [
      'keyterms with nova-2',
      { stt_settings: { model: 'nova-2', keyterms: ['order'] } },
      ['body', 'stt_settings', 'keyterms'],
    ],
    [
      'structured_data_schema not a JSON Schema',
      { custom_settings: { structured_data_schema: { type: 'banana' } } },
      ['body', 'custom_settings', 'structured_data_schema'],
    ],
    [
      'structured_data_schema with a bad keyword value',
      { custom_settings: { structured_data_schema: { type: 'object', required: 'order_id' } } },
      ['body', 'custom_settings', 'structured_data_schema'],
    ],
    ['unknown top-level field', { colour: 'blue' }, ['body', 'colour'], 'extra_forbidden'],
    [
      'unknown nested field',
      { llm_settings: { temp: 1 } },
      ['body', 'llm_settings', 'temp'],
      'extra_forbidden',
    ],
    [
      'tts_d without provider_config.project_uuid',
      { tts_settings: { provider: 'tts_d', voice_id: 'v-d' } },
      ['body', 'tts_settings', 'provider_config', 'project_uuid'],
    ],
    [
      'chunk_overlap equal to chunk_size',
      { rag_settings: { chunk_size: 500, chunk_overlap: 500 } },
      ['body', 'rag_settings', 'chunk_overlap'],
    ],
    [
      'chunk_overlap above chunk_size',
      { rag_settings: { chunk_size: 500, chunk_overlap: 800 } },
      ['body', 'rag_settings', 'chunk_overlap'],
    ],
    [
      'a masked secret on create (nothing stored)',
      { llm_provider_config: { api_key: '****abcd' } },
      ['body', 'llm_provider_config', 'api_key'],
    ],
    [
      'custom fallback without base_url',
      {
        llm_fallback_providers: {
          enabled: true,
          fallbacks: [{ provider: 'custom', api_key: 'sk-fb-00001111' }],
        },
      },
      ['body', 'llm_fallback_providers', 'fallbacks', 0, 'base_url'],
    ],
  ];

  for (const [label, payload, loc, type] of cases) {
    it(label, async () => {
      const user = await f.user();
      const name = uniqueName('invalid');
      expectValidation(await create(user.headers, { name, ...payload }), loc, type);
      // Nothing was created.
      const listed = await list(user.headers);
      expect(listed.json()).toEqual([]);
      expect(listed.headers['x-total-count']).toBe('0');
    });
  }

  it('custom_llm_url satisfies base_url for the custom provider', async () => {
    const user = await f.user();
    const body = await createAssistant(user, {
      llm_provider: 'custom',
      llm_provider_config: { api_key: 'sk-custom-abcdefgh-9999' },
      custom_llm_url: 'https://custom.example.test/v1',
    });
    expect(body.llm_provider_config).toEqual({
      api_key: '****9999',
      base_url: 'https://custom.example.test/v1',
    });
  });

  it('name missing', async () => {
    const user = await f.user();
    expectValidation(await create(user.headers, { description: 'no name' }), ['body', 'name'], 'missing');
  });

  it('name blank', async () => {
    const user = await f.user();
    expectValidation(await create(user.headers, { name: '' }), ['body', 'name']);
    expectValidation(await create(user.headers, { name: '   ' }), ['body', 'name']);
  });

  it('name too long (201 characters), while 200 is accepted', async () => {
    const user = await f.user();
    expectValidation(await create(user.headers, { name: 'n'.repeat(201) }), ['body', 'name']);
    const ok = await create(user.headers, { name: 'n'.repeat(200) });
    expect(ok.statusCode, ok.body).toBe(201);
  });

  it('a body that is not an object', async () => {
    const user = await f.user();
    const response = await t.app.inject({
      method: 'POST',
      url: BASE,
      headers: { ...user.headers, 'content-type': 'application/json' },
      payload: '[1,2]',
    });
    expect(response.statusCode, response.body).toBe(422);
  });
});

describe('names are unique per organization', () => {
  it('answers 409 for a second assistant with the same name, also after trimming', async () => {
    const user = await f.user();
    await createAssistant(user, { name: 'Reception' });
    const again = await create(user.headers, { name: 'Reception' });
    expect(again.statusCode, again.body).toBe(409);
    expect(typeof again.json().detail).toBe('string');
    const padded = await create(user.headers, { name: '  Reception  ' });
    expect(padded.statusCode, padded.body).toBe(409);
    const listed = await list(user.headers);
    expect(listed.headers['x-total-count']).toBe('1');
  });

  it('lets exactly one of several parallel creates with one name through (the others 409)', async () => {
    const user = await f.user();
    const responses = await Promise.all(
      Array.from({ length: 5 }, () => create(user.headers, { name: 'Race' })),
    );
    const codes = responses.map((r) => r.statusCode).sort();
    expect(codes).toEqual([201, 409, 409, 409, 409]);
    expect((await list(user.headers)).headers['x-total-count']).toBe('1');
  });

  it('lets exactly one of two parallel renames to one name through (the other 409)', async () => {
    const user = await f.user();
    const a = await createAssistant(user);
    const b = await createAssistant(user);
    const responses = await Promise.all([
      update(user.headers, a.id, { name: 'Renamed race' }),
      update(user.headers, b.id, { name: 'Renamed race' }),
    ]);
    expect(responses.map((r) => r.statusCode).sort()).toEqual([200, 409]);
  });

  it('allows the same name in another organization', async () => {
    const one = await f.user();
    const two = await f.user();
    await createAssistant(one, { name: 'Shared name' });
    const response = await create(two.headers, { name: 'Shared name' });
    expect(response.statusCode, response.body).toBe(201);
    expect(response.json().organization_id).toBe(two.organizationId);
  });

  it('answers 409 when a PUT renames to a name already taken, and keeps the old name', async () => {
    const user = await f.user();
    await createAssistant(user, { name: 'Taken' });
    const other = await createAssistant(user, { name: 'Other' });
    const response = await update(user.headers, other.id, { name: 'Taken' });
    expect(response.statusCode, response.body).toBe(409);
    expect((await get(user.headers, other.id)).json().name).toBe('Other');
    // Renaming to its own name or a free one works.
    expect((await update(user.headers, other.id, { name: 'Other' })).statusCode).toBe(200);
    const renamed = await update(user.headers, other.id, { name: 'Free' });
    expect(renamed.statusCode, renamed.body).toBe(200);
    expect(renamed.json().name).toBe('Free');
  });
});

describe('GET /api/v1/assistants', () => {
  let user: TestUser;
  let ids: number[];
  beforeAll(async () => {
    user = await f.user();
    ids = [];
    for (const [name, active] of [
      ['List A', true],
      ['List B', false],
      ['List C', true],
    ] as const) {
      ids.push((await createAssistant(user, { name, is_active: active })).id);
    }
  });

  it('lists every assistant of the organization in creation order with X-Total-Count', async () => {
    const response = await list(user.headers);
    expect(response.statusCode, response.body).toBe(200);
    expect((response.json() as Assistant[]).map((a) => a.id)).toEqual(ids);
    expect(response.headers['x-total-count']).toBe('3');
    for (const item of response.json() as Assistant[])
      expect(Object.keys(item).sort()).toEqual(RESPONSE_FIELDS);
  });

  it('pages with skip and limit; the total counts every match', async () => {
    const response = await list(user.headers, '?skip=1&limit=1');
    expect(response.statusCode, response.body).toBe(200);
    expect((response.json() as Assistant[]).map((a) => a.id)).toEqual([ids[1]]);
    expect(response.headers['x-total-count']).toBe('3');
    const beyond = await list(user.headers, '?skip=10');
    expect(beyond.json()).toEqual([]);
    expect(beyond.headers['x-total-count']).toBe('3');
  });

  it('active_only=true lists only active assistants; false lists all', async () => {
    const active = await list(user.headers, '?active_only=true');
    expect(active.statusCode, active.body).toBe(200);
    expect((active.json() as Assistant[]).map((a) => a.id)).toEqual([ids[0], ids[2]]);
    expect(active.headers['x-total-count']).toBe('2');
    const all = await list(user.headers, '?active_only=false');
    expect((all.json() as Assistant[]).map((a) => a.id)).toEqual(ids);
  });

  it('accepts limit 1 and 1000, refuses 0, 1001, a negative skip and a non-boolean active_only', async () => {
    expect((await list(user.headers, '?limit=1')).json()).toHaveLength(1);
    expect((await list(user.headers, '?limit=1000')).statusCode).toBe(200);
    expectValidation(await list(user.headers, '?limit=0'), ['query', 'limit']);
    expectValidation(await list(user.headers, '?limit=1001'), ['query', 'limit']);
    expectValidation(await list(user.headers, '?skip=-1'), ['query', 'skip']);
    expectValidation(await list(user.headers, '?active_only=maybe'), ['query', 'active_only']);
  });

  it('is an empty list with a total of 0 for an organization without assistants', async () => {
    const fresh = await f.user();
    const response = await list(fresh.headers);
    expect(response.statusCode).toBe(200);
    expect(response.json()).toEqual([]);
    expect(response.headers['x-total-count']).toBe('0');
  });
});

describe('DELETE /api/v1/assistants/{assistant_id}', () => {
  it('answers 204 with no body, then the assistant is gone (404) and its name is free', async () => {
    const user = await f.user();
    const created = await createAssistant(user, { name: 'Short lived' });
    const response = await remove(user.headers, created.id);
    expect(response.statusCode, response.body).toBe(204);
    expect(response.body).toBe('');
    expect((await get(user.headers, created.id)).statusCode).toBe(404);
    expect((await remove(user.headers, created.id)).statusCode).toBe(404);
    expect((await update(user.headers, created.id, { description: 'x' })).statusCode).toBe(404);
    expect((await list(user.headers)).json()).toEqual([]);
    const again = await create(user.headers, { name: 'Short lived' });
    expect(again.statusCode, again.body).toBe(201);
  });
});

describe('security', () => {
  it('answers 401 without credentials on every route', async () => {
    const user = await f.user();
    const created = await createAssistant(user);
    const none = {};
    const responses = [
      await create(none, { name: uniqueName() }),
      await list(none),
      await get(none, created.id),
      await update(none, created.id, { description: 'x' }),
      await remove(none, created.id),
    ];
    for (const response of responses) {
      expect(response.statusCode, response.body).toBe(401);
      expect(typeof response.json().detail).toBe('string');
    }
    expect((await get(user.headers, created.id)).json().description).toBeNull();
  });

  it('answers 401 for a bad token', async () => {
    const response = await list({ authorization: 'Bearer not-a-real-token' });
    expect(response.statusCode, response.body).toBe(401);
  });

  it('refuses an API key without the assistants area (403) on every route', async () => {
    const user = await f.user();
    const created = await createAssistant(user);
    const key = await f.apiKey(user, { permissions: { calls: 'read_write' } });
    const responses = [
      await create(key.headers, { name: uniqueName() }),
      await list(key.headers),
      await get(key.headers, created.id),
      await update(key.headers, created.id, { description: 'x' }),
      await remove(key.headers, created.id),
    ];
    for (const response of responses) expect(response.statusCode, response.body).toBe(403);
    expect((await get(user.headers, created.id)).statusCode).toBe(200);
  });

  it('lets an assistants:read key read but not write (403)', async () => {
    const user = await f.user();
    const created = await createAssistant(user);
    const key = await f.apiKey(user, { permissions: { assistants: 'read' } });
    const listed = await list(key.headers);
    expect(listed.statusCode, listed.body).toBe(200);
    expect((listed.json() as Assistant[]).map((a) => a.id)).toEqual([created.id]);
    const fetched = await get(key.headers, created.id);
    expect(fetched.statusCode, fetched.body).toBe(200);
    expect(fetched.json()).toEqual(created);
    expect((await create(key.headers, { name: uniqueName() })).statusCode).toBe(403);
    expect((await update(key.headers, created.id, { description: 'x' })).statusCode).toBe(403);
    expect((await remove(key.headers, created.id)).statusCode).toBe(403);
    const after = await list(user.headers);
    expect(after.headers['x-total-count']).toBe('1');
    expect((after.json() as Assistant[])[0]?.description).toBeNull();
  });

  it('lets an assistants:read_write key create, change and delete', async () => {
    const user = await f.user();
    const key = await f.apiKey(user, { permissions: { assistants: 'read_write' } });
    const created = await create(key.headers, { name: uniqueName('by key') });
    expect(created.statusCode, created.body).toBe(201);
    expect(created.json().organization_id).toBe(user.organizationId);
    const id = created.json().id;
    expect((await update(key.headers, id, { description: 'via key' })).json().description).toBe('via key');
    expect((await remove(key.headers, id)).statusCode).toBe(204);
  });

  it("never shows or touches another organization's assistant (404, never listed)", async () => {
    const owner = await f.user();
    const stranger = await f.user();
    const s = newSecrets();
    const theirs = await createAssistant(owner, fullBody(uniqueName('private'), s));
    expect((await get(stranger.headers, theirs.id)).statusCode).toBe(404);
    expect((await update(stranger.headers, theirs.id, { description: 'hijacked' })).statusCode).toBe(404);
    expect((await update(stranger.headers, theirs.id, { name: 'hijacked' })).statusCode).toBe(404);
    expect((await remove(stranger.headers, theirs.id)).statusCode).toBe(404);
    const listed = await list(stranger.headers);
    expect(listed.json()).toEqual([]);
    expect(listed.headers['x-total-count']).toBe('0');
    const key = await f.apiKey(stranger, { permissions: { assistants: 'read_write' } });
    expect((await get(key.headers, theirs.id)).statusCode).toBe(404);
    expect((await remove(key.headers, theirs.id)).statusCode).toBe(404);
    // Untouched for its owner.
    expect((await get(owner.headers, theirs.id)).json()).toEqual(theirs);
  });

  it('a member of the organization sees and manages its assistants', async () => {
    const admin = await f.user();
    const created = await createAssistant(admin);
    const member = await f.member(admin.organizationId, 'user');
    expect((await get(member.headers, created.id)).statusCode).toBe(200);
    const own = await create(member.headers, { name: uniqueName('member') });
    expect(own.statusCode, own.body).toBe(201);
    expect(own.json()).toMatchObject({ organization_id: admin.organizationId, user_id: member.id });
  });

  it('answers 404 for an unknown id and 422 for an id that is not a number', async () => {
    const user = await f.user();
    expect((await get(user.headers, 987654321)).statusCode).toBe(404);
    expect((await remove(user.headers, 987654321)).statusCode).toBe(404);
    expect((await get(user.headers, 'abc')).statusCode).toBe(422);
  });
});

describe('settled design points', () => {
  it('null removes a stored llm_provider_config or carrier config', async () => {
    const user = await new Factories(t).user();
    const created = await t.app.inject({
      method: 'POST',
      url: '/api/v1/assistants',
      headers: user.headers,
      payload: {
        name: 'removable',
        llm_provider_config: { api_key: 'sk-removable-0000aaaa', model: 'm' },
        carrier_b_config: { api_key: 'kb-removable-0000bbbb', connection_id: 'c1' },
      },
    });
    expect(created.statusCode, created.body).toBe(201);
    const updated = await t.app.inject({
      method: 'PUT',
      url: `/api/v1/assistants/${created.json().id}`,
      headers: user.headers,
      payload: { llm_provider_config: null, carrier_b_config: null },
    });
    expect(updated.statusCode, updated.body).toBe(200);
    expect(updated.json().llm_provider_config).toBeNull();
    expect(updated.json().carrier_b_config).toBeNull();
  });

  it('a custom model reached by custom_llm_url alone needs no API key', async () => {
    const user = await new Factories(t).user();
    const created = await t.app.inject({
      method: 'POST',
      url: '/api/v1/assistants',
      headers: user.headers,
      payload: { name: 'local model', llm_provider: 'custom', custom_llm_url: 'http://10.0.0.5:8080/v1' },
    });
    expect(created.statusCode, created.body).toBe(201);
    expect(created.json().llm_provider_config).toEqual({ base_url: 'http://10.0.0.5:8080/v1' });
    const given = await t.app.inject({
      method: 'POST',
      url: '/api/v1/assistants',
      headers: user.headers,
      payload: { name: 'given without key', llm_provider_config: { model: 'm' } },
    });
    expect(given.statusCode).toBe(422);
    expect(given.json().detail[0].loc).toEqual(['body', 'llm_provider_config', 'api_key']);
  });

  it("refuses tts_a's extra fields with another provider", async () => {
    const user = await new Factories(t).user();
    const response = await t.app.inject({
      method: 'POST',
      url: '/api/v1/assistants',
      headers: user.headers,
      payload: { name: 'wrong extras', tts_settings: { provider: 'tts_b', stability: 0.4 } },
    });
    expect(response.statusCode).toBe(422);
    expect(response.json().detail).toEqual([
      {
        loc: ['body', 'tts_settings', 'stability'],
        msg: 'stability applies only to tts_a',
        type: 'extra_forbidden',
      },
    ]);
  });
});
