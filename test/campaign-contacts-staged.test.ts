/**
 * The two ways of writing a contact import agree. On a PostgreSQL server a file is staged — its
 * checked rows streamed by COPY into a temporary table, a segment at a time, each segment inserted by
 * one statement — while the embedded database (and JSON bodies) insert batch by batch. The same file
 * must give the same report (counts, the first 100 problem rows in row order, every message), the
 * same contacts in the same order with the same fields, and the same campaign counters and
 * variables, whichever way it went.
 *
 * Each file is imported three times into three campaigns holding the same contacts beforehand: over
 * HTTP (the platform's own service: these files are one segment), and directly through two services
 * of the test's own — one with the server's COPY and segments of one batch each (its COPY statements
 * counted), and one without COPY (row by row). On the embedded database all three are row by row, and
 * the checks of counts and messages against the file's model still apply. Also: a file that turns out
 * broken after some segments were written, and a row the database refuses half-way, leave nothing
 * imported; the report's list keeps row order when repeats found while reading and numbers the
 * campaign had come in the same batch. The tests share one platform; each creates its campaigns.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { asc, eq } from 'drizzle-orm';
import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Database } from '../src/db/client.js';
import { databaseErrorOf } from '../src/db/errors.js';
import { campaignContacts, campaigns } from '../src/db/schema/index.js';
import { CampaignContactService } from '../src/domains/campaigns/contacts/service.js';
import type { Principal } from '../src/domains/identity/principal.js';
import { Factories, type TestUser } from './support/factories.js';
import { startTestPlatform, type TestPlatform } from './support/harness.js';

const BASE = '/api/v1/campaigns';

interface Report {
  imported: number;
  duplicates: number;
  invalid: number;
  errors: Array<{ row: number; detail: string }>;
}

let t: TestPlatform;
let admin: TestUser;
let principal: Principal;
let assistantId: number;
let directory: string;
/** Counts the COPY statements of the test's staged service. */
let copies = 0;
let staged: CampaignContactService;
let rowByRow: CampaignContactService;

beforeAll(async () => {
  t = await startTestPlatform();
  admin = await new Factories(t).user();
  principal = (await t.platform.authenticator.fromAccessToken(admin.accessToken))!;
  const assistant = await t.app.inject({
    method: 'POST',
    url: '/api/v1/assistants',
    headers: admin.headers,
    payload: { name: 'Outreach' },
  });
  assistantId = assistant.json().id;
  directory = mkdtempSync(path.join(tmpdir(), 'switchboard-staged-test-'));
  const { copyIn } = t.database;
  const counted: Database['copyIn'] = copyIn
    ? (tx, statement, chunks) => {
        copies += 1;
        return copyIn(tx, statement, chunks);
      }
    : undefined;
  // Segments of one batch each (a batch's COPY text is longer than this): the HTTP imports of these
  // files are one segment, this service's several.
  staged = new CampaignContactService({
    db: t.database.db,
    defaultRegion: 'US',
    copyIn: counted,
    segmentSize: 1000,
  });
  rowByRow = new CampaignContactService({ db: t.database.db, defaultRegion: 'US' });
});
afterAll(async () => {
  if (directory) rmSync(directory, { recursive: true, force: true });
  await t?.close();
});

/** A campaign holding `existing` (E.164 numbers) before the import. */
async function campaignWith(existing: string[]): Promise<number> {
  const created = await t.app.inject({
    method: 'POST',
    url: BASE,
    headers: admin.headers,
    payload: { name: 'Staging', campaign_type: 'call', assistant_id: assistantId },
  });
  expect(created.statusCode, created.body).toBe(201);
  const id = created.json().id as number;
  if (existing.length > 0) {
    const added = await t.app.inject({
      method: 'POST',
      url: `${BASE}/${id}/contacts`,
      headers: admin.headers,
      payload: { contacts: existing.map((phone_number) => ({ phone_number, custom_fields: { before: 1 } })) },
    });
    expect(added.json()).toMatchObject({ imported: existing.length });
  }
  return id;
}

