/**
 * `llm_settings` a language model vendor cannot honour are refused when they are saved (422 at the
 * field), not found out in a call: penalties on llm_b and llm_c, a temperature above 1 or together
 * with top_p on llm_b, more output tokens than deepseek-chat writes on llm_e. Defaults are always
 * accepted (every call sends them; the adapter leaves out what the vendor does not take), a new
 * `llm_provider` must be able to honour the stored settings, fallbacks carry no settings and are not
 * held to them, and LLM presets' settings follow the same table. The tests share one platform; each
 * creates the users it needs.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectValidation } from './support/assertions.js';
import { Factories, type TestUser } from './support/factories.js';
import { startTestPlatform, type TestPlatform } from './support/harness.js';

const BASE = '/api/v1/assistants';
const PRESETS = '/api/v1/organization/llm-presets';

let t: TestPlatform;
let f: Factories;
beforeAll(async () => {
  t = await startTestPlatform();
  f = new Factories(t);
});
afterAll(() => t.close());

type Json = Record<string, unknown>;
let serial = 0;

function post(user: TestUser, url: string, payload: Json) {
  return t.app.inject({ method: 'POST', url, headers: user.headers, payload });
}
function put(user: TestUser, url: string, payload: Json) {
  return t.app.inject({ method: 'PUT', url, headers: user.headers, payload });
}
function createAssistant(user: TestUser, payload: Json) {
  serial += 1;
  return post(user, BASE, { name: `llm settings ${serial}`, ...payload });
}
async function created(user: TestUser, payload: Json): Promise<Json & { id: number }> {
  const response = await createAssistant(user, payload);
  expect(response.statusCode, response.body).toBe(201);
  return response.json();
}

describe('llm_settings each vendor cannot honour are refused at save', () => {
  const cases: Array<[string, Json, Array<string | number>]> = [
    [
      'frequency_penalty on llm_b',
      { llm_provider: 'llm_b', llm_settings: { frequency_penalty: 0.5 } },
      ['frequency_penalty'],
    ],
    [
      'presence_penalty on llm_b',
      { llm_provider: 'llm_b', llm_settings: { presence_penalty: -0.4 } },
      ['presence_penalty'],
    ],
    [
      'a temperature above 1 on llm_b',
      { llm_provider: 'llm_b', llm_settings: { temperature: 1.3 } },
      ['temperature'],
    ],
    [
      'temperature and top_p together on llm_b',
      { llm_provider: 'llm_b', llm_settings: { temperature: 0.3, top_p: 0.8 } },
      ['top_p'],
    ],
    [
      'frequency_penalty on llm_c',
      { llm_provider: 'llm_c', llm_settings: { frequency_penalty: 1 } },
      ['frequency_penalty'],
    ],
    [
      'presence_penalty on llm_c',
      { llm_provider: 'llm_c', llm_settings: { presence_penalty: 0.2 } },
      ['presence_penalty'],
    ],
    [
      'max_tokens above 8192 on llm_e (deepseek-chat)',
      { llm_provider: 'llm_e', llm_settings: { max_tokens: 9000 } },
      ['max_tokens'],
    ],
  ];
  for (const [label, payload, field] of cases) {
    it(label, async () => {
      const user = await f.user();
      expectValidation(
        await createAssistant(user, payload),
        ['body', 'llm_settings', ...field],
        'value_error',
      );
    });
  }

  it('reports each refused field, and names the vendor', async () => {
    const user = await f.user();
    const response = await createAssistant(user, {
      llm_provider: 'llm_b',
      llm_settings: { temperature: 1.5, frequency_penalty: 0.1, presence_penalty: 0.1 },
    });
    expect(response.statusCode, response.body).toBe(422);
    const detail = response.json().detail as Array<{ loc: string[]; msg: string }>;
    expect(detail.map((d) => d.loc.at(-1)).sort()).toEqual([
      'frequency_penalty',
      'presence_penalty',
      'temperature',
    ]);
    for (const issue of detail) expect(issue.msg).toContain('llm_b');
  });

  it('accepts the defaults on every vendor, written out or left out', async () => {
    const user = await f.user();
    const defaults = {
      temperature: 0.7,
      max_tokens: 1000,
      top_p: 1,
      frequency_penalty: 0,
      presence_penalty: 0,
    };
    for (const provider of ['llm_a', 'llm_b', 'llm_c', 'llm_d', 'llm_e']) {
      await created(user, { llm_provider: provider, llm_settings: defaults });
      const bare = await created(user, { llm_provider: provider });
      expect(bare.llm_settings).toMatchObject(defaults);
    }
  });

  it('accepts what each vendor takes', async () => {
    const user = await f.user();
    const penalties = { frequency_penalty: 0.5, presence_penalty: -0.5, temperature: 1.4, top_p: 0.9 };
    for (const provider of ['llm_a', 'llm_d', 'llm_e'])
      await created(user, { llm_provider: provider, llm_settings: penalties });
    await created(user, {
      llm_provider: 'llm_b',
      llm_settings: { temperature: 0.9, stop_sequences: ['Bye'] },
    });
    await created(user, { llm_provider: 'llm_b', llm_settings: { top_p: 0.8 } });
    await created(user, { llm_provider: 'llm_c', llm_settings: { temperature: 1.8, top_p: 0.5 } });
    // deepseek-reasoner writes more than deepseek-chat.
    await created(user, {
      llm_provider: 'llm_e',
      llm_provider_config: { api_key: 'sk-ds-0000-1111', model: 'deepseek-reasoner' },
      llm_settings: { max_tokens: 20000 },
    });
  });

  it('refuses a new llm_provider that cannot honour the stored settings, and changes nothing', async () => {
    const user = await f.user();
    const assistant = await created(user, {
      llm_provider: 'llm_a',
      llm_settings: { frequency_penalty: 0.6 },
    });
    expectValidation(await put(user, `${BASE}/${assistant.id}`, { llm_provider: 'llm_b' }), [
      'body',
      'llm_settings',
      'frequency_penalty',
    ]);
    const after = (
      await t.app.inject({ method: 'GET', url: `${BASE}/${assistant.id}`, headers: user.headers })
    ).json();
    expect(after.llm_provider).toBe('llm_a');
    // With the penalty back at its default, the switch goes through.
    const switched = await put(user, `${BASE}/${assistant.id}`, {
      llm_provider: 'llm_b',
      llm_settings: { frequency_penalty: 0 },
    });
    expect(switched.statusCode, switched.body).toBe(200);
    expect(switched.json().llm_provider).toBe('llm_b');
  });

  it('checks a PUT of llm_settings against the stored provider, and a model change against the settings', async () => {
    const user = await f.user();
    const onC = await created(user, { llm_provider: 'llm_c' });
    expectValidation(await put(user, `${BASE}/${onC.id}`, { llm_settings: { presence_penalty: 0.3 } }), [
      'body',
      'llm_settings',
      'presence_penalty',
    ]);
    const reasoner = await created(user, {
      llm_provider: 'llm_e',
      llm_provider_config: { api_key: 'sk-ds-2222-3333', model: 'deepseek-reasoner' },
      llm_settings: { max_tokens: 16000 },
    });
    expectValidation(
      await put(user, `${BASE}/${reasoner.id}`, {
        llm_provider_config: { api_key: 'sk-ds-2222-3333', model: 'deepseek-chat' },
      }),
      ['body', 'llm_settings', 'max_tokens'],
    );
  });

  it('holds fallbacks to nothing: they carry no settings and answer with those their vendor takes', async () => {
    const user = await f.user();
    await created(user, {
      llm_provider: 'llm_a',
      llm_settings: { frequency_penalty: 0.4, temperature: 1.6 },
      llm_fallback_providers: {
        enabled: true,
        fallbacks: [{ provider: 'llm_b', api_key: 'sk-ant-fb-0000' }],
      },
    });
  });
});

describe('LLM presets follow the same table', () => {
  async function preset(user: TestUser, payload: Json) {
    serial += 1;
    return post(user, PRESETS, { name: `preset ${serial}`, model: 'm', ...payload });
  }

  it('refuses settings the preset provider cannot honour, at the field', async () => {
    const user = await f.user();
    expectValidation(await preset(user, { provider: 'llm_b', settings: { presence_penalty: 0.5 } }), [
      'body',
      'settings',
      'presence_penalty',
    ]);
    expectValidation(await preset(user, { provider: 'llm_c', settings: { frequency_penalty: 0.5 } }), [
      'body',
      'settings',
      'frequency_penalty',
    ]);
    expectValidation(await preset(user, { provider: 'llm_b', settings: { temperature: 1.2 } }), [
      'body',
      'settings',
      'temperature',
    ]);
    const accepted = await preset(user, {
      provider: 'llm_b',
      settings: { temperature: 0.4, frequency_penalty: 0 },
    });
    expect(accepted.statusCode, accepted.body).toBe(201);
  });

  it('checks an update with the provider and settings it leaves as they are', async () => {
    const user = await f.user();
    const response = await preset(user, { provider: 'llm_a', settings: { frequency_penalty: 0.7 } });
    expect(response.statusCode, response.body).toBe(201);
    const id = response.json().id as number;
    expectValidation(await put(user, `${PRESETS}/${id}`, { provider: 'llm_b' }), [
      'body',
      'settings',
      'frequency_penalty',
    ]);
    const onB = await preset(user, { provider: 'llm_b', settings: { temperature: 0.4 } });
    expectValidation(
      await put(user, `${PRESETS}/${onB.json().id}`, { settings: { temperature: 0.4, presence_penalty: 1 } }),
      ['body', 'settings', 'presence_penalty'],
    );
    const renamed = await put(user, `${PRESETS}/${id}`, { name: `renamed ${serial}` });
    expect(renamed.statusCode, renamed.body).toBe(200);
  });
});
