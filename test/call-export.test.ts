/**
 * GET /api/v1/calls/export: the CSV and JSON files exactly as the document gives them (names,
 * content types, header order, keys), filters, spreadsheet formulas neutralised, and a 200,000-row
 * export streamed over real HTTP while the server's heap stays flat.
 */
import { request as httpRequest } from 'node:http';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { parse } from 'csv-parse/sync';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { neutraliseFormula } from '../src/domains/calls/export.js';
import { expectError, expectValidation } from './support/assertions.js';
import { seedBulkCalls, seedCall } from './support/call-seed.js';
import { Factories, type TestUser } from './support/factories.js';
import { startTestPlatform, type TestPlatform } from './support/harness.js';

let t: TestPlatform;
let f: Factories;

beforeAll(async () => {
  t = await startTestPlatform({}, { listen: true });
  f = new Factories(t);
});
afterAll(async () => {
  await t.close();
});

const HEADER =
  'Call ID,Call SID,Assistant Name,Customer Phone,Status,Duration (seconds),Started At,Ended At,' +
  'Summary,Sentiment,Sentiment Score,Structured Data';
/** The analysis cells of a call without one (test/call-analysis.test.ts exports analysed calls). */
const NO_ANALYSIS = ['', '', '', ''];

function exportCalls(query: string, headers: Record<string, string>) {
  return t.app.inject({ method: 'GET', url: `/api/v1/calls/export${query}`, headers });
}

