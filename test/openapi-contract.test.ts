/**
 * The OpenAPI document as a contract (src/http/openapi.ts): named schemas as `$ref`s and never
 * inlined, literal unions as enums, defaults and examples valid against their own schemas, examples
 * on the main bodies, described tags, the authentication story, outgoing webhooks whose payload
 * schemas match real deliveries, and a /docs page that is Switchboard's. A clash of titles and an
 * undescribed tag fail a tiny app's start. The tests share one platform (listening, with the carrier
 * simulator), and read its document once.
 */
import { createServer, type Server } from 'node:http';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import Fastify from 'fastify';
import { Type } from 'typebox';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AREAS } from '../src/http/access.js';
import { LOGO_SVG } from '../src/http/docs-page.js';
import { installOpenApi, TAGS } from '../src/http/openapi.js';
import { CarrierASimulator } from '../src/sim/carrier-a.js';
import { Factories } from './support/factories.js';
import { startTestPlatform, type TestPlatform, waitFor } from './support/harness.js';

type Json = Record<string, unknown>;
const addFormats = ((addFormatsModule as unknown as { default?: typeof addFormatsModule }).default ??
  addFormatsModule) as unknown as (ajv: Ajv2020) => Ajv2020;

const sim = new CarrierASimulator();
const received: Array<{ headers: Record<string, string | string[] | undefined>; body: string }> = [];
let receiver: Server;
let receiverUrl: string;
let t: TestPlatform;
let doc: Json;
let components: Record<string, Json>;

