/**
 * Custom tools in live calls, end to end through the simulated phone: the model calls an HTTP tool
 * (a local server, the request signed with the organization's webhook secret) and then a serverless
 * tool (the cloud function simulator runs it with the organization's credentials), and the caller
 * hears answers built from their results; each call is recorded as a `call.tool` event; a tool that
 * runs past 1.5 s makes the caller hear its filler; a failing tool is told to the model and the call
 * goes on; a function tool without the organization's cloud credentials is left out, and why is
 * recorded. The rig: carrier_a, stt_a, the language model and tts_a simulators.
 */
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifyWebhookSignature } from '../src/domains/webhooks/signature.js';
import { listenOnLoopback } from '../src/lib/net.js';
import { hearToEnd } from '../src/sim/demo-caller.js';
import { LambdaSimulator } from '../src/sim/lambda.js';
import type { SimulatedPhone } from '../src/sim/phone.js';
import { afterGreeting, BOOK, hearAnswer, startVoiceRig, type VoiceRig } from './support/voice-rig.js';
import type { RigOrganization } from './support/voice-rig-vendors.js';

const CLOUD = { accessKeyId: 'AKIAVOICETOOLS00001', secretAccessKey: 'voice/Tools+Secret=0123456789abcdef' };
const SECOND = "Yes, three o'clock works for me";

interface Received {
  path: string;
  headers: IncomingMessage['headers'];
  body: string;
}

const received: Received[] = [];
let server: Server;
let toolBase: string;
const lambda = new LambdaSimulator();
let rig: VoiceRig;

beforeAll(async () => {
  server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks).toString('utf8');
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    received.push({ path, headers: req.headers, body });
    const answer = () => {
      if (path === '/broken') return res.writeHead(500).end('the weather service is down');
      const args = JSON.parse(body || '{}') as { city?: string };
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ city: args.city, forecast: 'sunny' }));
    };
    if (path === '/slow') setTimeout(answer, 2500);
    else answer();
  });
  toolBase = `http://127.0.0.1:${await listenOnLoopback(server)}`;
  await lambda.start();
  lambda.addAccount(CLOUD);
  lambda.addFunctions(CLOUD.accessKeyId, 'us-east-1', [
    {
      FunctionName: 'lookup-order',
      run: (event) => {
        const { arguments: args } = event as { arguments: { order_number: string } };
        return { order_number: args.order_number, status: 'shipped' };
      },
    },
  ]);
  rig = await startVoiceRig({
    env: { LAMBDA_ENDPOINT_URL: lambda.baseUrl, ALLOW_PRIVATE_TARGETS: 'true' },
  });
}, 60_000);

