/**
 * The settings custom tools run from: an assistant's `tools_settings.custom_tools` (every default, one
 * test per rule checked at save — 422 at the field —, header values sealed at rest and masked in
 * answers, a masked value kept only while the tool's URL stays, older stored tools still readable,
 * another organization's assistant out of reach) and the organization's `cloud_functions` credential
 * (sealed, masked, removed with null, admin-only). Private targets are refused on this platform, as
 * in production, so that the outbound-target rules apply to tool URLs.
 */
import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { assistants, providerCredentials } from '../src/db/schema/index.js';
import { SECRET_PATHS } from '../src/domains/assistants/schemas.js';
import { openPaths } from '../src/lib/secret-paths.js';
import { SecretBox } from '../src/lib/secrets.js';
import { expectValidation } from './support/assertions.js';
import { Factories, type TestUser } from './support/factories.js';
import { startTestPlatform, TEST_SECRET_KEY, type TestPlatform } from './support/harness.js';
import { masked, secret } from './support/secrets.js';

type Json = Record<string, unknown>;

let t: TestPlatform;
let f: Factories;
beforeAll(async () => {
  t = await startTestPlatform(
    { ALLOW_PRIVATE_TARGETS: 'false' },
    { workers: false, hostLookup: async () => [{ address: '203.0.113.10', family: 4 }] },
  );
  f = new Factories(t);
});
afterAll(() => t.close());

let serial = 0;

function httpTool(extra: Json = {}): Json {
  return {
    name: 'weather',
    description: 'The forecast for a city',
    type: 'http',
    http: { url: 'https://tools.example.test/weather' },
    ...extra,
  };
}

const functionTool: Json = {
  name: 'lookup_order',
  description: 'Looks an order up',
  type: 'function',
  function: { function_name: 'lookup-order' },
};

async function createAssistant(user: TestUser, tools: unknown[]) {
  const n = ++serial;
  return t.app.inject({
    method: 'POST',
    url: '/api/v1/assistants',
    headers: user.headers,
    payload: { name: `tools ${n}`, tools_settings: { custom_tools: tools } },
  });
}

function putTools(user: TestUser, id: number, tools: unknown[]) {
  return t.app.inject({
    method: 'PUT',
    url: `/api/v1/assistants/${id}`,
    headers: user.headers,
    payload: { tools_settings: { custom_tools: tools } },
  });
}

async function storedConfig(id: number): Promise<Json> {
  const [row] = await t.database.db.select().from(assistants).where(eq(assistants.id, id));
  return row!.config as Json;
}

const customTools = (body: Json) => (body.tools_settings as { custom_tools: Json[] }).custom_tools;

