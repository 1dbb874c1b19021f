/**
 * Call search and export. Seeds N calls (default 1,000,000 on a server, 200,000 on the embedded
 * database, whose memory would not hold a million with transcripts) spread over 10 assistants, each
 * with 4 transcript sentences and a reference code said on 20 calls, and their search documents —
 * by SQL (test/support/call-seed.ts).
 *
 * Search: GET /api/v1/calls/search over real HTTP for a whole number, a partial number, a rare
 * transcript word, a common one and an assistant name, p50/p95; beside each, the same search done
 * the naive way in the same run — `ILIKE '%q%'` over assistant names, numbers and transcript text
 * (unranked, the database alone, no HTTP) — and the ratio. The plan of the rare-word search is
 * checked for the GIN index, the common word's for the newest-first walk; `--plans` prints the
 * common word's and the assistant name's plans with EXPLAIN (ANALYZE, BUFFERS).
 *
 * Export: GET /api/v1/calls/export of every call as CSV over real HTTP: rows/s and the process's
 * peak RSS above where it started, then (a second pass) its live heap after full collections;
 * beside it, the bare database cursor reading the same rows in the same process (no formatting, no
 * HTTP) — the ratio's baseline — and, for what each part costs, the cursor path's CSV formatting
 * without HTTP (the embedded database's path, the server's before COPY) and, on a server, the bare
 * COPY statement drained without HTTP.
 *
 * `npm run bench -- calls [--calls N] [--plans]`; BENCH_DATABASE_URL=postgres://… runs it on a server.
 */
import { request as httpRequest } from 'node:http';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { PgDialect } from 'drizzle-orm/pg-core';
import { Tenant } from '../src/db/tenant.js';
import { csvChunks } from '../src/domains/calls/export.js';
import { CSV_COPY_SETUP, csvCopyStatement } from '../src/domains/calls/export-copy.js';
import { searchSql } from '../src/domains/calls/search.js';
import { readSearchQuery } from '../src/domains/calls/search-terms.js';
import { exportQuery } from '../src/domains/calls/store.js';
import { seedBulkCalls } from '../test/support/call-seed.js';
import { benchUser, latencies, startBenchPlatform, table } from './support.js';

const ASSISTANTS = [
  'Billing',
  'Scheduling',
  'Support',
  'Sales',
  'Renewals',
  'Deliveries',
  'Pharmacy',
  'Clinic',
  'Lettings',
  'Zoo',
];
const SENTENCES_PER_CALL = 4;
const CALLS_PER_CODE = 20;
const SEARCH_REQUESTS = 30;
const ILIKE_REQUESTS = 5;

function argument(args: string[], name: string): string | undefined {
  const index = args.indexOf(name);
  return index >= 0 ? args[index + 1] : undefined;
}

