/**
 * Campaign contact import: a CSV of `rows` contacts (phone numbers in national format, a name, two
 * custom columns; ~40 bytes a row) written to disk, then sent to
 * `POST /api/v1/campaigns/{id}/import-data` over real HTTP as a multipart upload streamed from that
 * file, after a warm-up import of 10,000 rows. Measures rows per second (the best of two imports)
 * and this process's peak RSS and heap growth during the first (sampled every 10 ms, no forced
 * collection: uncollected garbage counts), then imports the file once more sampling live memory
 * after full collections. Baseline in the same run: the same
 * contacts, already normalised, inserted into another campaign with the import's own batched
 * statement (1,000 rows per `INSERT … ON CONFLICT DO NOTHING`) in one transaction — the database's
 * share of the work. For contrast, the memory a naive import holds: the whole file parsed at once.
 * Then the two ways of writing an import side by side on the same file, called in process (no
 * HTTP): the platform's own service (on a server: staged through COPY) and a service without the
 * COPY capability (row by row, the embedded database's way) — each twice, alternating, best taken.
 *
 * `npm run bench -- campaign-import [rows=100000]` (also the first part of `npm run bench -- campaigns`);
 * BENCH_DATABASE_URL=postgres://… runs it on a server.
 * On embedded PGlite the database lives in this process, so its RSS includes the new rows.
 */