describe('the export files', () => {
  let owner: TestUser;
  let ava: number;
  let bob: number;
  const ids: number[] = [];
  const started = new Date('2026-11-01T09:00:00.000Z');

  beforeAll(async () => {
    owner = await f.user();
    ava = await f.assistant(owner, 'Ava, "the" scheduler');
    bob = await f.assistant(owner, '=HYPERLINK("http://evil.example","open")');
    const calls = [
      { assistantId: ava, status: 'completed' as const, customer: '+12125550101', duration: 61 },
      { assistantId: bob, status: 'busy' as const, customer: '+12125550102', duration: 0 },
      {
        assistantId: ava,
        status: 'failed' as const,
        customer: '+12125550103',
        duration: null,
        startedAt: null,
        endedAt: null,
      },
      { assistantId: null, status: 'completed' as const, customer: '@SUM(A1:A9)', duration: 5 },
    ];
    for (const [index, call] of calls.entries()) {
      const at = new Date(started.getTime() + index * 3_600_000);
      const row = await seedCall(t.database, owner.organizationId, {
        startedAt: at,
        endedAt: new Date(at.getTime() + 60_000),
        createdAt: at,
        ...call,
        callSid: `CAexport${index}`,
      });
      ids.push(row.id);
    }
    const other = await f.user();
    await seedCall(t.database, other.organizationId, { callSid: 'CAforeign' });
  });

  it('is a CSV file by default: calls_export.csv, the document’s columns in order (then the analysis), oldest first', async () => {
    const response = await exportCalls('', owner.headers);
    expect(response.statusCode, response.body).toBe(200);
    expect(response.headers['content-type']).toBe('text/csv; charset=utf-8');
    expect(response.headers['content-disposition']).toBe('attachment; filename="calls_export.csv"');
    const lines = response.body.split('\r\n');
    expect(lines[0]).toBe(HEADER);
    expect(lines.at(-1)).toBe('');
    const rows = parse(response.body, { relax_column_count: false }) as string[][];
    expect(rows.slice(1)).toEqual([
      [
        String(ids[0]),
        'CAexport0',
        'Ava, "the" scheduler',
        '+12125550101',
        'completed',
        '61',
        '2026-11-01T09:00:00.000Z',
        '2026-11-01T09:01:00.000Z',
        ...NO_ANALYSIS,
      ],
      [
        String(ids[1]),
        'CAexport1',
        `'=HYPERLINK("http://evil.example","open")`,
        '+12125550102',
        'busy',
        '0',
        '2026-11-01T10:00:00.000Z',
        '2026-11-01T10:01:00.000Z',
        ...NO_ANALYSIS,
      ],
      [
        String(ids[2]),
        'CAexport2',
        'Ava, "the" scheduler',
        '+12125550103',
        'failed',
        '',
        '',
        '',
        ...NO_ANALYSIS,
      ],
      [
        String(ids[3]),
        'CAexport3',
        '',
        "'@SUM(A1:A9)",
        'completed',
        '5',
        '2026-11-01T12:00:00.000Z',
        '2026-11-01T12:01:00.000Z',
        ...NO_ANALYSIS,
      ],
    ]);
    // Quoting: the comma and quotes in a name stay inside one quoted field.
    expect(lines[1]).toContain('"Ava, ""the"" scheduler"');
  });

  it('is a JSON array with the document’s keys in order with format=json', async () => {
    const response = await exportCalls('?format=json', owner.headers);
    expect(response.statusCode, response.body).toBe(200);
    expect(response.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(response.headers['content-disposition']).toBe('attachment; filename="calls_export.json"');
    const body = response.json();
    expect(body).toHaveLength(4);
    for (const call of body)
      expect(Object.keys(call)).toEqual([
        'id',
        'call_sid',
        'assistant_name',
        'customer_phone_number',
        'status',
        'duration',
        'started_at',
        'ended_at',
        'summary',
        'sentiment',
        'sentiment_score',
        'structured_data',
      ]);
    expect(body[0]).toEqual({
      id: ids[0],
      call_sid: 'CAexport0',
      assistant_name: 'Ava, "the" scheduler',
      customer_phone_number: '+12125550101',
      status: 'completed',
      duration: 61,
      started_at: '2026-11-01T09:00:00.000Z',
      ended_at: '2026-11-01T09:01:00.000Z',
      summary: null,
      sentiment: null,
      sentiment_score: null,
      structured_data: null,
    });
    // JSON is not a spreadsheet: values stay as they are.
    expect(body[1].assistant_name).toBe('=HYPERLINK("http://evil.example","open")');
    expect(body[2]).toMatchObject({ duration: null, started_at: null, ended_at: null });
    expect(body[3].assistant_name).toBeNull();
  });

  it('filters by status, assistant and dates', async () => {
    const idsOf = async (query: string) =>
      (await exportCalls(`?format=json&${query}`, owner.headers))
        .json()
        .map((call: { id: number }) => call.id);
    expect(await idsOf('status=completed')).toEqual([ids[0], ids[3]]);
    expect(await idsOf(`assistant_id=${ava}`)).toEqual([ids[0], ids[2]]);
    expect(await idsOf(`assistant_id=${bob}&status=completed`)).toEqual([]);
    expect(await idsOf('date_from=2026-11-01T10:00:00Z&date_to=2026-11-01T11:00:00Z')).toEqual([
      ids[1],
      ids[2],
    ]);
    const csv = await exportCalls('?status=busy', owner.headers);
    expect(csv.body).toBe(
      `${HEADER}\r\n${ids[1]},CAexport1,"'=HYPERLINK(""http://evil.example"",""open"")",+12125550102,busy,0,2026-11-01T10:00:00.000Z,2026-11-01T10:01:00.000Z,,,,\r\n`,
    );
  });

  it('answers just the header, or an empty array, when nothing matches', async () => {
    const stranger = await f.user();
    expect((await exportCalls('', stranger.headers)).body).toBe(`${HEADER}\r\n`);
    expect((await exportCalls('?format=json', stranger.headers)).json()).toEqual([]);
  });

  it('answers 422 with the validation body for invalid parameters', async () => {
    const cases: Array<[string, string]> = [
      ['format=xml', 'format'],
      ['format=CSV', 'format'],
      ['status=unknown', 'status'],
      ['assistant_id=abc', 'assistant_id'],
      ['date_from=last-week', 'date_from'],
      ['date_to=2026-11-01', 'date_to'],
      ['date_from=2026-11-02T00:00:00Z&date_to=2026-11-01T00:00:00Z', 'date_to'],
    ];
    for (const [query, field] of cases)
      expectValidation(await exportCalls(`?${query}`, owner.headers), ['query', field]);
  });

  it('refuses without credentials and to API keys without the calls area', async () => {
    expectError(await exportCalls('', {}), 401);
    const key = await f.apiKey(owner, { permissions: { campaigns: 'read_write' } });
    expectError(await exportCalls('', key.headers), 403);
    const reader = await f.apiKey(owner, { permissions: { calls: 'read' } });
    expect((await exportCalls('?format=json', reader.headers)).json()).toHaveLength(4);
  });
});

describe('formula neutralisation', () => {
  it('prefixes cells a spreadsheet would run and leaves numbers and text alone', () => {
    for (const cell of ['=1+1', '+A1', '-2+3', '@SUM(A1)', '\tcmd', '\r=1', '=cmd|/C calc!A0'])
      expect(neutraliseFormula(cell)).toBe(`'${cell}`);
    for (const cell of ['+14155552671', '-3', '2.5', 'Sales', 'a=b', '', "'quoted"])
      expect(neutraliseFormula(cell)).toBe(cell);
  });
});

describe('a 200,000-row export', () => {
  it('streams every row while the server’s live heap stays flat', async () => {
    const owner = await f.user();
    const assistantId = await f.assistant(owner, 'Bulk');
    const rows = 200_000;
    await seedBulkCalls(t.database, {
      organizationId: owner.organizationId,
      assistantIds: [assistantId],
      count: rows,
      searchDocuments: false,
    });

    // What the heap holds after a full collection is what the server keeps; garbage is not growth.
    setFlagsFromString('--expose-gc');
    const collect = runInNewContext('gc') as () => void;
    const liveHeap = () => {
      collect();
      return process.memoryUsage().heapUsed;
    };
    const baseline = liveHeap();
    let peak = baseline;
    const received = await new Promise<{ lines: number; bytes: number; head: string }>((resolve, reject) => {
      const request = httpRequest(
        `${t.baseUrl}/api/v1/calls/export`,
        { headers: owner.headers },
        (response) => {
          expect(response.statusCode).toBe(200);
          let lines = 0;
          let bytes = 0;
          let sampledAt = 0;
          let head = '';
          response.on('data', (chunk: Buffer) => {
            if (bytes === 0) head = chunk.toString('utf8').split('\r\n')[0]!;
            bytes += chunk.length;
            for (const byte of chunk) if (byte === 10) lines += 1;
            // Every 2 MB received: the live heap while the server is mid-export.
            if (bytes - sampledAt > 2_000_000) {
              sampledAt = bytes;
              peak = Math.max(peak, liveHeap());
            }
          });
          response.on('end', () => resolve({ lines, bytes, head }));
          response.on('error', reject);
        },
      );
      request.on('error', reject);
      request.end();
    });
    expect(received.head).toBe(HEADER);
    expect(received.lines).toBe(rows + 1);
    // The file is about 20 MB; a server that gathered it (or its rows) before sending would keep at
    // least that much alive. Streaming holds one 1,000-row batch (about 100 kB) at a time.
    expect(received.bytes).toBeGreaterThan(15_000_000);
    const growth = peak - baseline;
    const message = `live heap grew ${(growth / 1e6).toFixed(1)} MB for a ${(received.bytes / 1e6).toFixed(1)} MB file`;
    console.log(message);
    expect(growth, message).toBeLessThan(received.bytes / 5);
  }, 120_000);
});