beforeAll(async () => {
  await sim.start();
  receiver = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    received.push({ headers: req.headers, body: Buffer.concat(chunks).toString('utf8') });
    res.writeHead(204).end();
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  const address = receiver.address();
  receiverUrl = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}/events`;
  t = await startTestPlatform({ CARRIER_A_BASE_URL: sim.baseUrl }, { listen: true });
  const response = await t.app.inject({ method: 'GET', url: '/openapi.json' });
  expect(response.statusCode).toBe(200);
  doc = response.json();
  components = (doc.components as { schemas: Record<string, Json> }).schemas;
});
afterAll(async () => {
  await sim.stop();
  await t?.close();
  receiver.closeAllConnections();
  await new Promise<void>((resolve) => receiver.close(() => resolve()));
});

const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Every object inside `value`, with the JSON path to it. */
function* objects(value: unknown, path = ''): Generator<[string, Json]> {
  if (Array.isArray(value)) {
    for (const [i, item] of value.entries()) yield* objects(item, `${path}/${i}`);
  } else if (isObject(value)) {
    yield [path, value];
    for (const [key, item] of Object.entries(value)) yield* objects(item, `${path}/${key}`);
  }
}

const METHODS = ['get', 'put', 'post', 'delete', 'patch'];
function operations(items: unknown): Array<[string, Json]> {
  return Object.entries((items ?? {}) as Record<string, Json>).flatMap(([path, item]) =>
    METHODS.filter((m) => isObject(item[m])).map(
      (m) => [`${m.toUpperCase()} ${path}`, item[m] as Json] as [string, Json],
    ),
  );
}

/** An Ajv that resolves the document's `#/components/schemas/…` references. */
function documentAjv(): { ajv: Ajv2020; compile(schema: unknown): ReturnType<Ajv2020['compile']> } {
  const ajv = addFormats(new Ajv2020({ strict: false, allErrors: true }));
  const rebased = JSON.parse(
    JSON.stringify({ components: doc.components }).replaceAll('"#/components/', '"doc.json#/components/'),
  );
  ajv.addSchema({ $id: 'doc.json', ...rebased });
  let n = 0;
  return {
    ajv,
    compile(schema: unknown) {
      const text = JSON.stringify(schema).replaceAll('"#/components/', '"doc.json#/components/');
      n += 1;
      return ajv.compile({ ...JSON.parse(text), $id: `check-${n}.json` });
    },
  };
}

describe('named schemas', () => {
  const REQUIRED = [
    'Assistant',
    'AssistantCreate',
    'AssistantUpdate',
    'PhoneNumber',
    'PhoneNumberCreate',
    'Call',
    'CallInitiate',
    'TranscriptSegment',
    'Campaign',
    'CampaignCreate',
    'CampaignExecution',
    'Graph',
    'GraphCreate',
    'SmsMessage',
    'SmsSend',
    'ErrorBody',
    'ValidationError',
    'Organization',
    'User',
    'ApiKey',
    'WebhookDelivery',
    'CallEvent',
    'SmsEvent',
  ];

  it('exist under components.schemas and are referenced with $ref', () => {
    const text = JSON.stringify({ paths: doc.paths, webhooks: doc.webhooks, components: doc.components });
    for (const name of REQUIRED) {
      expect(components, name).toHaveProperty([name]);
      expect(text.includes(`"$ref":"#/components/schemas/${name}"`), `${name} is referenced`).toBe(true);
    }
    // The list form of an error's detail is the named item.
    expect(JSON.stringify(components.ErrorBody)).toContain('#/components/schemas/ValidationError');
    expect(components.ValidationError?.required).toEqual(['loc', 'msg', 'type']);
  });

  it('are never inlined: no titled schema is left outside its component, every $ref resolves', () => {
    for (const [path, node] of objects({ paths: doc.paths, webhooks: doc.webhooks })) {
      expect(typeof node.title === 'string' && /^[A-Z]/.test(node.title), `titled schema at ${path}`).toBe(
        false,
      );
    }
    for (const [name, schema] of Object.entries(components)) {
      for (const [path, node] of objects(schema)) {
        if (path === '') continue;
        expect(typeof node.title === 'string', `${name}${path} is titled inside another component`).toBe(
          false,
        );
      }
    }
    for (const [path, node] of objects(doc)) {
      if (typeof node.$ref !== 'string') continue;
      const name = node.$ref.replace('#/components/schemas/', '');
      expect(components, `${path} → ${node.$ref}`).toHaveProperty([name]);
    }
    // 375 inlined copies of ErrorBody made a 440 kB document.
    expect(JSON.stringify(doc).length).toBeLessThan(300_000);
  });

  it('replaces a use of the error envelope by a $ref, the response keeping its own description', () => {
    const responses = (doc.paths as Record<string, Record<string, Json>>)[
      '/api/v1/assistants/{assistant_id}'
    ]!.get!.responses as Record<string, Json>;
    expect(responses['404']).toEqual({
      description: 'Assistant not found in your organization',
      content: { 'application/json': { schema: { $ref: '#/components/schemas/ErrorBody' } } },
    });
  });

  it('writes the error answers most operations share once, under components.responses', () => {
    const shared = (doc.components as { responses: Record<string, Json> }).responses;
    expect(shared.ValidationFailed).toEqual({
      description: 'Validation failed (detail lists the issues)',
      content: { 'application/json': { schema: { $ref: '#/components/schemas/ErrorBody' } } },
    });
    expect(Object.keys(shared).sort()).toEqual(
      [
        'BadRequest',
        'PayloadTooLarge',
        'RateLimited',
        'Unauthorized',
        'UnsupportedMediaType',
        'ValidationFailed',
      ].sort(),
    );
    const uses = { ValidationFailed: 0, Unauthorized: 0 };
    for (const item of Object.values(doc.paths as Record<string, Record<string, Json>>))
      for (const operation of Object.values(item))
        for (const response of Object.values((operation.responses ?? {}) as Record<string, Json>)) {
          const name = String(response.$ref ?? '').replace('#/components/responses/', '');
          if (name in uses) uses[name as keyof typeof uses] += 1;
        }
    expect(uses.ValidationFailed).toBeGreaterThan(50);
    expect(uses.Unauthorized).toBeGreaterThan(50);
  });

  it('fails the start of an app whose two different schemas share a title', async () => {
    const app = Fastify();
    await installOpenApi(app, { publicUrl: 'http://127.0.0.1:1', version: '0.0.0' });
    const one = Type.Object({ a: Type.String() }, { title: 'Thing' });
    const two = Type.Object({ b: Type.Integer() }, { title: 'Thing' });
    app.get('/one', { schema: { tags: ['system'], response: { 200: one } } }, async () => ({ a: 'x' }));
    app.get('/two', { schema: { tags: ['system'], response: { 200: two } } }, async () => ({ b: 1 }));
    await expect(app.ready()).rejects.toThrow(/Two different schemas are titled "Thing"/);
    await app.close();
  });

  it('accepts one title used twice for the same schema, whatever the description of each use', async () => {
    const app = Fastify();
    await installOpenApi(app, { publicUrl: 'http://127.0.0.1:1', version: '0.0.0' });
    const thing = Type.Object({ a: Type.String() }, { title: 'Thing', description: 'A thing' });
    app.get('/one', { schema: { tags: ['system'], response: { 200: thing } } }, async () => ({ a: 'x' }));
    app.get(
      '/two',
      { schema: { tags: ['system'], response: { 404: { ...thing, description: 'Not found' } } } },
      async () => ({ a: 'x' }),
    );
    await app.ready();
    const built = app.swagger() as Json;
    expect((built.components as { schemas: Json }).schemas).toHaveProperty(['Thing']);
    await app.close();
  });
});

describe('closed value sets', () => {
  it('are enums, never unions of one-value branches', () => {
    for (const [path, node] of objects({
      paths: doc.paths,
      webhooks: doc.webhooks,
      components: doc.components,
    })) {
      const branches = (node.anyOf ?? node.oneOf) as Json[] | undefined;
      if (!branches) continue;
      const literals = branches.filter(
        (b) => b.const !== undefined || (Array.isArray(b.enum) && b.enum.length === 1),
      );
      expect(literals.length, `literal union at ${path}`).toBe(0);
    }
  });

  it('list their values where the code has a closed set', () => {
    const property = (schema: string, name: string) =>
      (components[schema]!.properties as Record<string, Json>)[name]!;
    expect(property('Call', 'status').enum).toEqual(
      expect.arrayContaining(['queued', 'in-progress', 'completed']),
    );
    expect(property('Call', 'direction')).toEqual({ type: 'string', enum: ['inbound', 'outbound'] });
    expect(property('SmsMessage', 'status').enum).toEqual(
      expect.arrayContaining(['queued', 'delivered', 'received']),
    );
    expect(property('SmsMessage', 'direction').enum).toEqual(['inbound', 'outbound']);
    expect(property('SmsSendResult', 'status').enum).toEqual(['queued', 'sent', 'failed']);
    expect(property('PhoneNumber', 'provider').enum).toEqual(
      expect.arrayContaining(['carrier_a', 'carrier_b']),
    );
    expect(property('TranscriptSegment', 'speaker')).toEqual({ type: 'string', enum: ['user', 'assistant'] });
  });
});

describe('defaults and examples', () => {
  it('are valid against the schema they sit on', () => {
    const { compile } = documentAjv();
    const checked: string[] = [];
    const failures: string[] = [];
    const check = (path: string, schema: unknown, value: unknown) => {
      const validate = compile(schema);
      checked.push(path);
      if (!validate(value)) failures.push(`${path}: ${JSON.stringify(validate.errors?.slice(0, 3))}`);
    };
    for (const [path, node] of objects({
      paths: doc.paths,
      webhooks: doc.webhooks,
      components: doc.components,
    })) {
      // A schema's own annotations.
      if ('default' in node && (node.type !== undefined || node.anyOf || node.$ref || node.properties))
        check(`${path} default`, node, node.default);
      if (Array.isArray(node.examples) && !('content' in node))
        for (const [i, example] of node.examples.entries()) check(`${path} examples/${i}`, node, example);
      // Media and parameter objects: `example`, or `examples` of `{value}`.
      if (isObject(node.schema)) {
        if ('example' in node) check(`${path} example`, node.schema, node.example);
        if (isObject(node.examples))
          for (const [name, example] of Object.entries(node.examples as Record<string, Json>))
            check(`${path} examples/${name}`, node.schema, example.value);
      }
    }
    expect(failures).toEqual([]);
    expect(checked.length).toBeGreaterThan(50);
  });

  it('are given for the main request and response bodies', () => {
    const paths = doc.paths as Record<string, Record<string, Json>>;
    const body = (path: string, method: string) =>
      ((paths[path]![method]!.requestBody as Json).content as Record<string, Json>)['application/json']!;
    for (const [path, method] of [
      ['/api/v1/assistants', 'post'],
      ['/api/v1/phone-numbers', 'post'],
      ['/calls/initiate', 'post'],
      ['/sms/send', 'post'],
      ['/api/v1/campaigns', 'post'],
      ['/api/v1/assistant-graphs', 'post'],
      ['/api/v1/organization/webhook-deliveries/test', 'post'],
    ] as const) {
      expect(body(path, method), `${method} ${path}`).toHaveProperty(['example']);
    }
    expect((body('/api/v1/assistants', 'post').example as Json).name).toBe('Front desk');
    for (const name of ['PhoneNumber', 'SmsSendResult', 'CallInitiated'])
      expect(components[name], name).toHaveProperty(['examples']);
  });
});

describe('tags', () => {
  it('are listed once with a description, and every operation carries one of them', () => {
    const tags = doc.tags as Array<{ name: string; description?: string }>;
    expect(tags.map((tag) => tag.name)).toEqual(TAGS.map((tag) => tag.name));
    for (const tag of tags) expect(tag.description, tag.name).toMatch(/\w{3,}/);
    const names = new Set(tags.map((tag) => tag.name));
    for (const [label, operation] of [...operations(doc.paths), ...operations(doc.webhooks)]) {
      const own = operation.tags as string[];
      expect(own?.length, label).toBeGreaterThan(0);
      for (const tag of own) expect(names.has(tag), `${label}: ${tag}`).toBe(true);
    }
    const paths = doc.paths as Record<string, Record<string, Json>>;
    expect(paths['/webhooks/{carrier}/{kind}']!.post!.tags).toEqual(['carrier-webhooks']);
  });

  it('fail the start of an app with an operation whose tag is not described', async () => {
    const app = Fastify();
    await installOpenApi(app, { publicUrl: 'http://127.0.0.1:1', version: '0.0.0' });
    app.get('/x', { schema: { tags: ['carrier webhooks'] } }, async () => 'x');
    await expect(app.ready()).rejects.toThrow(/tag "carrier webhooks", which TAGS/);
    await app.close();
  });
});

describe('authentication', () => {
  it('is described at the document level: the three ways in, CSRF, key areas and levels, JWT-only operations', () => {
    const description = (doc.info as Json).description as string;
    for (const text of ['sk_', 'JWT', 'sb_session', 'X-CSRF-Token', 'read_write', ...AREAS])
      expect(description, text).toContain(text);
    expect(description).toMatch(/JWT-only operations[\s\S]*`POST \/v1\/sms-compliance\/submit`/);
    const schemes = (doc.components as { securitySchemes: Record<string, Json> }).securitySchemes;
    for (const [name, scheme] of Object.entries(schemes))
      expect(String(scheme.description).length, name).toBeGreaterThan(40);
    expect(schemes.cookieAuth!.description).toContain('x-csrf-token');
  });
});

describe('outgoing webhooks', () => {
  const EVENTS = [
    'call.ringing',
    'call.in_progress',
    'call.completed',
    'sms.received',
    'sms.delivered',
    'webhook.test',
  ];

  it('are described per event, with the payload schema, the signature headers and the answers', () => {
    const webhooks = doc.webhooks as Record<string, { post: Json }>;
    for (const event of EVENTS) {
      const operation = webhooks[event]?.post;
      expect(operation, event).toBeDefined();
      const schema = ((operation!.requestBody as Json).content as Record<string, { schema: Json }>)[
        'application/json'
      ]!.schema;
      expect(schema.$ref, event).toMatch(/^#\/components\/schemas\/(CallEvent|SmsEvent|TestEvent)$/);
      const headers = (operation!.parameters as Json[]).map((p) => `${p.in}:${p.name}`);
      expect(headers).toEqual(
        expect.arrayContaining(['header:X-Switchboard-Signature', 'header:X-Switchboard-Timestamp']),
      );
      expect(operation!.responses).toHaveProperty(['2XX']);
    }
    const callTypes = ((components.CallEvent!.properties as Record<string, Json>).type!.enum ??
      []) as string[];
    expect(callTypes).toEqual(expect.arrayContaining(['call.ringing', 'call.completed', 'call.no_answer']));
  });

  it('match what is really delivered: call events, an SMS event and the test event', async () => {
    const f = new Factories(t);
    const admin = await f.user();
    const account = {
      account_sid: 'AC00000000000000000000000000000c01',
      auth_token: 'contract-token-0123456789',
    };
    sim.addAccount(account);
    const put = await t.app.inject({
      method: 'PUT',
      url: '/api/v1/organization',
      headers: admin.headers,
      payload: { carrier_a: account },
    });
    expect(put.statusCode, put.body).toBe(200);
    const assistant = await t.app.inject({
      method: 'POST',
      url: '/api/v1/assistants',
      headers: admin.headers,
      payload: {
        name: 'Contract',
        webhook_url: `${receiverUrl}/calls`,
        sms_webhook_url: `${receiverUrl}/sms`,
      },
    });
    expect(assistant.statusCode, assistant.body).toBe(201);
    const number = await t.app.inject({
      method: 'POST',
      url: '/api/v1/phone-numbers',
      headers: admin.headers,
      payload: { phone_number: '+14155558900', provider: 'carrier_a', assistant_id: assistant.json().id },
    });
    expect(number.statusCode, number.body).toBe(201);
    sim.setCallOutcome('+14155558901', { status: 'completed', durationSeconds: 7 });
    const call = await t.app.inject({
      method: 'POST',
      url: '/calls/initiate',
      headers: admin.headers,
      payload: { from_phone_number: '+14155558900', to_phone_number: '+14155558901' },
    });
    expect(call.statusCode, call.body).toBe(200);
    await sim.settle();
    const inbound = await sim.sendInboundMessage({
      webhookUrl: `${t.baseUrl}/webhooks/carrier_a/sms`,
      accountSid: account.account_sid,
      from: '+14155558902',
      to: '+14155558900',
      body: 'Is this the contract line?',
    });
    expect(inbound?.status).toBe(204);
    const test = await t.app.inject({
      method: 'POST',
      url: '/api/v1/organization/webhook-deliveries/test',
      headers: admin.headers,
      payload: { url: `${receiverUrl}/test` },
    });
    expect(test.statusCode, test.body).toBe(200);

    const types = () => new Set(received.map((r) => JSON.parse(r.body).type as string));
    await waitFor(() => {
      const seen = types();
      return ['call.ringing', 'call.in_progress', 'call.completed', 'sms.received', 'webhook.test'].every(
        (e) => seen.has(e),
      )
        ? true
        : undefined;
    }, 20_000);

    const { compile } = documentAjv();
    const webhooks = doc.webhooks as Record<string, { post: Json }>;
    for (const delivery of received) {
      const body = JSON.parse(delivery.body) as Json;
      const operation = webhooks[body.type as string]?.post;
      expect(operation, `${body.type} is documented`).toBeDefined();
      const schema = ((operation!.requestBody as Json).content as Record<string, { schema: Json }>)[
        'application/json'
      ]!.schema;
      const validate = compile(schema);
      expect(validate(body), `${body.type}: ${JSON.stringify(validate.errors)}`).toBe(true);
      for (const parameter of operation!.parameters as Json[]) {
        const value = delivery.headers[String(parameter.name).toLowerCase()];
        const check = compile(parameter.schema);
        expect(check(value), `${body.type} header ${parameter.name}=${value}`).toBe(true);
      }
    }
  });
});

describe('the /docs page', () => {
  async function page(url: string) {
    let response = await t.app.inject({ method: 'GET', url });
    for (let hops = 0; response.statusCode >= 300 && response.statusCode < 400 && hops < 5; hops++) {
      url = new URL(String(response.headers.location), `http://localhost${url}`).pathname;
      response = await t.app.inject({ method: 'GET', url });
    }
    return response;
  }

  it("carries Switchboard's name, logo and favicon, and a content security policy", async () => {
    const html = await page('/docs');
    expect(html.statusCode).toBe(200);
    expect(html.body).toContain('<title>Switchboard API reference</title>');
    expect(html.body).toContain('theme/favicon.svg');
    expect(html.body).not.toContain('favicon-32x32.png');
    const csp = String(html.headers['content-security-policy']);
    expect(csp).toContain("connect-src 'self'");
    expect(csp).not.toContain('upgrade-insecure-requests');
    const favicon = await page('/docs/static/theme/favicon.svg');
    expect(favicon.headers['content-type']).toBe('image/svg+xml');
  });

  it('initialises Swagger UI with our logo, persisted authorization and no outside validator', async () => {
    const script = (await page('/docs/static/swagger-initializer.js')).body;
    expect(script).toContain(Buffer.from(LOGO_SVG).toString('base64'));
    expect(script).toMatch(/"persistAuthorization":\s*true/);
    expect(script).toMatch(/validatorUrl: null/);
  });

  it('gives "try it" the address the page was served from, and the bearer scheme for API keys', async () => {
    const spec = (await page('/docs/json')).json() as Json;
    const servers = spec.servers as Array<{ url: string }>;
    expect(servers[0]!.url).toBe('/');
    expect(servers.map((s) => s.url)).toContain(t.config.publicUrl);
    const bearer = (spec.components as { securitySchemes: Record<string, Json> }).securitySchemes.bearerAuth!;
    expect(bearer).toMatchObject({ type: 'http', scheme: 'bearer' });
    // The published document keeps PUBLIC_URL alone: clients are generated from it.
    expect((doc.servers as Array<{ url: string }>).map((s) => s.url)).toEqual([t.config.publicUrl]);
  });

  it('lets an API key "try it": a bearer request to the page\'s own origin is answered', async () => {
    const f = new Factories(t);
    const user = await f.user();
    const key = await t.app.inject({
      method: 'POST',
      url: '/api/v1/users/me/api-keys',
      headers: user.headers,
      payload: { name: 'docs page', permissions: { assistants: 'read' } },
    });
    expect(key.statusCode, key.body).toBe(201);
    const secret = key.json().key as string;
    const response = await fetch(`${t.baseUrl}/api/v1/assistants`, {
      headers: { authorization: `Bearer ${secret}`, origin: t.baseUrl as string },
    });
    expect(response.status).toBe(200);
  });
});
