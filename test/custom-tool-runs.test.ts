/**
 * Custom tools as a call runs them, without a call: an HTTP tool against a local HTTP server (the
 * arguments as body or query, the webhook signature a receiver verifies, the configured headers, the
 * time-out, a 500, a redirect not followed, a big answer cut, a private address refused when the
 * policy refuses it), a function tool against the cloud function simulator (the answer, the
 * function's error, a time-out, refused credentials, no such function), the CallTools a call gets
 * from the settings (and which are left out, and why), and the language model simulator quoting a
 * tool's result.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifyWebhookSignature } from '../src/domains/webhooks/signature.js';
import { listenOnLoopback } from '../src/lib/net.js';
import { OutboundTargets } from '../src/lib/outbound-target.js';
import { LambdaFunctions } from '../src/providers/cloud/functions.js';
import { LambdaSimulator } from '../src/sim/lambda.js';
import { LlmSimulator } from '../src/sim/llm.js';
import { customCallTools } from '../src/voice/tools/custom-tools.js';
import { runFunctionTool } from '../src/voice/tools/function-tool.js';
import { type HttpToolSpec, MAX_ANSWER_BYTES, runHttpTool } from '../src/voice/tools/http-tool.js';
import type { ToolContext } from '../src/voice/tools/types.js';

const SIGNING_SECRET = 'whsec_test-signing-secret-for-tools';
const CLOUD = { accessKeyId: 'AKIATOOLS0000000001', secretAccessKey: 'tools/Secret+Key=0123456789abcdef' };

interface Received {
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
  body: string;
}

const received: Received[] = [];
let server: Server;
let base: string;
const routes: Record<string, (req: IncomingMessage, res: ServerResponse, body: string) => void> = {
  '/weather': (_req, res, body) => {
    const args = JSON.parse(body || '{}') as { city?: string };
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ city: args.city, forecast: 'sunny' }));
  },
  '/search': (req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ query: new URL(req.url ?? '/', 'http://x').searchParams.get('q') }));
  },
  '/slow': (_req, res) => {
    setTimeout(() => res.writeHead(200).end('late'), 3000).unref();
  },
  '/broken': (_req, res) => res.writeHead(500, 'Internal Server Error').end('database down'),
  '/moved': (_req, res) => res.writeHead(302, { location: 'http://169.254.169.254/latest' }).end(),
  '/big': (_req, res) => {
    res.writeHead(200, { 'content-type': 'text/plain' });
    res.end('x'.repeat(MAX_ANSWER_BYTES * 3));
  },
  '/empty': (_req, res) => res.writeHead(204).end(),
};

const lambda = new LambdaSimulator();
const functions = new LambdaFunctions();
let functionsAt: LambdaFunctions;

beforeAll(async () => {
  server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks).toString('utf8');
    received.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body });
    const route = routes[new URL(req.url ?? '/', 'http://x').pathname];
    if (route) route(req, res, body);
    else res.writeHead(404).end();
  });
  base = `http://127.0.0.1:${await listenOnLoopback(server)}`;

  await lambda.start();
  functionsAt = new LambdaFunctions({ endpoint: lambda.baseUrl });
  lambda.addAccount(CLOUD);
  lambda.addFunctions(CLOUD.accessKeyId, 'us-east-1', [
    {
      FunctionName: 'lookup-order',
      run: (event) => {
        const { arguments: args, call_id } = event as { arguments: { order: string }; call_id: number };
        return { order: args.order, status: 'shipped', call_id };
      },
    },
    {
      FunctionName: 'explode',
      run: () => {
        throw new TypeError('order is undefined');
      },
    },
    { FunctionName: 'sleepy', Timeout: 30, run: () => new Promise((r) => setTimeout(() => r('late'), 3000)) },
  ]);
  lambda.addFunctions(CLOUD.accessKeyId, 'eu-west-1', [
    { FunctionName: 'greet', run: () => 'hello from eu' },
  ]);
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  await lambda.stop();
  functions.close();
  functionsAt.close();
});

const allowing = new OutboundTargets({ allowPrivate: true });
const refusing = new OutboundTargets({ allowPrivate: false });

function context(callId = 4242, signal: AbortSignal = new AbortController().signal): ToolContext {
  return {
    signal,
    callId,
    call: {
      sendDigits: async () => undefined,
      collectDigits: async () => null,
    },
  };
}

function spec(path: string, extra: Partial<HttpToolSpec> = {}): HttpToolSpec {
  return { name: 'weather', url: `${base}${path}`, method: 'POST', headers: {}, timeoutMs: 2000, ...extra };
}

const deps = { targets: allowing, signingSecret: async () => SIGNING_SECRET };

describe('an HTTP tool', () => {
  it('posts the arguments as JSON, signed like a webhook, with the call, the tool and its headers', async () => {
    const outcome = await runHttpTool(
      spec('/weather', { headers: { authorization: 'Bearer tool-secret-123' } }),
      deps,
      { city: 'Lisbon' },
      context(4242),
    );
    expect(outcome.ok).toBe(true);
    expect(JSON.parse(outcome.result)).toEqual({ city: 'Lisbon', forecast: 'sunny' });
    const request = received.at(-1)!;
    expect(request.method).toBe('POST');
    expect(JSON.parse(request.body)).toEqual({ city: 'Lisbon' });
    expect(request.headers['content-type']).toBe('application/json');
    expect(request.headers['x-switchboard-call-id']).toBe('4242');
    expect(request.headers['x-switchboard-tool']).toBe('weather');
    expect(request.headers.authorization).toBe('Bearer tool-secret-123');
    const timestamp = String(request.headers['x-switchboard-timestamp']);
    const signature = String(request.headers['x-switchboard-signature']);
    expect(verifyWebhookSignature(SIGNING_SECRET, timestamp, request.body, signature)).toBe(true);
    expect(verifyWebhookSignature('whsec_another', timestamp, request.body, signature)).toBe(false);
    // What is recorded (beside the duration the session measures): the status, never a header value.
    expect(outcome.record).toMatchObject({ type: 'http', method: 'POST', status: 200 });
    expect(JSON.stringify(outcome.record)).not.toContain('tool-secret-123');
  });

  it('puts the arguments of a GET in the query, and signs the query string', async () => {
    const outcome = await runHttpTool(
      spec('/search?fixed=1', { method: 'GET', name: 'search' }),
      deps,
      { q: 'red shoes', size: 42 },
      context(),
    );
    expect(outcome.ok).toBe(true);
    expect(JSON.parse(outcome.result)).toEqual({ query: 'red shoes' });
    const request = received.at(-1)!;
    expect(request.method).toBe('GET');
    expect(request.body).toBe('');
    const query = new URL(request.url, 'http://x').search.slice(1);
    expect(query).toBe('fixed=1&q=red+shoes&size=42');
    expect(
      verifyWebhookSignature(
        SIGNING_SECRET,
        String(request.headers['x-switchboard-timestamp']),
        query,
        String(request.headers['x-switchboard-signature']),
      ),
    ).toBe(true);
  });

  it('gives up after its time-out and tells the model so', async () => {
    const started = Date.now();
    const outcome = await runHttpTool(spec('/slow', { timeoutMs: 300 }), deps, {}, context());
    expect(Date.now() - started).toBeLessThan(2500);
    expect(outcome).toMatchObject({ ok: false, record: { error: 'timeout', status: null } });
    expect(outcome.result).toMatch(/did not answer within/);
  });

  it('stops when the call cancels it', async () => {
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 100);
    const outcome = await runHttpTool(spec('/slow'), deps, {}, context(1, controller.signal));
    expect(outcome).toMatchObject({ ok: false, record: { error: 'cancelled' } });
  });

  it('reports a 500 with what the server said', async () => {
    const outcome = await runHttpTool(spec('/broken'), deps, {}, context());
    expect(outcome).toMatchObject({ ok: false, record: { status: 500, error: 'status' } });
    expect(outcome.result).toMatch(/answered 500 Internal Server Error: database down/);
  });

  it('does not follow a redirect', async () => {
    const before = received.length;
    const outcome = await runHttpTool(spec('/moved'), deps, {}, context());
    expect(outcome).toMatchObject({ ok: false, record: { status: 302, error: 'redirect' } });
    expect(received.length).toBe(before + 1);
  });

  it('cuts a big answer at the cap and says it was truncated', async () => {
    const outcome = await runHttpTool(spec('/big'), deps, {}, context());
    expect(outcome.ok).toBe(true);
    expect(outcome.result.startsWith('x'.repeat(MAX_ANSWER_BYTES))).toBe(true);
    expect(outcome.result).toMatch(/\[truncated: the answer was longer than 64 KB\]$/);
    expect(outcome.record).toMatchObject({ truncated: true, bytes: MAX_ANSWER_BYTES });
  });

  it('says when the answer is empty', async () => {
    const outcome = await runHttpTool(spec('/empty'), deps, {}, context());
    expect(outcome).toMatchObject({ ok: true, result: '(no content, status 204)' });
  });

  it('refuses a private address when the policy does, without connecting', async () => {
    const before = received.length;
    const outcome = await runHttpTool(spec('/weather'), { ...deps, targets: refusing }, {}, context());
    expect(outcome).toMatchObject({ ok: false, record: { error: 'refused', status: null } });
    expect(outcome.result).toMatch(/address is not allowed/);
    expect(received.length).toBe(before);
    const metadata = await runHttpTool(
      { ...spec('/'), url: 'http://169.254.169.254/latest/meta-data' },
      deps,
      {},
      context(),
    );
    expect(metadata).toMatchObject({ ok: false, record: { error: 'refused' } });
  });

  it('reports a closed port as unreachable', async () => {
    const outcome = await runHttpTool({ ...spec('/'), url: 'http://127.0.0.1:1/' }, deps, {}, context());
    expect(outcome).toMatchObject({ ok: false, record: { error: 'unreachable' } });
  });
});

describe('a function tool', () => {
  const run = (functionName: string, extra: { region?: string; timeoutMs?: number; bad?: boolean } = {}) =>
    runFunctionTool(
      {
        name: 'orders',
        functionName,
        region: extra.region ?? 'us-east-1',
        timeoutMs: extra.timeoutMs ?? 5000,
      },
      {
        functions: functionsAt,
        credentials: extra.bad ? { ...CLOUD, secretAccessKey: 'wrong/secret-0123456789abcdefGHIJ' } : CLOUD,
      },
      { order: 'A-17' },
      context(777),
    );

  it('invokes the function with {tool, arguments, call_id} and gives its answer', async () => {
    const outcome = await run('lookup-order');
    expect(outcome.ok).toBe(true);
    expect(JSON.parse(outcome.result)).toEqual({ order: 'A-17', status: 'shipped', call_id: 777 });
    expect(outcome.record).toMatchObject({
      type: 'function',
      function_name: 'lookup-order',
      region: 'us-east-1',
    });
    const invocation = lambda.invocations().at(-1)!;
    expect(invocation.signatureValid).toBe(true);
    expect(invocation.accessKeyId).toBe(CLOUD.accessKeyId);
    expect(JSON.stringify(outcome)).not.toContain(CLOUD.secretAccessKey);
  });

  it('runs in the region it is given', async () => {
    expect(await run('greet', { region: 'eu-west-1' })).toMatchObject({
      ok: true,
      result: '"hello from eu"',
    });
    expect(await run('greet')).toMatchObject({ ok: false, record: { error: 'not_found' } });
  });

  it("reports the function's own error", async () => {
    const outcome = await run('explode');
    expect(outcome).toMatchObject({
      ok: false,
      record: { error: 'function_error', function_error: 'Unhandled' },
    });
    expect(outcome.result).toMatch(/failed: TypeError: order is undefined/);
  });

  it('gives up after its time-out', async () => {
    const outcome = await run('sleepy', { timeoutMs: 300 });
    expect(outcome).toMatchObject({ ok: false, record: { error: 'timeout' } });
    expect(outcome.result).toMatch(/did not answer within/);
  });

  it('reports refused credentials, and a function that does not exist', async () => {
    const refused = await run('lookup-order', { bad: true });
    expect(refused).toMatchObject({ ok: false, record: { error: 'invalid_credentials', cloud_status: 403 } });
    expect(refused.result).toMatch(/refused the organization's credentials/);
    expect(await run('no-such-function')).toMatchObject({ ok: false, record: { error: 'not_found' } });
  });
});

describe('the custom tools of a call', () => {
  const tools = [
    {
      name: 'weather',
      description: 'The forecast for a city',
      type: 'http',
      parameters: { type: 'object', properties: { city: { type: 'string' } } },
      filler_message: 'Checking the sky.',
      timeout_seconds: 5,
      http: { url: 'http://127.0.0.1:9/weather', method: 'POST', headers: { 'x-key': 'k' } },
    },
    {
      name: 'orders',
      description: 'Looks an order up',
      type: 'function',
      parameters: { type: 'object', properties: {} },
      timeout_seconds: 10,
      function: { function_name: 'lookup-order' },
    },
    { name: 'legacy', url: 'https://old.example.test' },
  ];
  const deps = { targets: allowing, functions, signingSecret: async () => SIGNING_SECRET };

  it('offers each tool with its definition and filler, and leaves out what cannot run, saying why', () => {
    const settings = { tools_settings: { custom_tools: tools } } as never;
    const { tools: callTools, skipped } = customCallTools(settings, null, deps);
    expect(callTools.map((tool) => tool.definition)).toEqual([
      {
        name: 'weather',
        description: 'The forecast for a city',
        parameters: { type: 'object', properties: { city: { type: 'string' } } },
      },
    ]);
    expect(callTools[0]!.filler).toBe('Checking the sky.');
    expect(skipped.map((s) => s.name)).toEqual(['orders', 'legacy']);
    expect(skipped[0]!.reason).toMatch(/cloud_functions credentials/);
    expect(skipped[1]!.reason).toMatch(/no type/);

    const withCloud = customCallTools(settings, { ...toCloud(), region: null }, deps);
    expect(withCloud.tools.map((tool) => tool.definition.name)).toEqual(['weather', 'orders']);
    expect(withCloud.tools[1]!.filler).toBeUndefined();
  });

  it('runs a function tool in the credential region unless the tool names one', async () => {
    const settings = {
      tools_settings: {
        custom_tools: [
          { ...tools[1], name: 'greet', function: { function_name: 'greet' } },
          { ...tools[1], name: 'greet_us', function: { function_name: 'greet', region: 'us-east-1' } },
        ],
      },
    } as never;
    const { tools: callTools } = customCallTools(
      settings,
      { ...toCloud(), region: 'eu-west-1' },
      { ...deps, functions: functionsAt },
    );
    expect(await callTools[0]!.run({}, context())).toMatchObject({ ok: true, result: '"hello from eu"' });
    expect(await callTools[1]!.run({}, context())).toMatchObject({
      ok: false,
      record: { error: 'not_found' },
    });
  });
});

function toCloud() {
  return { accessKeyId: CLOUD.accessKeyId, secretAccessKey: CLOUD.secretAccessKey };
}

describe('the language model simulator', () => {
  it('quotes the tool results of a request in a scripted reply', async () => {
    const llm = new LlmSimulator();
    const url = await llm.start();
    try {
      llm.setScript('*', [
        { text: 'It is {{tool_result:weather.forecast}} in {{tool_result:weather.city}}; {{tool_result}}.' },
        { text: 'Nothing: {{tool_result:missing}}' },
      ]);
      const messages = [
        { role: 'user', content: 'Weather in Lisbon, and my order?' },
        {
          role: 'assistant',
          content: null,
          tool_calls: [
            { id: 'c1', type: 'function', function: { name: 'weather', arguments: '{}' } },
            { id: 'c2', type: 'function', function: { name: 'orders', arguments: '{}' } },
          ],
        },
        { role: 'tool', tool_call_id: 'c1', content: '{"city":"Lisbon","forecast":"sunny"}' },
        { role: 'tool', tool_call_id: 'c2', content: 'order shipped' },
      ];
      const ask = async () => {
        const response = await fetch(`${url}/chat/completions`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ model: 'm', messages }),
        });
        return ((await response.json()) as { choices: Array<{ message: { content: string } }> }).choices[0]!
          .message.content;
      };
      expect(await ask()).toBe('It is sunny in Lisbon; order shipped.');
      expect(await ask()).toBe('Nothing: (no tool result)');
    } finally {
      await llm.stop();
    }
  });
});
