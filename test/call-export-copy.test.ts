/**
 * The CSV export written by PostgreSQL (`COPY … TO STDOUT` on a server, export-copy.ts) is byte for
 * byte the file the cursor path writes (export.ts `csvChunks`, kept on the embedded database, where
 * this test checks the route against that same path): hostile cells — formulas, quotes, commas,
 * line breaks, tabs, non-ASCII — analyses with scores and structured data of every JSON shape,
 * microsecond timestamps, the filters and the tenant's rows only. A download the client abandons
 * ends the statement and frees its connection.
 */
import { request as httpRequest } from 'node:http';
import { parse } from 'csv-parse/sync';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callAnalyses } from '../src/db/schema/index.js';
import { Tenant } from '../src/db/tenant.js';
import { csvChunks } from '../src/domains/calls/export.js';
import { crlfRecords } from '../src/domains/calls/export-copy.js';
import { type CallFilter, exportQuery } from '../src/domains/calls/store.js';
import { seedBulkCalls, seedCall } from './support/call-seed.js';
import { Factories, type TestUser } from './support/factories.js';
import { startTestPlatform, type TestPlatform } from './support/harness.js';

let t: TestPlatform;
let f: Factories;
let owner: TestUser;
let hostileAssistant: number;

/** Structured data as an analysis may hold it: every JSON shape, keys JavaScript reorders, odd numbers. */
const STRUCTURED: unknown[] = [
  { appointment: '2026-11-02', confirmed: true, notes: null, attendees: 3 },
  { b: 1, '10': 'ten', '2': 'two', a: [1, 2.5, -0.001, 1e21, 1.5e-7, 0.000015, 123456789012345680000] },
  { nested: { deeper: { list: [[], {}, [{}]], text: 'quote " backslash \\ tab \t nl \n ctl \u0001' } } },
  ['=1+1', '+1', '-1', '@x', 'Zoë', '東京', '😀'],
  '=HYPERLINK("http://evil.example")',
  -5,
  -1e-7,
  0,
  true,
  null,
  { '': 'empty key', '4294967295': 'not an index', '4294967294': 'last index', '01': 'not canonical' },
];
const SCORES = [0.7, -0.5, 1, -1, 0, 0.123456789, 1e-5, -3e-7, null];
const HOSTILE_TEXT = [
  '=1+1',
  '+A1',
  '-2+3',
  '@SUM(A1)',
  '\tcmd',
  '\r=1',
  'comma, inside',
  'say "hi"',
  'two\nlines',
  'crlf\r\nend',
  "'already quoted",
  '',
  '+14155552671',
  '-3',
  '2.5',
  'Zoë — 東京 😀',
  '\\.',
  'ends with a quote"',
];

beforeAll(async () => {
  t = await startTestPlatform({}, { listen: true });
  f = new Factories(t);
  owner = await f.user();
  hostileAssistant = await f.assistant(owner, '=cmd|"/C calc"!A0, "quoted"\nnext line');
  const plain = await f.assistant(owner, 'Plain');
  const started = new Date('2026-11-01T09:00:00.000Z');
  const count = Math.max(HOSTILE_TEXT.length, STRUCTURED.length, SCORES.length);
  for (let i = 0; i < count; i++) {
    const at = new Date(started.getTime() + i * 60_000 + 123);
    const text = HOSTILE_TEXT[i % HOSTILE_TEXT.length]!;
    const call = await seedCall(t.database, owner.organizationId, {
      assistantId: i % 3 === 0 ? null : i % 3 === 1 ? hostileAssistant : plain,
      status: i % 2 === 0 ? 'completed' : 'failed',
      customer: i % 2 === 0 ? text || '+12125550100' : `+1212555${String(i).padStart(4, '0')}`,
      callSid: i % 4 === 3 ? null : `CA${text}${i}`,
      duration: i % 5 === 4 ? null : i * 7,
      startedAt: i % 6 === 5 ? null : at,
      endedAt: i % 6 === 5 ? null : new Date(at.getTime() + 61_999),
      createdAt: at,
    });
    if (i % 7 === 6) continue;
    await t.database.db.insert(callAnalyses).values({
      callId: call.id,
      organizationId: owner.organizationId,
      status: 'completed',
      summary: text,
      sentiment: (['positive', 'neutral', 'negative', null] as const)[i % 4],
      sentimentScore: SCORES[i % SCORES.length],
      structuredData: STRUCTURED[i % STRUCTURED.length],
    });
  }
  // JSON null is a value of its own (the cell is empty, as for no analysis).
  await t.database.executeSql(
    `update call_analyses set structured_data = 'null'::jsonb where structured_data is null and organization_id = $1`,
    [owner.organizationId],
  );
  // Timestamps with microseconds (the driver and the export keep milliseconds, truncated).
  await t.database.executeSql(
    `update calls set started_at = started_at + interval '456 microseconds',
       ended_at = ended_at + interval '999 microseconds' where organization_id = $1`,
    [owner.organizationId],
  );
  await seedBulkCalls(t.database, {
    organizationId: owner.organizationId,
    assistantIds: [plain, hostileAssistant],
    count: 300,
    searchDocuments: false,
  });
  const other = await f.user();
  await seedCall(t.database, other.organizationId, { callSid: 'CAforeign', customer: '=foreign' });
});
afterAll(async () => {
  await t.close();
});