async function upload(id: number, content: string, filename: string): Promise<LightMyRequestResponse> {
  const data = new FormData();
  const type = filename.endsWith('.json') ? 'application/json' : 'text/csv';
  data.append('file', new Blob([content], { type }), filename);
  const encoded = new Response(data);
  return t.app.inject({
    method: 'POST',
    url: `${BASE}/${id}/import-data`,
    headers: { ...admin.headers, 'content-type': encoded.headers.get('content-type')! },
    payload: Buffer.from(await encoded.arrayBuffer()),
  });
}

let files = 0;
/** The file as the route hands it to the service: on disk. */
function onDisk(content: string, filename: string) {
  files += 1;
  const file = path.join(directory, `${files}-${filename}`);
  writeFileSync(file, content);
  return { path: file, filename, mimetype: filename.endsWith('.json') ? 'application/json' : 'text/csv' };
}

/** Everything an import leaves: the contacts in listing order (without ids and times) and the campaign. */
async function outcome(id: number) {
  const contacts = await t.database.db
    .select({
      phoneNumber: campaignContacts.phoneNumber,
      name: campaignContacts.name,
      email: campaignContacts.email,
      company: campaignContacts.company,
      customFields: campaignContacts.customFields,
      status: campaignContacts.status,
    })
    .from(campaignContacts)
    .where(eq(campaignContacts.campaignId, id))
    .orderBy(asc(campaignContacts.id));
  const [campaign] = await t.database.db
    .select({ total: campaigns.totalContacts, variables: campaigns.availableVariables })
    .from(campaigns)
    .where(eq(campaigns.id, id));
  if (!campaign) throw new Error(`No campaign ${id}`);
  return { contacts, campaign };
}

/**
 * Imports `content` three ways into three campaigns holding `existing`, checks that the reports and
 * outcomes are identical and that the staged service used COPY exactly on a server, and answers the
 * report and one outcome.
 */
async function importThreeWays(content: string, filename: string, existing: string[], segments: number) {
  const [viaHttp, viaStaged, viaRows] = [
    await campaignWith(existing),
    await campaignWith(existing),
    await campaignWith(existing),
  ];
  const response = await upload(viaHttp, content, filename);
  expect(response.statusCode, response.body).toBe(200);
  const report = response.json() as Report;
  const copiesBefore = copies;
  const stagedReport = await staged.importFile(principal, viaStaged, onDisk(content, filename), {});
  expect(copies - copiesBefore).toBe(t.database.kind === 'server' ? segments : 0);
  const rowsReport = await rowByRow.importFile(principal, viaRows, onDisk(content, filename), {});
  expect(stagedReport).toEqual(report);
  expect(rowsReport).toEqual(report);
  const result = await outcome(viaHttp);
  expect(await outcome(viaStaged)).toEqual(result);
  expect(await outcome(viaRows)).toEqual(result);
  return { report, ...result };
}

