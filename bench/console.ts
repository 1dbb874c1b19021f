/**
 * The web console (issue 22): what it costs the server to build and to serve.
 *
 * - **Build**: `buildConsole()` (esbuild, in memory) run `builds` times in this process — what
 *   `npm start` adds to its start — and the bundle's sizes, raw and gzipped (what a browser fetches
 *   once per version).
 * - **Serving**: sequential requests over HTTP to a listening platform for the console's page, its
 *   script (in full, and revalidated with If-None-Match → 304, what a returning browser does), beside
 *   `GET /health` in the same run, the cheapest route the server has.
 *
 * `npm run bench -- console [builds=10] [requests=500]`
 */
import { gzipSync } from 'node:zlib';
import { buildConsole } from '../src/console/build.js';
import { percentile, startBenchPlatform, table } from './support.js';

const ms = (value: number) => Number(value.toFixed(2));
const kb = (bytes: number) => `${(bytes / 1024).toFixed(1)} KB`;

export async function run(args: string[]): Promise<void> {
  const builds = Number(args[0] ?? 10);
  const requests = Number(args[1] ?? 500);

  const buildTimes: number[] = [];
  let bundle = await buildConsole();
  for (let i = 0; i < builds; i++) {
    bundle = await buildConsole();
    buildTimes.push(bundle.buildMs);
  }
  const sizes = [...bundle.assets]
    .filter(([name]) => !name.endsWith('.map'))
    .map(([name, asset]) => ({ name, raw: asset.body.length, gzip: gzipSync(asset.body).length }));

  const bench = await startBenchPlatform();
  try {
    await fetch(`${bench.baseUrl}/console/`); // the first request builds the bundle
    const timed = async (path: string, headers: Record<string, string> = {}, status = 200) => {
      const samples: number[] = [];
      for (let i = 0; i < requests; i++) {
        const started = performance.now();
        const response = await fetch(`${bench.baseUrl}${path}`, { headers });
        await response.arrayBuffer();
        samples.push(performance.now() - started);
        if (response.status !== status) throw new Error(`${path}: ${response.status}, expected ${status}`);
      }
      return { p50: percentile(samples, 50), p95: percentile(samples, 95) };
    };
    const etag = (await fetch(`${bench.baseUrl}/console/assets/app.js`)).headers.get('etag') ?? '';
    const health = await timed('/health');
    const page = await timed('/console/assistants');
    const script = await timed('/console/assets/app.js');
    const revalidated = await timed('/console/assets/app.js', { 'if-none-match': etag }, 304);

    console.log(`Console build (${builds} builds) and serving (${requests} sequential requests each):`);
    table([
      {
        what: 'build (esbuild, in memory)',
        figure: `p50 ${ms(percentile(buildTimes, 50))} ms, max ${ms(Math.max(...buildTimes))} ms`,
        detail: sizes.map((s) => `${s.name} ${kb(s.raw)} (${kb(s.gzip)} gzipped)`).join(', '),
      },
      {
        what: 'GET /health (baseline)',
        figure: `p50 ${ms(health.p50)} ms, p95 ${ms(health.p95)} ms`,
        detail: '',
      },
      {
        what: 'GET /console/assistants (the page)',
        figure: `p50 ${ms(page.p50)} ms, p95 ${ms(page.p95)} ms`,
        detail: '',
      },
      {
        what: 'GET /console/assets/app.js',
        figure: `p50 ${ms(script.p50)} ms, p95 ${ms(script.p95)} ms`,
        detail: kb(sizes.find((s) => s.name === 'app.js')?.raw ?? 0),
      },
      {
        what: 'GET app.js with If-None-Match (304)',
        figure: `p50 ${ms(revalidated.p50)} ms, p95 ${ms(revalidated.p95)} ms`,
        detail: '',
      },
    ]);
    console.log(
      `console: build p50 ${ms(percentile(buildTimes, 50))} ms; page p95 ${ms(page.p95)} ms = ${(page.p95 / health.p95).toFixed(2)}× GET /health's ${ms(health.p95)} ms`,
    );
  } finally {
    await bench.close();
  }
}