describe('tools_settings.custom_tools', () => {
  it('fills in every default of an HTTP and a function tool', async () => {
    const user = await f.user();
    const response = await createAssistant(user, [httpTool(), functionTool]);
    expect(response.statusCode, response.body).toBe(201);
    expect(customTools(response.json())).toEqual([
      {
        ...httpTool(),
        parameters: { type: 'object', properties: {} },
        timeout_seconds: 10,
        http: { url: 'https://tools.example.test/weather', method: 'POST' },
      },
      { ...functionTool, parameters: { type: 'object', properties: {} }, timeout_seconds: 10 },
    ]);
  });

  it('seals header values at rest, masks them in answers, and keeps them when sent back masked', async () => {
    const user = await f.user();
    const token = secret('tool-header');
    const tool = httpTool({
      http: { url: 'https://tools.example.test/weather', method: 'GET', headers: { authorization: token } },
    });
    const created = await createAssistant(user, [tool]);
    expect(created.statusCode, created.body).toBe(201);
    const body = created.json() as Json & { id: number };
    expect((customTools(body)[0]!.http as Json).headers).toEqual({ authorization: masked(token) });
    expect(created.body).not.toContain(token);
    const stored = await storedConfig(body.id);
    expect(JSON.stringify(stored)).not.toContain(token);
    const opened = openPaths(stored, SECRET_PATHS, new SecretBox(TEST_SECRET_KEY));
    expect(customTools(opened)[0]).toMatchObject({ http: { headers: { authorization: token } } });

    // What GET shows, sent back: the stored header stays.
    const shown = customTools(body);
    const kept = await putTools(user, body.id, [{ ...shown[0], description: 'Weather, now' }]);
    expect(kept.statusCode, kept.body).toBe(200);
    const reopened = openPaths(await storedConfig(body.id), SECRET_PATHS, new SecretBox(TEST_SECRET_KEY));
    expect(customTools(reopened)[0]).toMatchObject({
      description: 'Weather, now',
      http: { headers: { authorization: token } },
    });

    // A masked header cannot follow the tool to another URL.
    const moved = await putTools(user, body.id, [
      { ...shown[0], http: { ...(shown[0]!.http as Json), url: 'https://elsewhere.example.test/' } },
    ]);
    expectValidation(moved, [
      'body',
      'tools_settings',
      'custom_tools',
      0,
      'http',
      'headers',
      'authorization',
    ]);

    // A change elsewhere in the assistant keeps the header too.
    const renamed = await t.app.inject({
      method: 'PUT',
      url: `/api/v1/assistants/${body.id}`,
      headers: user.headers,
      payload: { description: 'still has its tool' },
    });
    expect(renamed.statusCode, renamed.body).toBe(200);
    const after = openPaths(await storedConfig(body.id), SECRET_PATHS, new SecretBox(TEST_SECRET_KEY));
    expect(customTools(after)[0]).toMatchObject({ http: { headers: { authorization: token } } });
  });

  it('shows a tool stored before the shape was settled as it is', async () => {
    const user = await f.user();
    const created = await createAssistant(user, []);
    const id = (created.json() as { id: number }).id;
    const config = await storedConfig(id);
    const legacy = { name: 'old_tool', url: 'https://old.example.test', anything: { else: 1 } };
    (config.tools_settings as Json).custom_tools = [legacy];
    await t.database.db.update(assistants).set({ config }).where(eq(assistants.id, id));
    const read = await t.app.inject({
      method: 'GET',
      url: `/api/v1/assistants/${id}`,
      headers: user.headers,
    });
    expect(read.statusCode, read.body).toBe(200);
    expect(customTools(read.json())).toEqual([legacy]);
  });

  const refused: Array<[string, unknown[], Array<string | number>, string?]> = [
    ['two tools with one name', [httpTool(), { ...functionTool, name: 'weather' }], [1, 'name']],
    ['a built-in name', [httpTool({ name: 'transfer_call' })], [0, 'name']],
    ['another built-in name', [httpTool({ name: 'collect_digits' })], [0, 'name']],
    ['a name with a space', [httpTool({ name: 'the weather' })], [0, 'name']],
    ['no description', [{ ...httpTool(), description: undefined }], [0, 'description'], 'missing'],
    ['an unknown type', [httpTool({ type: 'grpc' })], [0, 'type']],
    [
      'parameters that are no JSON Schema',
      [httpTool({ parameters: { type: 'object', properties: { city: { type: 'town' } } } })],
      [0, 'parameters'],
    ],
    [
      'parameters that are not an object',
      [httpTool({ parameters: { type: 'string' } })],
      [0, 'parameters', 'type'],
    ],
    ['a time-out of 0', [httpTool({ timeout_seconds: 0 })], [0, 'timeout_seconds']],
    ['a time-out past 30 s', [httpTool({ timeout_seconds: 31 })], [0, 'timeout_seconds']],
    ['an http tool without http', [{ ...httpTool(), http: undefined }], [0, 'http'], 'missing'],
    [
      'a function tool without function',
      [{ ...functionTool, function: undefined }],
      [0, 'function'],
      'missing',
    ],
    [
      'a function tool with http',
      [{ ...functionTool, http: { url: 'https://x.example.test' } }],
      [0, 'http'],
      'extra_forbidden',
    ],
    [
      'an unknown method',
      [httpTool({ http: { url: 'https://tools.example.test', method: 'TRACE' } })],
      [0, 'http', 'method'],
    ],
    ['a URL that is not http', [httpTool({ http: { url: 'ftp://tools.example.test' } })], [0, 'http', 'url']],
    [
      'a header the platform sets',
      [
        httpTool({
          http: { url: 'https://tools.example.test', headers: { 'X-Switchboard-Signature': 'v1=0' } },
        }),
      ],
      [0, 'http', 'headers', 'X-Switchboard-Signature'],
    ],
    [
      'a header name with a space',
      [httpTool({ http: { url: 'https://tools.example.test', headers: { 'my header': 'x' } } })],
      [0, 'http', 'headers', 'my header'],
    ],
    [
      'a cloud metadata address',
      [httpTool({ http: { url: 'http://169.254.169.254/latest/meta-data' } })],
      [0, 'http', 'url'],
    ],
    [
      'a loopback address while private targets are refused',
      [httpTool({ http: { url: 'http://127.0.0.1:8080/tool' } })],
      [0, 'http', 'url'],
    ],
    [
      'a bad region',
      [{ ...functionTool, function: { function_name: 'f', region: 'moon-1' } }],
      [0, 'function', 'region'],
    ],
  ];

  it.each(refused)('refuses %s (422 at the field)', async (_what, tools, loc, type) => {
    const user = await f.user();
    const response = await createAssistant(user, tools);
    expectValidation(response, ['body', 'tools_settings', 'custom_tools', ...loc], type);
  });

  it('checks the rules on update too', async () => {
    const user = await f.user();
    const id = ((await createAssistant(user, [httpTool()])).json() as { id: number }).id;
    expectValidation(await putTools(user, id, [httpTool({ name: 'end_call' })]), [
      'body',
      'tools_settings',
      'custom_tools',
      0,
      'name',
    ]);
    expectValidation(await putTools(user, id, [httpTool({ http: { url: 'http://10.0.0.5/tool' } })]), [
      'body',
      'tools_settings',
      'custom_tools',
      0,
      'http',
      'url',
    ]);
  });

  it("refuses a request without credentials, and another organization's assistant", async () => {
    const owner = await f.user();
    const other = await f.user();
    const token = secret('other-org');
    const created = await createAssistant(owner, [
      httpTool({ http: { url: 'https://tools.example.test', headers: { 'x-api-key': token } } }),
    ]);
    const id = (created.json() as { id: number }).id;
    const anonymous = await t.app.inject({
      method: 'PUT',
      url: `/api/v1/assistants/${id}`,
      payload: { tools_settings: { custom_tools: [] } },
    });
    expect(anonymous.statusCode).toBe(401);
    const foreign = await putTools(other, id, [httpTool()]);
    expect(foreign.statusCode).toBe(404);
    const seen = await t.app.inject({
      method: 'GET',
      url: `/api/v1/assistants/${id}`,
      headers: other.headers,
    });
    expect(seen.statusCode).toBe(404);
    expect(seen.body).not.toContain(masked(token));
    // Unchanged by the refused attempts.
    const opened = openPaths(await storedConfig(id), SECRET_PATHS, new SecretBox(TEST_SECRET_KEY));
    expect(customTools(opened)[0]).toMatchObject({ http: { headers: { 'x-api-key': token } } });
  });
});

