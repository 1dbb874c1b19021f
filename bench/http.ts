/**
 * HTTP throughput of API-key-authenticated routes beside a bare Fastify route served by the same
 * process, under the same load generator. Runs alternate (bare, key, bare, key…) so that machine
 * noise hits both sides; the key figure is the median ratio. Goal: ≥ 0.5.
 */
import Fastify from 'fastify';
import { markEmailVerified } from '../src/domains/identity/store.js';
import { load, median, startBenchPlatform, table } from './support.js';

export async function run(args: string[]): Promise<void> {
  const seconds = Number(args[0] ?? 5);
  const rounds = Number(args[1] ?? 3);
  const bench = await startBenchPlatform();
  const { app, database } = bench.platform;

  const bare = Fastify({ logger: false });
  bare.get('/bare', async () => ({ ok: true }));
  const bareUrl = `${await bare.listen({ host: '127.0.0.1', port: 0 })}/bare`;

  const registered = await app.inject({
    method: 'POST',
    url: '/api/v1/auth/register',
    payload: { email: 'bench@example.test', password: 'benchmark password', first_name: 'B', last_name: 'M' },
  });
  const { access_token: jwt, user } = registered.json();
  await markEmailVerified(database.db, user.id);
  const created = await app.inject({
    method: 'POST',
    url: '/api/v1/users/me/api-keys',
    headers: { authorization: `Bearer ${jwt}` },
    payload: { name: 'bench', permissions: { organization: 'read' } },
  });
  const key: string = created.json().key;

  const subjects: Array<{ name: string; url: string; headers: Record<string, string> }> = [
    { name: 'bare Fastify GET /bare (baseline)', url: bareUrl, headers: {} },
    {
      name: 'API key GET /api/v1/auth/whoami',
      url: `${bench.baseUrl}/api/v1/auth/whoami`,
      headers: { authorization: `Bearer ${key}` },
    },
    {
      name: 'JWT GET /api/v1/auth/whoami',
      url: `${bench.baseUrl}/api/v1/auth/whoami`,
      headers: { authorization: `Bearer ${jwt}` },
    },
    {
      name: 'API key GET /api/v1/organization (1 query)',
      url: `${bench.baseUrl}/api/v1/organization`,
      headers: { authorization: `Bearer ${key}` },
    },
    {
      name: 'API key GET /api/v1/users/me (2 queries)',
      url: `${bench.baseUrl}/api/v1/users/me`,
      headers: { authorization: `Bearer ${key}` },
    },
  ];
  for (const subject of subjects) await load(subject.url, { headers: subject.headers, seconds: 1 }); // warm-up

  const samples = new Map<string, { rps: number[]; p50: number[]; p99: number[]; non2xx: number }>();
  for (let round = 0; round < rounds; round++) {
    for (const subject of subjects) {
      const result = await load(subject.url, { headers: subject.headers, seconds });
      const entry = samples.get(subject.name) ?? { rps: [], p50: [], p99: [], non2xx: 0 };
      entry.rps.push(result.requestsPerSecond);
      entry.p50.push(result.latencyP50Ms);
      entry.p99.push(result.latencyP99Ms);
      entry.non2xx += result.non2xx;
      samples.set(subject.name, entry);
    }
  }
  const baseline = median(samples.get(subjects[0]!.name)!.rps);
  table(
    subjects.map((subject) => {
      const s = samples.get(subject.name)!;
      return {
        route: subject.name,
        'req/s (median)': Math.round(median(s.rps)),
        'p50 ms': median(s.p50),
        'p99 ms': median(s.p99),
        'non-2xx': s.non2xx,
        'ratio to bare': Number((median(s.rps) / baseline).toFixed(2)),
      };
    }),
  );
  const keyed = median(samples.get(subjects[1]!.name)!.rps);
  console.log(
    `http: API-key-authenticated GET /api/v1/auth/whoami ${Math.round(keyed)} req/s vs bare Fastify ${Math.round(baseline)} req/s — ratio ${(keyed / baseline).toFixed(2)} (goal ≥ 0.5)`,
  );
  await bare.close();
  await bench.close();
}