function csvField(value: string): string {
  return /[",\r\n]/.test(value) ? `"${value.replaceAll('"', '""')}"` : value;
}

const EXISTING = ['+13125550001', '+13125550002', '+13125550003'];
/** Ways the file writes the numbers the campaign had. */
const EXISTING_AS = ['(312) 555-0001', '+1 312 555 0002', '3125550003'];
/** Texts COPY's format must carry through unchanged: its escapes, quotes, non-ASCII. */
const AWKWARD = [
  'tab\there',
  'line\nbreak',
  'back\\slash',
  '\\N',
  '\\.',
  'say "hi", then \'bye\'',
  'Zoë Ångström 📞',
  'carriage\rreturn',
  '{"looks": "like json"}',
];

interface FileRow {
  cells: string[];
  /** The contact's number when the row is valid, undefined when it is invalid. */
  phone?: string;
}

/**
 * 2,600 data rows (three batches, so more than one chunk of COPY lines) mixing new numbers in
 * several formats, invalid rows of every kind, repeats inside a batch and across batches, repeats
 * of numbers the campaign had, awkward texts in every text column, and a custom column filled only
 * on repeated rows (not a variable: no imported contact has it). Well over 100 problem rows.
 */
function mixedFile(): { content: string; rows: FileRow[] } {
  const rows: FileRow[] = [];
  for (let i = 0; i < 2600; i++) {
    const awkward = AWKWARD[i % AWKWARD.length]!;
    const fresh = `+1415555${String(i).padStart(4, '0')}`;
    const formats = [fresh, `(415) 555-${fresh.slice(-4)}`, `415.555.${fresh.slice(-4)}`, fresh.slice(2)];
    const others = [
      `First ${i}`,
      i % 3 === 0 ? `Last ${awkward}` : '',
      i % 4 === 0 ? `c${i}@example.com` : '',
      i % 5 === 0 ? `Co ${awkward}` : '',
      `tier-${i % 7}`,
      i % 2 === 0 ? awkward : '',
      '',
    ];
    if (i % 11 === 4) {
      const kind = Math.floor(i / 11) % 5;
      if (kind === 0) rows.push({ cells: ['call me maybe', ...others.slice(1)] });
      else if (kind === 1) rows.push({ cells: ['', ...others.slice(1)] });
      else if (kind === 2)
        rows.push({ cells: [fresh, others[0]!, others[1]!, 'not-an-address', ...others.slice(3)] });
      else if (kind === 3) rows.push({ cells: [fresh, 'x'.repeat(201), ...others.slice(1)] });
      else rows.push({ cells: ['+1 415 555 01', ...others.slice(1)] });
      continue;
    }
    const repeated = (phone: string, shown: string) =>
      rows.push({ cells: [shown, ...others.slice(0, 6), `repeat ${awkward}`], phone });
    if (i % 23 === 9) {
      const which = Math.floor(i / 23) % 3;
      repeated(EXISTING[which]!, EXISTING_AS[which]!);
    } else if (i % 29 === 15 && rows[i - 30]?.phone) {
      // Thirty rows back: the same batch of 1,000 mostly, the one before at its start.
      repeated(rows[i - 30]!.phone!, rows[i - 30]!.cells[0]!);
    } else if (i % 97 === 50 && i >= 1200 && rows[i - 1150]?.phone) {
      repeated(rows[i - 1150]!.phone!, rows[i - 1150]!.cells[0]!);
    } else {
      rows.push({ cells: [formats[i % formats.length]!, ...others], phone: fresh });
    }
  }
  const header = 'Phone,First Name,Last Name,E-mail,Company,Plan,Note,Only On Repeats';
  const content = [header, ...rows.map((row) => row.cells.map(csvField).join(','))].join('\r\n');
  return { content, rows };
}

/** What the file's model expects: counts and which rows are problems, none of which depends on batches. */
function expected(rows: FileRow[], existing: string[]) {
  const taken = new Set(existing);
  let imported = 0;
  let duplicates = 0;
  let invalid = 0;
  const problems: number[] = [];
  for (const [index, row] of rows.entries()) {
    if (row.phone === undefined) invalid += 1;
    else if (taken.has(row.phone)) duplicates += 1;
    else {
      imported += 1;
      taken.add(row.phone);
      continue;
    }
    problems.push(index + 1);
  }
  return { imported, duplicates, invalid, firstProblems: problems.slice(0, 100) };
}

describe('staged and row-by-row imports give the same result', () => {
  it('for a CSV file of three batches mixing every kind of row', async () => {
    const { content, rows } = mixedFile();
    const { report, contacts, campaign } = await importThreeWays(content, 'mixed.csv', EXISTING, 3);
    const model = expected(rows, EXISTING);
    expect(model.duplicates).toBeGreaterThan(100);
    expect(model.invalid).toBeGreaterThan(100);
    expect(report).toMatchObject({
      imported: model.imported,
      duplicates: model.duplicates,
      invalid: model.invalid,
    });
    expect(report.errors.map((e) => e.row)).toEqual(model.firstProblems);
    const detailOf = new Map(report.errors.map((e) => [e.row, e.detail]));
    // Row 10 (i = 9) is the first repeat of a number the campaign had; row 5 the first invalid one.
    expect(detailOf.get(10)).toBe('Duplicate phone number +13125550001: already a contact of this campaign');
    expect(detailOf.get(5)).toBe('Invalid phone number "call me maybe" (default region US)');
    expect(detailOf.get(27)).toBe('Invalid email address "not-an-address"');
    // Row 45 repeats row 15 of the same batch, whose number the import added.
    expect(detailOf.get(45)).toBe('Duplicate phone number +14155550014: it appears earlier in this import');

    expect(contacts).toHaveLength(EXISTING.length + model.imported);
    expect(campaign).toEqual({
      total: EXISTING.length + model.imported,
      variables: [
        'assistant_name',
        'before',
        'company',
        'email',
        'first_name',
        'last_name',
        'name',
        'note',
        'phone_number',
        'plan',
      ],
    });
    // Listed in the file's order, with the awkward texts intact.
    const imported = contacts.slice(EXISTING.length);
    const firstRows = rows.filter(
      (row, index) => row.phone && rows.findIndex((r) => r.phone === row.phone) === index,
    );
    expect(imported.map((c) => c.phoneNumber)).toEqual(
      firstRows.filter((row) => !EXISTING.includes(row.phone!)).map((row) => row.phone),
    );
    const row0 = imported[0]!;
    expect(row0).toMatchObject({
      phoneNumber: '+14155550000',
      name: 'First 0 Last tab\there',
      email: 'c0@example.com',
      company: 'Co tab\there',
      customFields: { first_name: 'First 0', last_name: 'Last tab\there', plan: 'tier-0', note: 'tab\there' },
    });
    const notes = new Set(imported.map((c) => c.customFields.note).filter((note) => note !== undefined));
    expect([...notes].sort()).toEqual([...AWKWARD].sort());
  });

  it('for a JSON file with typed custom fields, keys as given, and no duplicates', async () => {
    const elements = Array.from({ length: 1500 }, (_, i) => ({
      phone: i % 3 === 0 ? 14155550000 + i : `+1 415 555 ${String(i).padStart(4, '0')}`,
      name: `Name ${AWKWARD[i % AWKWARD.length]}`,
      custom_fields: {
        'Key "quoted"\tand tabbed': AWKWARD[i % AWKWARD.length],
        count: i,
        ratio: i / 8,
        big: 1e21,
        yes: i % 2 === 0,
        ...(i === 1499 ? { last_only: 'only the last row has it' } : {}),
      },
    }));
    const { report, contacts, campaign } = await importThreeWays(
      JSON.stringify(elements),
      'typed.json',
      [],
      2,
    );
    expect(report).toEqual({ imported: 1500, duplicates: 0, invalid: 0, errors: [] });
    expect(campaign.variables).toContain('last_only');
    expect(campaign.variables).toContain('Key "quoted"\tand tabbed');
    expect(contacts[3]!.customFields).toEqual({
      'Key "quoted"\tand tabbed': AWKWARD[3],
      count: 3,
      ratio: 0.375,
      big: 1e21,
      yes: false,
    });
  });

  it('tells repeats of numbers from earlier batches (and segments) from numbers the campaign had', async () => {
    // Row 1: a number the campaign had; rows 2-1500 new; row 1501 repeats row 2 (first batch),
    // row 1502 the number the campaign had, row 1503 repeats row 1500 (second batch).
    const fresh = Array.from({ length: 1499 }, (_, i) => `+1202555${String(i + 1).padStart(4, '0')}`);
    const lines = ['phone', EXISTING[0]!, ...fresh, fresh[0]!, EXISTING[0]!, fresh[1498]!];
    const { report, campaign } = await importThreeWays(lines.join('\n'), 'batches.csv', EXISTING, 2);
    expect(report).toEqual({
      imported: 1499,
      duplicates: 4,
      invalid: 0,
      errors: [
        { row: 1, detail: 'Duplicate phone number +13125550001: already a contact of this campaign' },
        { row: 1501, detail: 'Duplicate phone number +12025550001: it appears earlier in this import' },
        { row: 1502, detail: 'Duplicate phone number +13125550001: already a contact of this campaign' },
        { row: 1503, detail: 'Duplicate phone number +12025551499: it appears earlier in this import' },
      ],
    });
    expect(campaign.total).toBe(3 + 1499);
  });

  it('lists problem rows in row order when repeats and numbers the campaign had share a batch', async () => {
    // Rows 1-3: numbers the campaign had (refused when the batch is written); row 4 a new number,
    // rows 5-150 repeat it (found while reading). The first 100 problem rows start with rows 1-3.
    const lines = [
      'phone',
      ...EXISTING,
      '+14155550400',
      ...Array.from({ length: 146 }, () => '+14155550400'),
    ];
    const { report } = await importThreeWays(lines.join('\n'), 'order.csv', EXISTING, 1);
    expect(report).toMatchObject({ imported: 1, duplicates: 149, invalid: 0 });
    expect(report.errors.map((e) => e.row)).toEqual([
      1,
      2,
      3,
      ...Array.from({ length: 97 }, (_, i) => i + 5),
    ]);
    expect(report.errors[0]!.detail).toBe(
      'Duplicate phone number +13125550001: already a contact of this campaign',
    );
    expect(report.errors[3]!.detail).toBe(
      'Duplicate phone number +14155550400: it appears earlier in this import',
    );
  });
});

describe('an import applies completely or not at all', () => {
  it('imports nothing from a file found broken after chunks were copied, and the next import works', async () => {
    const good = Array.from({ length: 2500 }, (_, i) => `+1415556${String(i).padStart(4, '0')},Row ${i}`);
    const broken = ['phone,name', ...good, '+14155569999,"never closed'].join('\n');
    for (const way of ['http', 'staged', 'rows'] as const) {
      const id = await campaignWith(EXISTING);
      const before = await outcome(id);
      if (way === 'http') {
        const response = await upload(id, broken, 'broken.csv');
        expect(response.statusCode, response.body).toBe(422);
        expect(response.json().detail[0].loc).toEqual(['body', 'file']);
      } else {
        const service = way === 'staged' ? staged : rowByRow;
        await expect(
          service.importFile(principal, id, onDisk(broken, 'broken.csv'), {}),
        ).rejects.toMatchObject({
          issues: [expect.objectContaining({ loc: ['body', 'file'] })],
        });
      }
      expect(await outcome(id)).toEqual(before);
      // The connection the failed COPY ran on went back to the pool usable.
      const next = await upload(id, ['phone', ...good.slice(0, 1200)].join('\n'), 'good.csv');
      expect(next.json()).toMatchObject({ imported: 1200 });
    }
  });

  it('imports nothing when the database refuses a row half-way', async () => {
    const poisoned = '+14155570777';
    await t.database.executeSql(`
      create function refuse_poisoned_contact() returns trigger language plpgsql as $$
      begin
        if new.phone_number = '${poisoned}' then
          raise exception 'this number is refused' using errcode = '22023';
        end if;
        return new;
      end $$;
      create trigger refuse_poisoned_contact before insert on campaign_contacts
        for each row execute function refuse_poisoned_contact();`);
    try {
      // Row 1,800 is in the second batch: the first was written (row by row) or copied (staged).
      const lines = ['phone,plan'];
      for (let i = 0; i < 2500; i++)
        lines.push(`${i === 1799 ? poisoned : `+1415557${String(i).padStart(4, '0')}`},gold`);
      const content = lines.join('\n');
      for (const way of ['http', 'staged', 'rows'] as const) {
        const id = await campaignWith(EXISTING);
        const before = await outcome(id);
        if (way === 'http') {
          const response = await upload(id, content, 'poisoned.csv');
          expect(response.statusCode, response.body).toBe(422);
        } else {
          const service = way === 'staged' ? staged : rowByRow;
          const refused = await service
            .importFile(principal, id, onDisk(content, 'poisoned.csv'), {})
            .catch((e) => e);
          expect(databaseErrorOf(refused)).toMatchObject({
            code: '22023',
            message: 'this number is refused',
          });
        }
        expect(await outcome(id)).toEqual(before);
        expect(before.campaign).toEqual({
          total: 3,
          variables: ['assistant_name', 'before', 'company', 'email', 'name', 'phone_number'],
        });
      }
    } finally {
      await t.database.executeSql(`
        drop trigger refuse_poisoned_contact on campaign_contacts;
        drop function refuse_poisoned_contact();`);
    }
  });
});
