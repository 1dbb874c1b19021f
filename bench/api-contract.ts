/**
 * What the API contract costs (issue 15). The OpenAPI document: its compact size and the time to
 * serve it, beside a `GET /health` in the same process (it is built and checked once, at start: the
 * start-up benchmark shows that cost). The typed client: a read of one assistant
 * through `@switchboard/client` (openapi-fetch) beside the same request made with plain `fetch`,
 * alternating in the same process against the same listening server — the client's share of a
 * request is the key figure.
 */
import { createSwitchboardClient } from '../clients/typescript/src/index.js';
import { benchUser, median, startBenchPlatform, table } from './support.js';

async function timeOf(work: () => Promise<unknown>): Promise<number> {
  const started = performance.now();
  await work();
  return performance.now() - started;
}

export async function run(args: string[]): Promise<void> {
  const rounds = Number(args[0] ?? 2000);
  const bench = await startBenchPlatform();
  const { app } = bench.platform;
  try {
    const health = () => app.inject({ method: 'GET', url: '/health' });
    await health();
    const document = await app.inject({ method: 'GET', url: '/openapi.json' });
    const served: number[] = [];
    const healthy: number[] = [];
    for (let i = 0; i < 50; i++) {
      served.push(await timeOf(() => app.inject({ method: 'GET', url: '/openapi.json' })));
      healthy.push(await timeOf(health));
    }
    console.log(`OpenAPI document: ${document.body.length} bytes compact`);
    table([
      { request: 'GET /health (baseline)', 'median ms': Number(median(healthy).toFixed(2)), ratio: 1 },
      {
        request: 'GET /openapi.json (served)',
        'median ms': Number(median(served).toFixed(2)),
        ratio: Number((median(served) / median(healthy)).toFixed(1)),
      },
    ]);

    const { headers } = await benchUser(bench.platform, 'client');
    const created = await fetch(`${bench.baseUrl}/api/v1/assistants`, {
      method: 'POST',
      headers: { ...headers, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'Bench assistant' }),
    });
    const assistantId = ((await created.json()) as { id: number }).id;
    const token = headers.authorization!.replace(/^Bearer /, '');
    const client = createSwitchboardClient({ baseUrl: bench.baseUrl, accessToken: token });
    const viaClient = async () => {
      const { data } = await client.GET('/api/v1/assistants/{assistant_id}', {
        params: { path: { assistant_id: assistantId } },
      });
      if (!data) throw new Error('client read failed');
    };
    const viaFetch = async () => {
      const response = await fetch(`${bench.baseUrl}/api/v1/assistants/${assistantId}`, { headers });
      if (!response.ok) throw new Error('fetch read failed');
      await response.json();
    };
    for (let i = 0; i < 100; i++) {
      await viaClient();
      await viaFetch();
    }
    const typed: number[] = [];
    const plain: number[] = [];
    for (let i = 0; i < rounds; i++) {
      typed.push(await timeOf(viaClient));
      plain.push(await timeOf(viaFetch));
    }
    table([
      { read: 'plain fetch (baseline)', 'median ms': Number(median(plain).toFixed(3)), ratio: 1 },
      {
        read: 'typed client (openapi-fetch)',
        'median ms': Number(median(typed).toFixed(3)),
        ratio: Number((median(typed) / median(plain)).toFixed(2)),
      },
    ]);
  } finally {
    await bench.close();
  }
}