describe("the organization's cloud_functions credential", () => {
  const put = (user: TestUser, payload: Json) =>
    t.app.inject({ method: 'PUT', url: '/api/v1/organization', headers: user.headers, payload });
  const get = (user: TestUser) =>
    t.app.inject({ method: 'GET', url: '/api/v1/organization', headers: user.headers });

  it('is stored sealed, shown masked, kept when sent back masked, and removed with null', async () => {
    const admin = await f.user();
    const key = secret('cloud');
    const saved = await put(admin, {
      cloud_functions: { access_key: 'AKIAORGTOOLS000001', secret_key: key, region: 'eu-west-1' },
    });
    expect(saved.statusCode, saved.body).toBe(200);
    const view = { access_key: 'AKIAORGTOOLS000001', secret_key: masked(key), region: 'eu-west-1' };
    expect(saved.json().cloud_functions).toEqual(view);
    expect(saved.body).not.toContain(key);
    expect((await get(admin)).json().cloud_functions).toEqual(view);

    const rows = await t.database.db
      .select()
      .from(providerCredentials)
      .where(eq(providerCredentials.organizationId, admin.organizationId));
    const row = rows.find((r) => r.provider === 'cloud_functions');
    expect(row).toBeDefined();
    expect(row!.sealed).not.toContain(key);
    expect(new SecretBox(TEST_SECRET_KEY).openJson(row!.sealed)).toEqual({
      access_key: 'AKIAORGTOOLS000001',
      secret_key: key,
      region: 'eu-west-1',
    });

    const again = await put(admin, { cloud_functions: { ...view, region: 'us-east-1' } });
    expect(again.statusCode, again.body).toBe(200);
    expect(again.json().cloud_functions).toEqual({ ...view, region: 'us-east-1' });

    const removed = await put(admin, { cloud_functions: null });
    expect(removed.statusCode, removed.body).toBe(200);
    expect(removed.json().cloud_functions).toBeNull();
  });

  it('refuses a missing secret, a masked value with nothing stored, and a bad region', async () => {
    const admin = await f.user();
    expectValidation(await put(admin, { cloud_functions: { access_key: 'AKIA1' } }), [
      'body',
      'cloud_functions',
      'secret_key',
    ]);
    expectValidation(await put(admin, { cloud_functions: { access_key: 'AKIA1', secret_key: '****abcd' } }), [
      'body',
      'cloud_functions',
      'secret_key',
    ]);
    expectValidation(
      await put(admin, {
        cloud_functions: { access_key: 'AKIA1', secret_key: 'x'.repeat(40), region: 'Mars' },
      }),
      ['body', 'cloud_functions', 'region'],
    );
  });

  it('may be changed only by an admin, and is not seen by another organization', async () => {
    const admin = await f.user();
    const member = await f.member(admin.organizationId, 'user');
    const key = secret('member');
    const refused = await put(member, { cloud_functions: { access_key: 'AKIA2', secret_key: key } });
    expect(refused.statusCode).toBe(403);
    const anonymous = await t.app.inject({
      method: 'PUT',
      url: '/api/v1/organization',
      payload: { cloud_functions: { access_key: 'AKIA2', secret_key: key } },
    });
    expect(anonymous.statusCode).toBe(401);
    expect((await get(admin)).json().cloud_functions).toBeNull();

    const stored = await put(admin, { cloud_functions: { access_key: 'AKIA3', secret_key: key } });
    expect(stored.statusCode).toBe(200);
    // A member reads it masked; another organization does not see it at all.
    expect((await get(member)).json().cloud_functions).toEqual({
      access_key: 'AKIA3',
      secret_key: masked(key),
    });
    const other = await f.user();
    const theirs = await get(other);
    expect(theirs.json().cloud_functions).toBeNull();
    expect(theirs.body).not.toContain('AKIA3');
  });
});