import { once } from 'node:events';
import { createWriteStream, openAsBlob, readFileSync, rmSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { parse } from 'csv-parse/sync';
import { Tenant } from '../src/db/tenant.js';
import { normalisePhone } from '../src/domains/campaigns/contacts/checks.js';
import { CampaignContactService } from '../src/domains/campaigns/contacts/service.js';
import { insertContacts, type NewContact } from '../src/domains/campaigns/contacts/store.js';
import { benchUser, startBenchPlatform, table } from './support.js';

const AREAS = [201, 202, 203, 205, 206, 207, 208, 209, 210, 212, 213, 214, 215, 216, 217, 218, 219];
const MB = 2 ** 20;

/** The i-th contact's row: `(201) 555-0000,Contact 0,tier-0,west`. */
function csvRow(i: number): string {
  const area = AREAS[Math.floor(i / 10_000) % AREAS.length]!;
  const line = String(i % 10_000).padStart(4, '0');
  return `(${area}) 555-${line},Contact ${i},tier-${i % 7},${['west', 'east', 'north'][i % 3]}\n`;
}

async function writeCsv(file: string, rows: number): Promise<number> {
  const out = createWriteStream(file);
  out.write('phone,name,plan,region\n');
  for (let start = 0; start < rows; start += 1000) {
    let chunk = '';
    for (let i = start; i < Math.min(rows, start + 1000); i++) chunk += csvRow(i);
    if (!out.write(chunk)) await once(out, 'drain');
  }
  out.end();
  await once(out, 'finish');
  return out.bytesWritten;
}

/** V8's full collection (the bench runs without --expose-gc). */
function garbageCollector(): () => void {
  setFlagsFromString('--expose-gc');
  return runInNewContext('gc') as () => void;
}

/**
 * Peak RSS and heap above their level at the start, sampled until `stop`: every 10 ms as they are,
 * or with `live`, every 250 ms right after a full collection (garbage not counted).
 */
function memorySampler(live = false) {
  const collect = live ? garbageCollector() : () => {};
  collect();
  const start = process.memoryUsage();
  let rss = start.rss;
  let heap = start.heapUsed;
  const timer = setInterval(
    () => {
      collect();
      const now = process.memoryUsage();
      rss = Math.max(rss, now.rss);
      heap = Math.max(heap, now.heapUsed);
    },
    live ? 250 : 10,
  );
  return {
    stop() {
      clearInterval(timer);
      return { rssMb: (rss - start.rss) / MB, heapMb: (heap - start.heapUsed) / MB };
    },
  };
}

export async function benchImport(rows: number): Promise<void> {
  if (rows > AREAS.length * 10_000) throw new Error(`At most ${AREAS.length * 10_000} rows`);
  const bench = await startBenchPlatform();
  const { app, database } = bench.platform;
  const directory = await mkdtemp(path.join(tmpdir(), 'switchboard-bench-import-'));
  try {
    const { headers, organizationId } = await benchUser(bench.platform, 'campaigns');
    const assistant = await app.inject({
      method: 'POST',
      url: '/api/v1/assistants',
      headers,
      payload: { name: 'Campaign bench' },
    });
    const campaign = async (name: string): Promise<number> => {
      const created = await app.inject({
        method: 'POST',
        url: '/api/v1/campaigns',
        headers,
        payload: { name, campaign_type: 'call', assistant_id: assistant.json().id },
      });
      if (created.statusCode !== 201) throw new Error(`campaign: ${created.body}`);
      return created.json().id;
    };

    const file = path.join(directory, 'contacts.csv');
    const bytes = await writeCsv(file, rows);

    // The import, over HTTP, the file streamed from disk.
    const upload = async (live: boolean, source = file, expected = rows) => {
      const id = await campaign(live ? 'Import, live memory' : 'Import');
      const form = new FormData();
      form.append('file', await openAsBlob(source, { type: 'text/csv' }), 'contacts.csv');
      const memory = memorySampler(live);
      const started = performance.now();
      const response = await fetch(`${bench.baseUrl}/api/v1/campaigns/${id}/import-data`, {
        method: 'POST',
        headers,
        body: form,
      });
      const report = (await response.json()) as { imported: number };
      const seconds = (performance.now() - started) / 1000;
      const growth = memory.stop();
      if (response.status !== 200 || report.imported !== expected)
        throw new Error(`import answered ${response.status}: ${JSON.stringify(report)}`);
      return { seconds, ...growth };
    };
    // A warm-up of 10,000 rows first: the first import of a process also compiles the code it runs
    // (libphonenumber, the CSV reader, the writing path), which a running server did long before.
    // Then the best of two timed imports, the memory of the first.
    const warmUp = path.join(directory, 'warm-up.csv');
    const warmUpRows = Math.min(rows, 10_000);
    await writeCsv(warmUp, warmUpRows);
    await upload(false, warmUp, warmUpRows);
    const { seconds: firstSeconds, ...importMemory } = await upload(false);
    const importSeconds = Math.min(firstSeconds, (await upload(false)).seconds);
    // Again, sampling live memory (forced collections slow it down: its time is not reported).
    const liveMemory = await upload(true);
    const importRate = rows / importSeconds;

    // The two ways of writing, in process, alternating so that a busy moment of the machine does
    // not fall on one of them only.
    const token = headers.authorization!.replace('Bearer ', '');
    const principal = (await bench.platform.authenticator.fromAccessToken(token))!;
    const staged = bench.platform.services.campaignContacts;
    const rowByRow = new CampaignContactService({ db: database.db, defaultRegion: 'US' });
    const source = { path: file, filename: 'contacts.csv', mimetype: 'text/csv' };
    const inProcess = async (service: CampaignContactService) => {
      const id = await campaign('In process');
      const started = performance.now();
      const report = await service.importFile(principal, id, source, {});
      if (report.imported !== rows) throw new Error(`in-process import: ${JSON.stringify(report)}`);
      return rows / ((performance.now() - started) / 1000);
    };
    const stagedRates: number[] = [];
    const rowRates: number[] = [];
    for (let round = 0; round < 2; round++) {
      stagedRates.push(await inProcess(staged));
      rowRates.push(await inProcess(rowByRow));
    }
    const stagedRate = Math.max(...stagedRates);
    const rowRate = Math.max(...rowRates);

    // Baseline: the same contacts, normalised beforehand, through the same batched INSERT.
    const raw = await campaign('Raw insert');
    const tenant = new Tenant(organizationId);
    const contacts: NewContact[] = [];
    for (let i = 0; i < rows; i++) {
      const [phone, name, plan, region] = csvRow(i).trimEnd().split(',') as [string, string, string, string];
      contacts.push({
        phoneNumber: normalisePhone(phone, 'US')!,
        name,
        email: null,
        company: null,
        customFields: { plan, region },
      });
    }
    const rawStarted = performance.now();
    await database.db.transaction(async (tx) => {
      for (let start = 0; start < rows; start += 1000)
        await insertContacts(tx, tenant, raw, contacts.slice(start, start + 1000));
    });
    const rawRate = rows / ((performance.now() - rawStarted) / 1000);
    contacts.length = 0;

    // Contrast: the memory of reading the whole file and parsing it at once (no database). The
    // parse blocks the event loop, so the growth is read while its result is still held, from a
    // collected heap.
    garbageCollector()();
    const before = process.memoryUsage();
    const parsed = parse(readFileSync(file, 'utf8'), { columns: true }) as Array<Record<string, string>>;
    const after = process.memoryUsage();
    const naiveMemory = {
      rssMb: (after.rss - before.rss) / MB,
      heapMb: (after.heapUsed - before.heapUsed) / MB,
    };
    if (parsed.length !== rows) throw new Error('naive parse');

    table([
      {
        operation: `import-data over HTTP (${database.kind}), ${rows} rows, ${(bytes / MB).toFixed(1)} MB, warm, best of 2`,
        'rows/s': Math.round(importRate),
        ratio: Number((importRate / rawRate).toFixed(2)),
        'peak RSS MB': Math.round(importMemory.rssMb),
        'peak heap MB': Math.round(importMemory.heapMb),
      },
      {
        operation: 'the same import again, live memory (sampled after full collections)',
        'rows/s': '',
        ratio: '',
        'peak RSS MB': Math.round(liveMemory.rssMb),
        'peak heap MB': Math.round(liveMemory.heapMb),
      },
      {
        operation: 'baseline: same rows pre-normalised, batched INSERT, one transaction',
        'rows/s': Math.round(rawRate),
        ratio: 1,
        'peak RSS MB': '',
        'peak heap MB': '',
      },
      {
        operation: `in process: the platform's import (${database.copyIn ? 'staged through COPY' : 'row by row'}), best of 2`,
        'rows/s': Math.round(stagedRate),
        ratio: Number((stagedRate / rawRate).toFixed(2)),
        'peak RSS MB': '',
        'peak heap MB': '',
      },
      {
        operation: 'in process: row by row (the embedded way), best of 2',
        'rows/s': Math.round(rowRate),
        ratio: Number((rowRate / rawRate).toFixed(2)),
        'peak RSS MB': '',
        'peak heap MB': '',
      },
      {
        operation: 'contrast: whole file read and parsed in memory (no database), held',
        'rows/s': '',
        ratio: '',
        'peak RSS MB': '',
        'peak heap MB': Math.round(naiveMemory.heapMb),
      },
    ]);
    console.log(
      `campaigns: imported ${rows} contacts in ${importSeconds.toFixed(1)} s = ${Math.round(importRate)} rows/s ` +
        `(ratio ${(importRate / rawRate).toFixed(2)} to the bare batched INSERT); peak RSS +${Math.round(importMemory.rssMb)} MB, ` +
        `heap +${Math.round(importMemory.heapMb)} MB with garbage, live heap +${liveMemory.heapMb.toFixed(1)} MB ` +
        `(the naive in-memory parse alone holds +${Math.round(naiveMemory.heapMb)} MB); in process ` +
        `${Math.round(stagedRate)} rows/s against ${Math.round(rowRate)} row by row (×${(stagedRate / rowRate).toFixed(2)})`,
    );
  } finally {
    rmSync(directory, { recursive: true, force: true });
    await bench.close();
  }
}

export async function run(args: string[]): Promise<void> {
  await benchImport(Number(args[0] ?? 100_000));
}
