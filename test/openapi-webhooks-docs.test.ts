/**
 * The outgoing webhooks the OpenAPI document describes (their payload schemas must accept real
 * deliveries: a call through the carrier simulator, an inbound SMS, a test event), and the /docs
 * page: Switchboard's own, with a "try it" that reaches the server it was served from.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LOGO_SVG } from '../src/http/docs-page.js';
import { CarrierASimulator } from '../src/sim/carrier-a.js';
import { Factories } from './support/factories.js';
import { startTestPlatform, type TestPlatform, waitFor } from './support/harness.js';
import { documentAjv, type Json } from './support/openapi-document.js';
import {
  type ReceivedWebhook,
  startWebhookReceiver,
  type WebhookReceiver,
} from './support/webhook-receiver.js';

const sim = new CarrierASimulator();
let receiver: WebhookReceiver;
let receiverUrl: string;
let received: ReceivedWebhook[];
let t: TestPlatform;
let doc: Json;

beforeAll(async () => {
  await sim.start();
  receiver = await startWebhookReceiver();
  receiverUrl = receiver.url;
  received = receiver.received;
  t = await startTestPlatform({ CARRIER_A_BASE_URL: sim.baseUrl }, { listen: true });
  const response = await t.app.inject({ method: 'GET', url: '/openapi.json' });
  expect(response.statusCode).toBe(200);
  doc = response.json();
});
afterAll(async () => {
  await sim.stop();
  await t?.close();
  await receiver?.close();
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
    const components = (doc.components as { schemas: Record<string, Json> }).schemas;
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

    const { compile } = documentAjv(doc);
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