export async function run(args: string[] = []): Promise<void> {
  const onServer = Boolean(process.env.BENCH_DATABASE_URL);
  const count = Number(argument(args, '--calls') ?? (onServer ? 1_000_000 : 200_000));
  const bench = await startBenchPlatform();
  try {
    const { app, database } = bench.platform;
    const { headers, organizationId } = await benchUser(bench.platform, 'calls');
    const assistantIds: number[] = [];
    for (const name of ASSISTANTS) {
      const created = await app.inject({
        method: 'POST',
        url: '/api/v1/assistants',
        headers,
        payload: { name },
      });
      assistantIds.push(created.json().id);
    }
    // A neighbour organization with the same kind of data: search must not wander into it.
    const neighbour = await benchUser(bench.platform, 'neighbour');

    const seedStarted = performance.now();
    await seedBulkCalls(database, {
      organizationId,
      assistantIds,
      count,
      segmentsPerCall: SENTENCES_PER_CALL,
      referenceCodes: Math.max(1, Math.floor(count / CALLS_PER_CODE)),
    });
    await seedBulkCalls(database, {
      organizationId: neighbour.organizationId,
      assistantIds: [],
      count: Math.floor(count / 10),
      segmentsPerCall: SENTENCES_PER_CALL,
    });
    await database.executeSql(
      'analyze calls; analyze call_transcript_segments; analyze call_search_documents; analyze assistants',
    );
    const seedSeconds = (performance.now() - seedStarted) / 1000;
    console.log(
      `seeded ${count} calls (+${Math.floor(count / 10)} in a neighbour organization) with transcripts in ${seedSeconds.toFixed(0)} s (${database.kind})`,
    );

    // --- search -----------------------------------------------------------------------------
    const tenant = new Tenant(organizationId);
    const g = Math.floor(count / 2) + 7;
    const codes = Math.max(1, Math.floor(count / CALLS_PER_CODE));
    const number = `+1646${String(g).padStart(7, '0')}`;
    const searches: Array<[label: string, q: string, like: string]> = [
      ['whole number', number, number.slice(1)],
      ['partial number (4 digits)', number.slice(-4), number.slice(-4)],
      // The highest code: no longer code contains it, so ILIKE finds the same calls.
      ['rare transcript word', `zx${codes - 1}`, `zx${codes - 1}`],
      ['common transcript word', 'refund', 'refund'],
      ['assistant name', 'Zoo', 'Zoo'],
    ];
    const ilike = (like: string) =>
      database.executeSql(
        `select c.* from calls c
         where c.organization_id = $1 and (
           c.customer_phone_number ilike $2 or c.to_phone_number ilike $2 or c.from_phone_number ilike $2
           or exists (select 1 from assistants a where a.id = c.assistant_id and a.name ilike $2)
           or exists (select 1 from call_transcript_segments s where s.call_id = c.id and s.text ilike $2))
         order by c.id desc limit 50`,
        [organizationId, `%${like}%`],
      );
    const rows: Array<Record<string, string | number>> = [];
    let worst = 0;
    const ratios: number[] = [];
    for (const [label, q, like] of searches) {
      let found = 0;
      const search = await latencies(async () => {
        const response = await fetch(
          `${bench.baseUrl}/api/v1/calls/search?q=${encodeURIComponent(q)}&limit=50`,
          { headers },
        );
        if (response.status !== 200)
          throw new Error(`search ${q}: ${response.status} ${await response.text()}`);
        found = ((await response.json()) as unknown[]).length;
      }, SEARCH_REQUESTS);
      let likeFound = 0;
      const scan = await latencies(async () => {
        likeFound = (await ilike(like)).rows.length;
      }, ILIKE_REQUESTS);
      const ratio = scan.p50 / search.p50;
      ratios.push(ratio);
      worst = Math.max(worst, search.p95);
      rows.push({
        search: `${label}: ${q}`,
        found,
        'p50 ms': Number(search.p50.toFixed(1)),
        'p95 ms': Number(search.p95.toFixed(1)),
        'ILIKE found': likeFound,
        'ILIKE p50 ms': Number(scan.p50.toFixed(1)),
        'ILIKE p95 ms': Number(scan.p95.toFixed(1)),
        'ILIKE / search': Number(ratio.toFixed(1)),
      });
    }
    table(rows);
    const planOf = async (q: string, analyze: boolean) => {
      const compiled = new PgDialect().sqlToQuery(searchSql(tenant, readSearchQuery(q), 50));
      const explain = analyze ? 'explain (analyze, buffers)' : 'explain';
      return (await database.executeSql(`${explain} ${compiled.sql}`, compiled.params)).rows
        .map((row) => String(Object.values(row)[0]))
        .join('\n');
    };
    // A selective query takes its matches from the GIN index; a common one walks the organization's
    // newest documents along the (organization_id, call_id) index.
    for (const [label, q, index] of [
      ['rare-word', searches[2]![1], 'call_search_documents_document_idx'],
      ['common-word', searches[3]![1], 'call_search_documents_organization_idx'],
    ] as const) {
      const plan = await planOf(q, false);
      const uses = plan.includes(index);
      console.log(`${label} search plan uses ${index}: ${uses ? 'yes' : 'NO'}`);
      if (!uses) console.log(plan);
    }
    if (args.includes('--plans'))
      for (const [label, q] of [searches[3]!, searches[4]!])
        console.log(`\nEXPLAIN (ANALYZE, BUFFERS), ${label} "${q}":\n${await planOf(q, true)}\n`);

    // --- export -----------------------------------------------------------------------------
    const cursorStarted = performance.now();
    let cursorRows = 0;
    for await (const batch of database.cursor(exportQuery(tenant, {}), 1000)) cursorRows += batch.length;
    const cursorRate = cursorRows / ((performance.now() - cursorStarted) / 1000);
    const formattedStarted = performance.now();
    let formattedBytes = 0;
    for await (const chunk of csvChunks(database.cursor(exportQuery(tenant, {}), 1000)))
      formattedBytes += chunk.length;
    const formattedRate = cursorRows / ((performance.now() - formattedStarted) / 1000);
    let copyRate: number | undefined;
    if (database.copyOut) {
      const copyStarted = performance.now();
      let copiedBytes = 0;
      for await (const chunk of await database.copyOut(csvCopyStatement(tenant, {}), CSV_COPY_SETUP))
        copiedBytes += (chunk as Buffer).length;
      copyRate = cursorRows / ((performance.now() - copyStarted) / 1000);
      if (copiedBytes === 0 || formattedBytes === 0) throw new Error('nothing read');
    }

    const rssBefore = process.memoryUsage().rss;
    let rssPeak = rssBefore;
    const sampler = setInterval(() => {
      rssPeak = Math.max(rssPeak, process.memoryUsage().rss);
    }, 20);
    // The whole CSV over HTTP; `received` sees the running byte count after each chunk.
    const download = (received: (bytes: number) => void = () => {}) =>
      new Promise<{ lines: number; bytes: number }>((resolve, reject) => {
        const request = httpRequest(`${bench.baseUrl}/api/v1/calls/export`, { headers }, (response) => {
          if (response.statusCode !== 200) reject(new Error(`export: ${response.statusCode}`));
          let lines = 0;
          let bytes = 0;
          response.on('data', (chunk: Buffer) => {
            bytes += chunk.length;
            // indexOf, not a loop over each byte: the counting client shares the process (and its
            // two cores) with the server it measures.
            for (let at = chunk.indexOf(10); at !== -1; at = chunk.indexOf(10, at + 1)) lines += 1;
            received(bytes);
          });
          response.on('end', () => resolve({ lines, bytes }));
          response.on('error', reject);
        });
        request.on('error', reject);
        request.end();
      });
    const exportStarted = performance.now();
    const exported = await download();
    const exportSeconds = (performance.now() - exportStarted) / 1000;
    clearInterval(sampler);
    // RSS also counts garbage not yet collected; a second, untimed pass reads the live heap after a
    // full collection every 10 MB received: what the server really keeps while exporting.
    setFlagsFromString('--expose-gc');
    const collect = runInNewContext('gc') as () => void;
    const liveHeap = () => {
      collect();
      return process.memoryUsage().heapUsed;
    };
    const heapBefore = liveHeap();
    let heapPeak = heapBefore;
    let sampledAt = 0;
    await download((bytes) => {
      if (bytes - sampledAt < 10_000_000) return;
      sampledAt = bytes;
      heapPeak = Math.max(heapPeak, liveHeap());
    });
    if (exported.lines !== count + 1) throw new Error(`exported ${exported.lines - 1} of ${count} rows`);
    const exportRate = count / exportSeconds;
    const mb = (bytes: number) => Number((bytes / 1e6).toFixed(1));
    table([
      {
        operation: `GET /api/v1/calls/export (CSV, ${count} rows, ${mb(exported.bytes)} MB)`,
        'rows/s': Math.round(exportRate),
        seconds: Number(exportSeconds.toFixed(1)),
        'RSS before MB': mb(rssBefore),
        'RSS peak above MB': mb(rssPeak - rssBefore),
        'live heap peak above MB': mb(heapPeak - heapBefore),
      },
      {
        operation: 'baseline: the bare database cursor, same rows',
        'rows/s': Math.round(cursorRate),
        seconds: Number((cursorRows / cursorRate).toFixed(1)),
        'RSS before MB': '',
        'RSS peak above MB': '',
        'live heap peak above MB': '',
      },
      {
        operation: 'the cursor path: cursor + csvChunks, no HTTP',
        'rows/s': Math.round(formattedRate),
        seconds: Number((cursorRows / formattedRate).toFixed(1)),
        'RSS before MB': '',
        'RSS peak above MB': '',
        'live heap peak above MB': '',
      },
      ...(copyRate === undefined
        ? []
        : [
            {
              operation: 'the bare COPY (SELECT …) TO STDOUT, drained, no HTTP',
              'rows/s': Math.round(copyRate),
              seconds: Number((cursorRows / copyRate).toFixed(1)),
              'RSS before MB': '',
              'RSS peak above MB': '',
              'live heap peak above MB': '',
            },
          ]),
    ]);
    const geometric = Math.exp(ratios.reduce((sum, r) => sum + Math.log(r), 0) / ratios.length);
    console.log(
      `calls (${database.kind}, ${count} calls): search p95 ≤ ${worst.toFixed(1)} ms, ILIKE scan / search ` +
        `${Math.min(...ratios).toFixed(1)}–${Math.max(...ratios).toFixed(1)}× (geometric mean ${geometric.toFixed(1)}×); ` +
        `CSV export ${Math.round(exportRate)} rows/s (${(exportRate / cursorRate).toFixed(2)} of the bare cursor, ` +
        `${database.copyOut ? 'COPY' : 'cursor path'}), ` +
        `RSS +${mb(rssPeak - rssBefore)} MB, live heap +${mb(heapPeak - heapBefore)} MB over a ${mb(exported.bytes)} MB file`,
    );
  } finally {
    await bench.close();
  }
}