afterAll(async () => {
  await rig?.close();
  await lambda.stop();
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

function weatherTool(path: string, extra: Record<string, unknown> = {}) {
  return {
    name: 'weather',
    description: 'The forecast for a city',
    type: 'http',
    parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
    http: { url: `${toolBase}${path}`, headers: { authorization: 'Bearer weather-tool-secret' } },
    ...extra,
  };
}

const ORDER_TOOL = {
  name: 'lookup_order',
  description: 'Looks an order up by its number',
  type: 'function',
  parameters: { type: 'object', properties: { order_number: { type: 'string' } } },
  function: { function_name: 'lookup-order' },
};

async function storeCloudCredentials(org: RigOrganization) {
  const put = await rig.t.app.inject({
    method: 'PUT',
    url: '/api/v1/organization',
    headers: org.admin.headers,
    payload: {
      cloud_functions: {
        access_key: CLOUD.accessKeyId,
        secret_key: CLOUD.secretAccessKey,
        region: 'us-east-1',
      },
    },
  });
  expect(put.statusCode, put.body).toBe(200);
}

/** Asks twice, hearing each answer out (a slow tool's pause is heard through, up to `pauseMs`). */
function askTwice(pauseMs = 600) {
  return async (phone: SimulatedPhone) => {
    await afterGreeting(phone);
    await phone.say('book-appointment');
    await hearToEnd(phone, { silenceMs: pauseMs, timeoutMs: 15_000 });
    await phone.say('three-oclock');
    await hearAnswer(phone);
  };
}

const replies = (turns: Array<{ kind: string; assistant_text: string | null }>) =>
  turns.filter((turn) => turn.kind === 'reply').map((turn) => turn.assistant_text);

describe('custom tools in a live call', () => {
  it('answers from an HTTP tool and then a serverless tool, and records both', async () => {
    const outcome = await rig.call({
      heard: [BOOK, SECOND],
      assistant: { tools_settings: { custom_tools: [weatherTool('/weather'), ORDER_TOOL] } },
      prepare: storeCloudCredentials,
      script: askTwice(),
      llm: [
        { toolCalls: [{ name: 'weather', arguments: { city: 'Lisbon' } }] },
        { text: 'It is {{tool_result:weather.forecast}} in {{tool_result:weather.city}}.' },
        { toolCalls: [{ name: 'lookup_order', arguments: { order_number: 'A-17' } }] },
        {
          text: 'Your order {{tool_result:lookup_order.order_number}} has {{tool_result:lookup_order.status}}.',
        },
      ],
    });
    expect(replies(outcome.turns)).toEqual(['It is sunny in Lisbon.', 'Your order A-17 has shipped.']);

    // The model was shown both tools, and was given each result.
    const offered = outcome.llmRequests[0]!.tools.map((tool) => (tool.function as { name: string }).name);
    expect(offered).toEqual(['weather', 'lookup_order']);
    const toolMessages = outcome.llmRequests.flatMap((r) => r.messages).filter((m) => m.role === 'tool');
    expect(toolMessages.map((m) => m.content)).toEqual(
      expect.arrayContaining([
        JSON.stringify({ city: 'Lisbon', forecast: 'sunny' }),
        JSON.stringify({ order_number: 'A-17', status: 'shipped' }),
      ]),
    );

    // The HTTP tool's request: signed with the organization's webhook secret, naming the call.
    const request = received.findLast((r) => r.path === '/weather')!;
    expect(JSON.parse(request.body)).toEqual({ city: 'Lisbon' });
    expect(request.headers['x-switchboard-call-id']).toBe(String(outcome.callId));
    expect(request.headers.authorization).toBe('Bearer weather-tool-secret');
    const secret = await rig.t.app.inject({
      method: 'GET',
      url: '/api/v1/organization/webhook-secret',
      headers: outcome.org.admin.headers,
    });
    const { webhook_secret } = secret.json() as { webhook_secret: string };
    expect(
      verifyWebhookSignature(
        webhook_secret,
        String(request.headers['x-switchboard-timestamp']),
        request.body,
        String(request.headers['x-switchboard-signature']),
      ),
    ).toBe(true);

    // The function ran in the organization's account.
    expect(lambda.invocations().at(-1)?.accessKeyId).toBe(CLOUD.accessKeyId);

    const tools = outcome.events.filter((e) => e.type === 'call.tool').map((e) => e.data);
    expect(tools).toEqual([
      expect.objectContaining({ name: 'weather', ok: true, type: 'http', status: 200 }),
      expect.objectContaining({
        name: 'lookup_order',
        ok: true,
        type: 'function',
        function_name: 'lookup-order',
      }),
    ]);
    const recorded = JSON.stringify(outcome.events);
    expect(recorded).not.toContain('weather-tool-secret');
    expect(recorded).not.toContain(CLOUD.secretAccessKey);
  }, 90_000);

  it('says the filler while a tool runs past 1.5 s', async () => {
    const outcome = await rig.call({
      heard: [BOOK, SECOND],
      assistant: {
        tools_settings: {
          custom_tools: [weatherTool('/slow', { filler_message: 'Let me look at the sky.' })],
        },
      },
      script: askTwice(3000),
      llm: [
        { toolCalls: [{ name: 'weather', arguments: { city: 'Porto' } }] },
        { text: 'It is {{tool_result:weather.forecast}} in {{tool_result:weather.city}}.' },
      ],
    });
    expect(replies(outcome.turns)[0]).toBe('Let me look at the sky. It is sunny in Porto.');
    const tool = outcome.events.find((e) => e.type === 'call.tool')?.data;
    expect(tool).toMatchObject({ name: 'weather', ok: true, status: 200 });
    expect(Number(tool?.duration_ms)).toBeGreaterThanOrEqual(2400);
  }, 90_000);

  it('tells the model a tool failed and goes on; a function tool without credentials is left out', async () => {
    const outcome = await rig.call({
      heard: [BOOK, SECOND],
      assistant: { tools_settings: { custom_tools: [weatherTool('/broken'), ORDER_TOOL] } },
      script: askTwice(),
      llm: [
        { toolCalls: [{ name: 'weather', arguments: { city: 'Faro' } }] },
        { text: 'Sorry, I cannot see the forecast right now.' },
      ],
    });
    const [first, second] = replies(outcome.turns);
    expect(first).toBe('Sorry, I cannot see the forecast right now.');
    // The call went on: the next question has its (default) answer.
    expect(second).toMatch(/^You said: Yes, three o'clock works for me/);
    const told = outcome.llmRequests[1]!.messages.find((m) => m.role === 'tool');
    expect(String(told?.content)).toMatch(
      /weather tool failed: its server answered 500.*the weather service is down/,
    );
    expect(outcome.events.find((e) => e.type === 'call.tool')?.data).toMatchObject({
      name: 'weather',
      ok: false,
      status: 500,
    });
    // The function tool was not offered: the organization has no cloud credentials.
    const offered = outcome.llmRequests[0]!.tools.map((tool) => (tool.function as { name: string }).name);
    expect(offered).toEqual(['weather']);
    const skipped = outcome.events.find((e) => e.type === 'call.tool_skipped')?.data;
    expect(JSON.stringify(skipped)).toMatch(
      /lookup_order needs the organization's cloud_functions credentials/,
    );
  }, 90_000);
});
