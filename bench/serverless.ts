/**
 * Serverless function discovery: how long `POST /api/serverless/list-functions` takes to list a
 * large account (every page, signed, over loopback HTTP to the cloud function simulator) beside the
 * same listing made with the SDK directly (one client, reused) against the same simulator, in the
 * same run. A middle row times the platform's adapter alone (a new SDK client per listing, as the
 * platform makes one per call), to tell the adapter's cost from the route's.
 *
 *   npm run bench -- serverless [functions=1000] [page size=50] [rounds=15]
 */
import { LambdaClient, paginateListFunctions } from '@aws-sdk/client-lambda';
import { LambdaFunctions } from '../src/providers/cloud/functions.js';
import { LambdaSimulator } from '../src/sim/lambda.js';
import { benchUser, median, startBenchPlatform, table } from './support.js';

export async function run(args: string[]): Promise<void> {
  const total = Number(args[0] ?? 1000);
  const pageSize = Number(args[1] ?? 50);
  const rounds = Number(args[2] ?? 15);
  const pages = Math.ceil(total / pageSize);

  const sim = new LambdaSimulator();
  sim.pageSize = pageSize;
  await sim.start();
  const account = {
    accessKeyId: 'AKIABENCH00000000001',
    secretAccessKey: 'bench/secret+key-0123456789abcdefghijk',
  };
  sim.addAccount(account);
  sim.addGeneratedFunctions(account.accessKeyId, 'us-east-1', total, 'bench');
  // The benchmark lists far more often than an organization may: lift the limit for it.
  const bench = await startBenchPlatform({
    LAMBDA_ENDPOINT_URL: sim.baseUrl,
    SERVERLESS_LIST_RATE_PER_MINUTE: '10000',
  });
  const { headers } = await benchUser(bench.platform, 'serverless');

  const sdk = new LambdaClient({
    region: 'us-east-1',
    endpoint: sim.baseUrl,
    credentials: account,
    maxAttempts: 2,
  });
  const adapter = new LambdaFunctions({ endpoint: sim.baseUrl, pageSize });
  const form = new URLSearchParams({
    access_key: account.accessKeyId,
    secret_key: account.secretAccessKey,
    region: 'us-east-1',
  }).toString();

  const ways: Record<string, () => Promise<number>> = {
    sdk: async () => {
      let count = 0;
      for await (const page of paginateListFunctions({ client: sdk, pageSize }, {})) {
        count += page.Functions?.length ?? 0;
      }
      return count;
    },
    adapter: async () =>
      (await adapter.list(account, 'us-east-1', { signal: AbortSignal.timeout(30_000) })).length,
    route: async () => {
      const response = await fetch(`${bench.baseUrl}/api/serverless/list-functions`, {
        method: 'POST',
        headers: { ...headers, 'content-type': 'application/x-www-form-urlencoded' },
        body: form,
      });
      if (response.status !== 200) throw new Error(`route: ${response.status} ${await response.text()}`);
      return ((await response.json()) as { functions: unknown[] }).functions.length;
    },
  };

  const times: Record<string, number[]> = { sdk: [], adapter: [], route: [] };
  // Two warm-up rounds (module loading, connections, JIT), then alternating measured rounds.
  for (let round = -2; round < rounds; round++) {
    for (const [name, list] of Object.entries(ways)) {
      const started = performance.now();
      const count = await list();
      const elapsed = performance.now() - started;
      if (count !== total) throw new Error(`${name} listed ${count} of ${total}`);
      if (round >= 0) times[name]!.push(elapsed);
    }
  }

  const sdkMs = median(times.sdk!);
  const adapterMs = median(times.adapter!);
  const routeMs = median(times.route!);
  const row = (operation: string, values: number[], ms: number) => ({
    operation,
    'median ms': Number(ms.toFixed(1)),
    'min ms': Number(Math.min(...values).toFixed(1)),
    'max ms': Number(Math.max(...values).toFixed(1)),
    'functions/s': Math.round(total / (ms / 1000)),
    ratio: Number((ms / sdkMs).toFixed(2)),
  });
  table([
    row('SDK paginator, one reused client (baseline)', times.sdk!, sdkMs),
    row('platform adapter (new client per listing)', times.adapter!, adapterMs),
    row('POST /api/serverless/list-functions (form, JWT)', times.route!, routeMs),
  ]);
  console.log(
    `serverless: ${total} functions over ${pages} pages in ${routeMs.toFixed(1)} ms through the route vs ` +
      `${sdkMs.toFixed(1)} ms with the SDK directly (ratio ${(routeMs / sdkMs).toFixed(2)}, ` +
      `adapter alone ${(adapterMs / sdkMs).toFixed(2)}; ${rounds} rounds, medians)`,
  );
  sdk.destroy();
  adapter.close();
  await bench.close();
  await sim.stop();
}