/** The file as the cursor path writes it, straight from the database. */
async function cursorCsv(filter: CallFilter): Promise<string> {
  const query = exportQuery(new Tenant(owner.organizationId), filter);
  let text = '';
  for await (const chunk of csvChunks(t.database.cursor(query, 1000))) text += chunk;
  return text;
}

async function routeCsv(query: string): Promise<string> {
  const response = await t.app.inject({
    method: 'GET',
    url: `/api/v1/calls/export${query}`,
    headers: owner.headers,
  });
  expect(response.statusCode, response.body).toBe(200);
  return response.body;
}

describe(`the CSV export on the ${process.env.TEST_DATABASE_URL ? 'server (COPY)' : 'embedded database (cursor)'}`, () => {
  it('is byte for byte the cursor path’s file, hostile cells and analyses included', async () => {
    const expected = await cursorCsv({});
    const actual = await routeCsv('');
    expect(expected.split('\r\n').length).toBeGreaterThan(300);
    // Line by line first, so a difference is shown where it is; then the whole file, bytes and all.
    expect(actual.split('\r\n')).toEqual(expected.split('\r\n'));
    expect(Buffer.from(actual)).toEqual(Buffer.from(expected));
    expect(actual).toContain('"\'=cmd|""/C calc""!A0, ""quoted""\nnext line"');
    // Cells with a lone line feed or carriage return are quoted (RFC 4180): a spreadsheet reads
    // one record per call.
    expect(actual).toContain(',"CAtwo\nlines8",');
    const counted = await t.database.executeSql(
      'select count(*)::int as n from calls where organization_id = $1',
      [owner.organizationId],
    );
    expect(parse(actual)).toHaveLength(1 + Number(counted.rows[0]?.n));
    expect(actual).not.toContain('foreign');
  });

  it('is the same file under each filter', async () => {
    const filters: Array<[string, CallFilter]> = [
      ['?status=completed', { status: 'completed' }],
      [`?assistant_id=${hostileAssistant}`, { assistantId: hostileAssistant }],
      [
        '?date_from=2026-11-01T09:02:00Z&date_to=2026-11-01T09:09:00.123Z&status=failed',
        {
          dateFrom: new Date('2026-11-01T09:02:00Z'),
          dateTo: new Date('2026-11-01T09:09:00.123Z'),
          status: 'failed',
        },
      ],
      ['?status=busy&date_from=2030-01-01T00:00:00Z', { status: 'busy', dateFrom: new Date('2030-01-01') }],
    ];
    for (const [query, filter] of filters) {
      const expected = await cursorCsv(filter);
      expect(await routeCsv(query), query).toBe(expected);
    }
  });

  it('frees its connection when the client goes away mid-download', async () => {
    const bulk = await f.user();
    const assistant = await f.assistant(bulk, 'Bulk');
    await seedBulkCalls(t.database, {
      organizationId: bulk.organizationId,
      assistantIds: [assistant],
      count: 60_000,
      searchDocuments: false,
    });
    for (let attempt = 0; attempt < 3; attempt++) {
      await new Promise<void>((resolve, reject) => {
        const request = httpRequest(
          `${t.baseUrl}/api/v1/calls/export`,
          { headers: bulk.headers },
          (response) => {
            expect(response.statusCode).toBe(200);
            response.once('data', () => {
              request.destroy();
              resolve();
            });
            response.on('error', () => {});
          },
        );
        request.on('error', (error) => (request.destroyed ? undefined : reject(error)));
        request.end();
      });
    }
    // Nothing of the export is left running: no COPY (server), no open cursor (embedded).
    const running = async () =>
      t.database.kind === 'server'
        ? (
            await t.database.executeSql(
              `select count(*)::int as n from pg_stat_activity
               where datname = current_database() and state <> 'idle' and query ilike 'copy (select%'`,
            )
          ).rows[0]!.n
        : (await t.database.executeSql('select count(*)::int as n from pg_cursors')).rows[0]!.n;
    const deadline = Date.now() + 10_000;
    while ((await running()) !== 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    expect(await running()).toBe(0);
    // And the pool still serves whole exports.
    const response = await t.app.inject({
      method: 'GET',
      url: '/api/v1/calls/export',
      headers: bulk.headers,
    });
    expect(response.body.split('\r\n').length).toBe(60_000 + 2);
  }, 120_000);
});

describe('CRLF record ends', () => {
  it('end records, not the line breaks inside quoted cells, however the chunks are cut', async () => {
    const copied = 'a,b\n1,"x\ny"\n2,"say ""hi""\n"\n3,\n';
    const expected = 'a,b\r\n1,"x\ny"\r\n2,"say ""hi""\n"\r\n3,\r\n';
    for (let size = 1; size <= copied.length; size++) {
      const transform = crlfRecords();
      const out: Buffer[] = [];
      transform.on('data', (chunk: Buffer) => out.push(chunk));
      const done = new Promise((resolve) => transform.on('end', resolve));
      for (let i = 0; i < copied.length; i += size) transform.write(Buffer.from(copied.slice(i, i + size)));
      transform.end();
      await done;
      expect(Buffer.concat(out).toString(), `chunks of ${size}`).toBe(expected);
    }
  });
});
