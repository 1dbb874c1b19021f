/**
 * Campaign contacts: POST /api/v1/campaigns/{id}/contacts, POST …/import-data (CSV or JSON,
 * multipart) and GET …/contacts. Header variants, quoting, BOM, CRLF and other delimiters,
 * column_mappings, custom fields becoming the campaign's available_variables, E.164 normalisation
 * with a default region (configured and per request), duplicates within an import and against the
 * campaign, invalid rows by row number (capped list, complete counts), JSON files, total_contacts,
 * the all-or-nothing import, the campaign states that take contacts, listing with pages and a status
 * filter, who may (not) call what, and a 100,000-row file imported with bounded memory.
 * Campaigns are created through the API; statuses other than draft and contact statuses are set
 * directly in the database (the moves and the executor are not built yet). The tests share one
 * platform; each creates the campaigns it needs.
 */
import { Readable } from 'node:stream';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { and, eq } from 'drizzle-orm';
import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../src/config.js';
import {
  type CampaignStatus,
  type ContactStatus,
  campaignContacts,
  campaigns,
} from '../src/db/schema/index.js';
import { normalisePhone } from '../src/domains/campaigns/contacts/checks.js';
import { columnKey } from '../src/domains/campaigns/contacts/files.js';
import { readCsv, sniffDelimiter } from '../src/lib/csv.js';
import { JsonElementError, readJsonArray } from '../src/lib/json-array.js';
import { expectError, expectValidation } from './support/assertions.js';
import { Factories, type TestUser } from './support/factories.js';
import { startTestPlatform, type TestPlatform } from './support/harness.js';
import { deref, type OpenApiDocument } from './support/openapi-walk.js';

const BASE = '/api/v1/campaigns';
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;
const REPORT_FIELDS = ['imported', 'duplicates', 'invalid', 'errors'].sort();
const CONTACT_FIELDS = [
  'id',
  'campaign_id',
  'phone_number',
  'name',
  'email',
  'company',
  'custom_fields',
  'status',
  'attempts',
  'next_attempt_at',
  'created_at',
  'updated_at',
].sort();
const STANDARD_VARIABLES = ['assistant_name', 'company', 'email', 'name', 'phone_number'];

type Headers = Record<string, string>;
interface Report {
  imported: number;
  duplicates: number;
  invalid: number;
  errors: Array<{ row: number; detail: string }>;
}
interface Contact {
  id: number;
  phone_number: string;
  name: string | null;
  email: string | null;
  company: string | null;
  custom_fields: Record<string, unknown>;
  status: string;
  created_at: string;
}

let t: TestPlatform;
let f: Factories;
let admin: TestUser;
let assistantId: number;
beforeAll(async () => {
  t = await startTestPlatform();
  f = new Factories(t);
  admin = await f.user();
  assistantId = await assistantOf(admin);
});
afterAll(() => t?.close());

async function assistantOf(user: TestUser, platform: TestPlatform = t): Promise<number> {
  const response = await platform.app.inject({
    method: 'POST',
    url: '/api/v1/assistants',
    headers: user.headers,
    payload: { name: 'Outreach' },
  });
  expect(response.statusCode, response.body).toBe(201);
  return response.json().id;
}

async function newCampaign(
  user: TestUser = admin,
  assistant: number = assistantId,
  platform: TestPlatform = t,
): Promise<number> {
  const response = await platform.app.inject({
    method: 'POST',
    url: BASE,
    headers: user.headers,
    payload: { name: 'Spring outreach', campaign_type: 'call', assistant_id: assistant },
  });
  expect(response.statusCode, response.body).toBe(201);
  return response.json().id;
}

async function setStatus(id: number, status: CampaignStatus): Promise<void> {
  await t.database.db.update(campaigns).set({ status }).where(eq(campaigns.id, id));
}

async function campaignOf(id: number, headers: Headers = admin.headers) {
  const response = await t.app.inject({ method: 'GET', url: `${BASE}/${id}`, headers });
  expect(response.statusCode, response.body).toBe(200);
  return response.json() as { total_contacts: number; available_variables: string[]; updated_at: string };
}

function add(id: number, body: unknown, headers: Headers = admin.headers, platform = t) {
  return platform.app.inject({
    method: 'POST',
    url: `${BASE}/${id}/contacts`,
    headers,
    payload: body as object,
  });
}

function list(id: number, query = '', headers: Headers = admin.headers) {
  return t.app.inject({ method: 'GET', url: `${BASE}/${id}/contacts${query}`, headers });
}

interface FilePart {
  content: string | Uint8Array;
  filename?: string;
  type?: string;
  field?: string;
}

/** A multipart/form-data body as a browser's FormData encodes it. */
async function form(
  file: FilePart | FilePart[] | undefined,
  fields: Record<string, string> = {},
): Promise<{ payload: Buffer; headers: Headers }> {
  const data = new FormData();
  for (const [name, value] of Object.entries(fields)) data.append(name, value);
  for (const part of file === undefined ? [] : [file].flat()) {
    data.append(
      part.field ?? 'file',
      new Blob([part.content], { type: part.type ?? 'text/csv' }),
      part.filename ?? 'contacts.csv',
    );
  }
  const encoded = new Response(data);
  return {
    payload: Buffer.from(await encoded.arrayBuffer()),
    headers: { 'content-type': encoded.headers.get('content-type')! },
  };
}

async function importFile(
  id: number,
  file: FilePart | FilePart[] | undefined,
  fields: Record<string, string> = {},
  headers: Headers = admin.headers,
  platform: TestPlatform = t,
): Promise<LightMyRequestResponse> {
  const body = await form(file, fields);
  return platform.app.inject({
    method: 'POST',
    url: `${BASE}/${id}/import-data`,
    headers: { ...headers, ...body.headers },
    payload: body.payload,
  });
}

function reportOf(response: LightMyRequestResponse): Report {
  expect(response.statusCode, response.body).toBe(200);
  const body = response.json() as Report;
  expect(Object.keys(body).sort()).toEqual(REPORT_FIELDS);
  return body;
}

async function contactsOf(id: number): Promise<Contact[]> {
  const response = await list(id, '?per_page=1000');
  expect(response.statusCode, response.body).toBe(200);
  return response.json().contacts;
}

async function byPhone(id: number): Promise<Map<string, Contact>> {
  return new Map((await contactsOf(id)).map((c) => [c.phone_number, c]));
}

describe('POST /api/v1/campaigns/{id}/contacts', () => {
  it('adds contacts with E.164 numbers and answers the report', async () => {
    const id = await newCampaign();
    const report = reportOf(
      await add(id, {
        contacts: [
          {
            phone_number: '(415) 555-2671',
            name: 'Ada Lovelace',
            email: 'ada@example.com',
            company: 'Engines',
          },
          {
            phone_number: '+44 20 7946 0958',
            name: null,
            custom_fields: { plan: 'gold', seats: 12, vip: true },
          },
          { phone_number: '415.555.2672' },
        ],
      }),
    );
    expect(report).toEqual({ imported: 3, duplicates: 0, invalid: 0, errors: [] });
    const contacts = await contactsOf(id);
    expect(contacts.map((c) => c.phone_number)).toEqual(['+14155552671', '+442079460958', '+14155552672']);
    for (const contact of contacts) expect(Object.keys(contact).sort()).toEqual(CONTACT_FIELDS);
    expect(contacts[0]).toMatchObject({
      name: 'Ada Lovelace',
      email: 'ada@example.com',
      company: 'Engines',
      custom_fields: {},
      status: 'pending',
      attempts: 0,
      next_attempt_at: null,
      campaign_id: id,
    });
    expect(contacts[0]!.created_at).toMatch(ISO);
    expect(contacts[1]).toMatchObject({ name: null, custom_fields: { plan: 'gold', seats: 12, vip: true } });
    const campaign = await campaignOf(id);
    expect(campaign.total_contacts).toBe(3);
    expect(campaign.available_variables).toEqual([...STANDARD_VARIABLES, 'plan', 'seats', 'vip'].sort());
  });

  it('counts duplicates within the request and against the campaign, and invalid rows by position', async () => {
    const id = await newCampaign();
    reportOf(await add(id, { contacts: [{ phone_number: '+14155550100' }] }));
    const report = reportOf(
      await add(id, {
        contacts: [
          { phone_number: '415-555-0101' },
          { phone_number: '+1 415 555 0100' },
          { phone_number: 'not a number' },
          { phone_number: '(415) 555-0101' },
          { phone_number: '+14155550102', email: 'nobody' },
          { phone_number: '' },
          { phone_number: '+14155550103', name: 'x'.repeat(201) },
          { phone_number: '+14155550104', custom_fields: { note: 'y'.repeat(2001) } },
        ],
      }),
    );
    expect(report).toEqual({
      imported: 1,
      duplicates: 2,
      invalid: 5,
      errors: [
        { row: 2, detail: 'Duplicate phone number +14155550100: already a contact of this campaign' },
        { row: 3, detail: 'Invalid phone number "not a number" (default region US)' },
        { row: 4, detail: 'Duplicate phone number +14155550101: it appears earlier in this import' },
        { row: 5, detail: 'Invalid email address "nobody"' },
        { row: 6, detail: 'Missing phone number' },
        { row: 7, detail: 'name is longer than 200 characters' },
        { row: 8, detail: 'Custom field "note" is longer than 2000 characters' },
      ],
    });
    expect((await campaignOf(id)).total_contacts).toBe(2);
  });

  it('reads numbers without a country code in default_region', async () => {
    const id = await newCampaign();
    const report = reportOf(
      await add(id, {
        default_region: 'gb',
        contacts: [{ phone_number: '020 7946 0959' }, { phone_number: '+1 (415) 555-2673' }],
      }),
    );
    expect(report.imported).toBe(2);
    expect([...(await byPhone(id)).keys()].sort()).toEqual(['+14155552673', '+442079460959']);
    // The configured default (US) does not read a British national number.
    const us = reportOf(await add(id, { contacts: [{ phone_number: '020 7946 0960' }] }));
    expect(us).toMatchObject({ imported: 0, invalid: 1 });
  });

  it('keeps only the first of two contacts with one number, and its fields', async () => {
    const id = await newCampaign();
    reportOf(
      await add(id, {
        contacts: [
          { phone_number: '+14155550110', name: 'First' },
          { phone_number: '+14155550110', name: 'Second' },
        ],
      }),
    );
    expect((await contactsOf(id)).map((c) => c.name)).toEqual(['First']);
  });

  it('refuses malformed bodies with 422 and adds nothing', async () => {
    const id = await newCampaign();
    expectValidation(await add(id, {}), ['body', 'contacts'], 'missing');
    expectValidation(await add(id, { contacts: [] }), ['body', 'contacts'], 'too_short');
    expectValidation(
      await add(id, { contacts: [{ name: 'No number' }] }),
      ['body', 'contacts', 0, 'phone_number'],
      'missing',
    );
    expectValidation(await add(id, { contacts: [{ phone_number: 14155550100 }] }), [
      'body',
      'contacts',
      0,
      'phone_number',
    ]);
    expectValidation(
      await add(id, { contacts: [{ phone_number: '+14155550100', phone: 'x' }] }),
      ['body', 'contacts', 0, 'phone'],
      'extra_forbidden',
    );
    expectValidation(
      await add(id, { contacts: [{ phone_number: '+14155550100', custom_fields: { nested: { a: 1 } } }] }),
      ['body', 'contacts', 0, 'custom_fields', 'nested'],
    );
    expectValidation(await add(id, { contacts: [{ phone_number: '+14155550100' }], default_region: 'XX' }), [
      'body',
      'default_region',
    ]);
    expectValidation(
      await add(id, { contacts: Array.from({ length: 10_001 }, () => ({ phone_number: '+14155550100' })) }),
      ['body', 'contacts'],
      'too_long',
    );
    expect((await campaignOf(id)).total_contacts).toBe(0);
  });

  it('takes contacts while draft, scheduled or paused, and answers 409 in the other states', async () => {
    for (const status of ['scheduled', 'paused'] as const) {
      const id = await newCampaign();
      await setStatus(id, status);
      expect(reportOf(await add(id, { contacts: [{ phone_number: '+14155550120' }] })).imported).toBe(1);
    }
    for (const status of ['running', 'completed', 'cancelled', 'failed'] as const) {
      const id = await newCampaign();
      await setStatus(id, status);
      expectError(
        await add(id, { contacts: [{ phone_number: '+14155550120' }] }),
        409,
        new RegExp(`campaign is ${status}.*draft, scheduled, paused`),
      );
      expectError(await importFile(id, { content: 'phone\n+14155550120\n' }), 409);
      expect((await campaignOf(id)).total_contacts).toBe(0);
    }
  });

  it('answers 404 for a campaign that does not exist', async () => {
    expectError(
      await add(2_000_000_000, { contacts: [{ phone_number: '+14155550100' }] }),
      404,
      /Campaign not found/,
    );
  });
});

describe('POST /api/v1/campaigns/{id}/import-data: CSV', () => {
  const headerVariants: Array<[string, string, Partial<Contact>]> = [
    [
      'phone,name,email,company',
      '4155550130,Ada,ada@example.com,Acme',
      { name: 'Ada', email: 'ada@example.com', company: 'Acme' },
    ],
    [
      'Phone Number,Full Name,E-mail,Organization',
      '4155550130,Ada,ada@example.com,Acme',
      { name: 'Ada', email: 'ada@example.com', company: 'Acme' },
    ],
    [
      'MOBILE,Name,Email Address,Business',
      '4155550130,Ada,ada@example.com,Acme',
      { name: 'Ada', email: 'ada@example.com', company: 'Acme' },
    ],
    [
      'cell,first_name,last_name,company_name',
      '4155550130,Ada,Lovelace,Acme',
      { name: 'Ada Lovelace', company: 'Acme' },
    ],
    ['Telephone,First Name,Surname', '4155550130,Ada,Lovelace', { name: 'Ada Lovelace' }],
    [
      'number,fullname,mail,organisation',
      '4155550130,Ada,ada@example.com,Acme',
      { name: 'Ada', email: 'ada@example.com', company: 'Acme' },
    ],
    ['phone_number', '4155550130', { name: null, email: null, company: null }],
  ];
  for (const [header, row, expected] of headerVariants) {
    it(`recognises the header "${header}"`, async () => {
      const id = await newCampaign();
      expect(reportOf(await importFile(id, { content: `${header}\n${row}\n` }))).toMatchObject({
        imported: 1,
      });
      const [contact] = await contactsOf(id);
      expect(contact).toMatchObject({ phone_number: '+14155550130', ...expected });
    });
  }

  it('keeps first and last names as custom fields beside the whole name', async () => {
    const id = await newCampaign();
    reportOf(
      await importFile(id, {
        content: 'First Name,Last Name,Phone\nAda,Lovelace,4155550131\nGrace,,4155550132\n',
      }),
    );
    const contacts = await byPhone(id);
    expect(contacts.get('+14155550131')).toMatchObject({
      name: 'Ada Lovelace',
      custom_fields: { first_name: 'Ada', last_name: 'Lovelace' },
    });
    expect(contacts.get('+14155550132')).toMatchObject({
      name: 'Grace',
      custom_fields: { first_name: 'Grace' },
    });
    expect((await campaignOf(id)).available_variables).toEqual(
      [...STANDARD_VARIABLES, 'first_name', 'last_name'].sort(),
    );
  });

  it('reads quoted fields: delimiters, doubled quotes and line breaks inside quotes', async () => {
    const id = await newCampaign();
    const content = [
      'phone,name,company,notes',
      '"+1 (415) 555-0140","Lovelace, Ada","The ""Engine"" Co","line one',
      'line two"',
      '+14155550141,O"Brien,,plain',
    ].join('\n');
    expect(reportOf(await importFile(id, { content }))).toMatchObject({ imported: 2, invalid: 0 });
    const contacts = await byPhone(id);
    expect(contacts.get('+14155550140')).toMatchObject({
      name: 'Lovelace, Ada',
      company: 'The "Engine" Co',
      custom_fields: { notes: 'line one\nline two' },
    });
    expect(contacts.get('+14155550141')).toMatchObject({
      name: 'O"Brien',
      company: null,
      custom_fields: { notes: 'plain' },
    });
  });

  it('reads a UTF-8 byte-order mark, CRLF line ends, blank lines and non-ASCII text', async () => {
    const id = await newCampaign();
    const content = '\uFEFFPhone,Name\r\n4155550150,Zoë Ångström\r\n\r\n,,\r\n4155550151,李雷\r\n';
    const report = reportOf(await importFile(id, { content }));
    expect(report).toEqual({ imported: 2, duplicates: 0, invalid: 0, errors: [] });
    const contacts = await byPhone(id);
    expect(contacts.get('+14155550150')?.name).toBe('Zoë Ångström');
    expect(contacts.get('+14155550151')?.name).toBe('李雷');
  });

  it('reads semicolon- and tab-separated files', async () => {
    const id = await newCampaign();
    reportOf(await importFile(id, { content: 'Phone;Name;Plan\n4155550160;Ada;gold, annual\n' }));
    reportOf(await importFile(id, { content: 'phone\tname\n4155550161\tGrace\n', filename: 'contacts.tsv' }));
    const contacts = await byPhone(id);
    expect(contacts.get('+14155550160')).toMatchObject({
      name: 'Ada',
      custom_fields: { plan: 'gold, annual' },
    });
    expect(contacts.get('+14155550161')).toMatchObject({ name: 'Grace' });
  });

  it('stores extra columns as custom fields and adds their names to available_variables, sorted', async () => {
    const id = await newCampaign();
    const before = await campaignOf(id);
    reportOf(
      await importFile(id, {
        content:
          'phone,Account Plan,Renewal-Date,zone,empty\n4155550170,Gold,2025-01-31,west,\n4155550171,,,east,\n',
      }),
    );
    const contacts = await byPhone(id);
    expect(contacts.get('+14155550170')?.custom_fields).toEqual({
      account_plan: 'Gold',
      renewal_date: '2025-01-31',
      zone: 'west',
    });
    expect(contacts.get('+14155550171')?.custom_fields).toEqual({ zone: 'east' });
    const after = await campaignOf(id);
    expect(after.available_variables).toEqual(
      [...STANDARD_VARIABLES, 'account_plan', 'renewal_date', 'zone'].sort(),
    );
    expect(after.updated_at > before.updated_at).toBe(true);
    // A later import adds its own names to the union.
    reportOf(await importFile(id, { content: 'phone,tier\n4155550172,2\n' }));
    expect((await campaignOf(id)).available_variables).toEqual(
      [...STANDARD_VARIABLES, 'account_plan', 'renewal_date', 'tier', 'zone'].sort(),
    );
  });

  it('follows column_mappings: chosen columns, custom names, and columns left out', async () => {
    const id = await newCampaign();
    const content =
      'Contact No,Phone,Who,Org,Tier,Internal notes\n4155550180,4155559999,Ada,Acme,gold,secret\n';
    const mappings = {
      'Contact No': 'phone_number',
      who: 'name',
      Org: 'company',
      Tier: 'custom_fields.plan',
      'Internal notes': null,
    };
    reportOf(await importFile(id, { content }, { column_mappings: JSON.stringify(mappings) }));
    const [contact] = await contactsOf(id);
    expect(contact).toMatchObject({
      phone_number: '+14155550180',
      name: 'Ada',
      company: 'Acme',
      // The Phone column lost phone_number to the mapping and is kept as a custom field.
      custom_fields: { plan: 'gold', phone: '4155559999' },
    });
    expect((await campaignOf(id)).available_variables).toEqual(
      [...STANDARD_VARIABLES, 'phone', 'plan'].sort(),
    );
  });

  it('refuses column_mappings that are not usable, with 422 and nothing imported', async () => {
    const id = await newCampaign();
    const content = 'phone,cell\n4155550190,4155550191\n';
    const send = (value: string) => importFile(id, { content }, { column_mappings: value });
    expectValidation(await send('{not json'), ['body', 'column_mappings'], 'json_invalid');
    expectValidation(await send('["phone"]'), ['body', 'column_mappings']);
    expectValidation(await send('{"cell": "telephone_type"}'), ['body', 'column_mappings', 'cell']);
    expectValidation(await send('{"phone": "phone_number", "cell": "phone_number"}'), [
      'body',
      'column_mappings',
      'cell',
    ]);
    expectValidation(await send('{"mobile": "phone_number"}'), ['body', 'column_mappings', 'mobile']);
    expect((await campaignOf(id)).total_contacts).toBe(0);
  });

  it('normalises numbers to E.164 in the default region, per request or configured', async () => {
    const id = await newCampaign();
    const content = [
      'phone',
      '(415) 555-0200',
      '415.555.0201',
      '1-415-555-0202',
      '+44 20 7946 0100',
      '447911123456',
      '020 7946 0101',
      '12345',
      'call me',
    ].join('\n');
    const report = reportOf(await importFile(id, { content }));
    expect(report).toMatchObject({ imported: 5, invalid: 3 });
    expect(report.errors).toEqual([
      { row: 6, detail: 'Invalid phone number "020 7946 0101" (default region US)' },
      { row: 7, detail: 'Invalid phone number "12345" (default region US)' },
      { row: 8, detail: 'Invalid phone number "call me" (default region US)' },
    ]);
    expect([...(await byPhone(id)).keys()].sort()).toEqual([
      '+14155550200',
      '+14155550201',
      '+14155550202',
      '+442079460100',
      '+447911123456',
    ]);
    const gb = await newCampaign();
    const british = reportOf(
      await importFile(gb, { content: 'phone\n020 7946 0101\n07911 123457\n' }, { default_region: 'GB' }),
    );
    expect(british.imported).toBe(2);
    expect([...(await byPhone(gb)).keys()].sort()).toEqual(['+442079460101', '+447911123457']);
    expectValidation(await importFile(gb, { content: 'phone\n1\n' }, { default_region: 'Narnia' }), [
      'body',
      'default_region',
    ]);
  });

  it('counts duplicates within the file and against existing contacts, by row', async () => {
    const id = await newCampaign();
    reportOf(await add(id, { contacts: [{ phone_number: '+14155550300' }] }));
    const content = [
      'phone,name',
      '4155550301,a',
      '4155550300,b',
      '(415) 555-0301,c',
      '4155550302,d',
      '+14155550302,e',
    ].join('\n');
    const report = reportOf(await importFile(id, { content }));
    expect(report).toEqual({
      imported: 2,
      duplicates: 3,
      invalid: 0,
      errors: [
        { row: 2, detail: 'Duplicate phone number +14155550300: already a contact of this campaign' },
        { row: 3, detail: 'Duplicate phone number +14155550301: it appears earlier in this import' },
        { row: 5, detail: 'Duplicate phone number +14155550302: it appears earlier in this import' },
      ],
    });
    expect((await campaignOf(id)).total_contacts).toBe(3);
  });

  it('tells duplicates of earlier batches of the same file from contacts the campaign had', async () => {
    const id = await newCampaign();
    reportOf(await add(id, { contacts: [{ phone_number: '+12025550000' }] }));
    const rows = Array.from({ length: 1500 }, (_, i) => `+1202555${String(i).padStart(4, '0')}`);
    // Row 1501 repeats row 2 (in the first batch of 1,000); row 1502 repeats the existing contact.
    const content = ['phone', ...rows, rows[1], '+12025550000'].join('\n');
    const report = reportOf(await importFile(id, { content }));
    expect(report).toMatchObject({ imported: 1499, duplicates: 3, invalid: 0 });
    expect(report.errors).toEqual([
      { row: 1, detail: 'Duplicate phone number +12025550000: already a contact of this campaign' },
      { row: 1501, detail: 'Duplicate phone number +12025550001: it appears earlier in this import' },
      { row: 1502, detail: 'Duplicate phone number +12025550000: already a contact of this campaign' },
    ]);
    expect((await campaignOf(id)).total_contacts).toBe(1500);
  });

  it('lists at most the first 100 problem rows, in row order, with complete counts', async () => {
    const id = await newCampaign();
    reportOf(await add(id, { contacts: [{ phone_number: '+13125550000' }] }));
    const lines = ['phone'];
    for (let i = 0; i < 2500; i++) {
      // Every 10th row is invalid, every 25th a duplicate of the existing contact.
      if (i % 10 === 3) lines.push('bad');
      else if (i % 25 === 7) lines.push('+13125550000');
      else lines.push(`+1312555${String(1000 + i).padStart(4, '0')}`);
    }
    const report = reportOf(await importFile(id, { content: lines.join('\n') }));
    expect(report.invalid).toBe(250);
    expect(report.duplicates).toBe(100);
    expect(report.imported).toBe(2500 - 350);
    expect(report.errors).toHaveLength(100);
    const rows = report.errors.map((e) => e.row);
    expect(rows).toEqual([...rows].sort((a, b) => a - b));
    const expected: number[] = [];
    for (let i = 0; expected.length < 100; i++) if (i % 10 === 3 || i % 25 === 7) expected.push(i + 1);
    expect(rows).toEqual(expected);
    expect((await campaignOf(id)).total_contacts).toBe(1 + 2150);
  });

  it('refuses a file without a phone column, an empty file and a broken one, importing nothing', async () => {
    const id = await newCampaign();
    expectValidation(await importFile(id, { content: 'name,email\nAda,ada@example.com\n' }), [
      'body',
      'file',
    ]);
    expectValidation(await importFile(id, { content: '' }), ['body', 'file']);
    expectValidation(await importFile(id, { content: '\n\n  \n' }), ['body', 'file']);
    // An unclosed quote on the last row: the rows before it are not kept either.
    const broken = [
      'phone,name',
      ...Array.from({ length: 1200 }, (_, i) => `+1646555${String(i).padStart(4, '0')},x`),
      '+16465559999,"open',
    ];
    const response = await importFile(id, { content: broken.join('\n') });
    expectValidation(response, ['body', 'file']);
    expect(JSON.stringify(response.json())).toMatch(/not valid CSV \(line \d+\)/);
    expect((await campaignOf(id)).total_contacts).toBe(0);
    expect(await contactsOf(id)).toEqual([]);
  });

  it('answers a header-only file with an empty report', async () => {
    const id = await newCampaign();
    expect(reportOf(await importFile(id, { content: 'phone,name\n' }))).toEqual({
      imported: 0,
      duplicates: 0,
      invalid: 0,
      errors: [],
    });
  });

  it('refuses forms it cannot use', async () => {
    const id = await newCampaign();
    expectValidation(await importFile(id, undefined, { default_region: 'US' }), ['body', 'file'], 'missing');
    expectValidation(
      await importFile(id, { content: 'phone\n4155550400\n', field: 'upload' }),
      ['body', 'upload'],
      'extra_forbidden',
    );
    expectValidation(
      await importFile(id, { content: 'phone\n4155550400\n' }, { campaign: 'x' }),
      ['body', 'campaign'],
      'extra_forbidden',
    );
    expectValidation(
      await importFile(id, [{ content: 'phone\n4155550400\n' }, { content: 'phone\n4155550401\n' }]),
      ['body', 'file'],
    );
    expectValidation(
      await importFile(id, {
        content: new Uint8Array([0x50, 0x4b, 3, 4, 0, 0]),
        filename: 'contacts.xlsx',
        type: 'application/octet-stream',
      }),
      ['body', 'file'],
    );
    const json = await t.app.inject({
      method: 'POST',
      url: `${BASE}/${id}/import-data`,
      headers: admin.headers,
      payload: { file: 'phone\n4155550400' },
    });
    expectError(json, 415, /multipart\/form-data/);
    const truncated = await form({ content: 'phone\n4155550400\n' });
    const cut = await t.app.inject({
      method: 'POST',
      url: `${BASE}/${id}/import-data`,
      headers: { ...admin.headers, ...truncated.headers },
      payload: truncated.payload.subarray(0, truncated.payload.length - 30),
    });
    expectError(cut, 400, /multipart/);
    expect((await campaignOf(id)).total_contacts).toBe(0);
  });

  it('refuses a file larger than CONTACT_IMPORT_MAX_BYTES with 413', async () => {
    const small = await startTestPlatform({ CONTACT_IMPORT_MAX_BYTES: '2048' }, { workers: false });
    try {
      const user = await new Factories(small).user();
      const id = await newCampaign(user, await assistantOf(user, small), small);
      const big = [
        'phone',
        ...Array.from({ length: 300 }, (_, i) => `+1718555${String(i).padStart(4, '0')}`),
      ].join('\n');
      expectError(
        await importFile(id, { content: big }, {}, user.headers, small),
        413,
        /larger than the 2048 bytes/,
      );
      const fits = reportOf(
        await importFile(id, { content: 'phone\n+17185550000\n' }, {}, user.headers, small),
      );
      expect(fits.imported).toBe(1);
    } finally {
      await small.close();
    }
  });
});

describe('POST /api/v1/campaigns/{id}/import-data: JSON', () => {
  it('imports an array of objects read like CSV rows', async () => {
    const id = await newCampaign();
    const content = JSON.stringify([
      { phone: '(415) 555-0500', full_name: 'Ada', email: 'ada@example.com', plan: 'gold' },
      {
        'Phone Number': 14155550501,
        first_name: 'Grace',
        last_name: 'Hopper',
        custom_fields: { seats: 3, vip: false },
      },
      { mobile: '+14155550500' },
      { phone: '+14155550502', custom_fields: 'oops' },
      'not an object',
      { name: 'No number' },
      { phone: '+14155550503', company: { nested: true } },
    ]);
    const report = reportOf(
      await importFile(id, { content, filename: 'contacts.json', type: 'application/json' }),
    );
    expect(report).toEqual({
      imported: 2,
      duplicates: 1,
      invalid: 4,
      errors: [
        { row: 3, detail: 'Duplicate phone number +14155550500: it appears earlier in this import' },
        { row: 4, detail: 'custom_fields must be an object' },
        { row: 5, detail: 'Each element must be an object ({"phone_number": …})' },
        { row: 6, detail: 'Missing phone number' },
        { row: 7, detail: 'company must be text' },
      ],
    });
    const contacts = await byPhone(id);
    expect(contacts.get('+14155550500')).toMatchObject({
      name: 'Ada',
      email: 'ada@example.com',
      custom_fields: { plan: 'gold' },
    });
    expect(contacts.get('+14155550501')).toMatchObject({
      name: 'Grace Hopper',
      custom_fields: { first_name: 'Grace', last_name: 'Hopper', seats: 3, vip: false },
    });
    expect((await campaignOf(id)).available_variables).toEqual(
      [...STANDARD_VARIABLES, 'first_name', 'last_name', 'plan', 'seats', 'vip'].sort(),
    );
  });

  it('recognises JSON by its first character, reports an element that does not parse, and applies column_mappings', async () => {
    const id = await newCampaign();
    const content =
      '\uFEFF [ {"Cell": "4155550510", "Who": "Ada"},\n {"Cell": "4155550511", "Who": "Bob",},\n {"Cell": "4155550512"} ]';
    const report = reportOf(
      await importFile(
        id,
        { content, filename: 'export', type: 'application/octet-stream' },
        { column_mappings: '{"Cell": "phone_number", "Who": "name"}' },
      ),
    );
    expect(report.imported).toBe(2);
    expect(report.invalid).toBe(1);
    expect(report.errors[0]).toMatchObject({ row: 2 });
    expect(report.errors[0]!.detail).toMatch(/^Not valid JSON/);
    expect((await byPhone(id)).get('+14155550510')?.name).toBe('Ada');
  });

  it('refuses a file that is not a JSON array, importing nothing', async () => {
    const id = await newCampaign();
    const send = (content: string) =>
      importFile(id, { content, filename: 'c.json', type: 'application/json' });
    expectValidation(await send('{"phone": "+14155550520"}'), ['body', 'file']);
    expectValidation(await send('[{"phone": "+14155550520"}, {"phone": "+14155550521"}'), ['body', 'file']);
    expectValidation(await send('[{"phone": "+14155550520"},]'), ['body', 'file']);
    expectValidation(await send('[{"phone": "+14155550520"}] trailing'), ['body', 'file']);
    expect((await campaignOf(id)).total_contacts).toBe(0);
    expect(reportOf(await send('[]'))).toEqual({ imported: 0, duplicates: 0, invalid: 0, errors: [] });
  });
});

describe('GET /api/v1/campaigns/{id}/contacts', () => {
  it('pages through the contacts in the order they were added, with the pagination object', async () => {
    const id = await newCampaign();
    const phones = Array.from({ length: 25 }, (_, i) => `+1415555${String(600 + i).padStart(4, '0')}`);
    reportOf(await add(id, { contacts: phones.map((phone_number) => ({ phone_number })) }));
    const first = await list(id, '?page=1&per_page=10');
    expect(first.statusCode, first.body).toBe(200);
    expect(Object.keys(first.json()).sort()).toEqual(['contacts', 'pagination']);
    expect(first.json().pagination).toEqual({
      page: 1,
      per_page: 10,
      total_items: 25,
      total_pages: 3,
      has_next: true,
      has_prev: false,
    });
    expect(first.json().contacts.map((c: Contact) => c.phone_number)).toEqual(phones.slice(0, 10));
    const last = (await list(id, '?page=3&per_page=10')).json();
    expect(last.contacts.map((c: Contact) => c.phone_number)).toEqual(phones.slice(20));
    expect(last.pagination).toMatchObject({ page: 3, has_next: false, has_prev: true });
    const beyond = (await list(id, '?page=4&per_page=10')).json();
    expect(beyond.contacts).toEqual([]);
    expect((await list(id)).json().pagination).toMatchObject({ page: 1, per_page: 50, total_pages: 1 });
  });

  it('filters by contact status', async () => {
    const id = await newCampaign();
    reportOf(
      await add(id, {
        contacts: ['+14155550700', '+14155550701', '+14155550702'].map((phone_number) => ({ phone_number })),
      }),
    );
    const statuses: Record<string, ContactStatus> = { '+14155550700': 'completed', '+14155550701': 'failed' };
    for (const [phone, status] of Object.entries(statuses)) {
      await t.database.db
        .update(campaignContacts)
        .set({ status })
        .where(and(eq(campaignContacts.campaignId, id), eq(campaignContacts.phoneNumber, phone)));
    }
    const completed = (await list(id, '?status=completed')).json();
    expect(completed.contacts.map((c: Contact) => c.phone_number)).toEqual(['+14155550700']);
    expect(completed.pagination.total_items).toBe(1);
    expect((await list(id, '?status=pending')).json().contacts.map((c: Contact) => c.phone_number)).toEqual([
      '+14155550702',
    ]);
    expect((await list(id, '?status=skipped')).json().pagination.total_items).toBe(0);
  });

  it('refuses bad query values with 422 and answers 404 for an unknown campaign', async () => {
    const id = await newCampaign();
    expectValidation(await list(id, '?status=done'), ['query', 'status']);
    expectValidation(await list(0 as number), ['path', 'campaign_id']);
    expectError(await list(2_000_000_000), 404, /Campaign not found/);
  });
});

describe('NUL characters (U+0000) in an import', () => {
  // PostgreSQL cannot store NUL in text: the whole file is refused, naming where, and nothing is imported.
  it('in a CSV cell: 422 naming the row and column, no row imported', async () => {
    const id = await newCampaign();
    const csv = 'phone,name\n4155550130,Ada\n4155550131,Gr\u0000ace\n';
    const response = await importFile(id, { content: csv });
    expect(response.statusCode, response.body).toBe(422);
    expect(response.json().detail).toEqual([
      {
        loc: ['body', 'file', 2, 'name'],
        msg: 'The text holds a NUL character (U+0000)',
        type: 'string_nul',
      },
    ]);
    expect(await contactsOf(id)).toEqual([]);
  });

  it('in a CSV header: 422 naming row 0', async () => {
    const id = await newCampaign();
    const response = await importFile(id, { content: 'phone,na\u0000me\n4155550130,Ada\n' });
    expect(response.statusCode, response.body).toBe(422);
    expect(response.json().detail[0].loc).toEqual(['body', 'file', 0, 2]);
  });

  it('in a JSON element, key or value: 422 naming the element', async () => {
    const id = await newCampaign();
    for (const [element, loc] of [
      [{ phone: '4155550130', name: 'A\u0000da' }, ['body', 'file', 2, 'name']],
      [{ phone: '4155550130', 'x\u0000': 'y' }, ['body', 'file', 2, 'x\u0000']],
      [
        { phone: '4155550130', custom_fields: { tier: ['\u0000'] } },
        ['body', 'file', 2, 'custom_fields', 'tier', 0],
      ],
    ] as const) {
      const content = JSON.stringify([{ phone: '4155550199' }, element]);
      const response = await importFile(id, { content, filename: 'contacts.json', type: 'application/json' });
      expect(response.statusCode, response.body).toBe(422);
      expect(response.json().detail.map((issue: { loc: unknown }) => issue.loc)).toEqual([loc]);
    }
    expect(await contactsOf(id)).toEqual([]);
  });

  it('in a multipart text field: 422 naming the field', async () => {
    const id = await newCampaign();
    const response = await importFile(id, { content: 'phone\n4155550130\n' }, { default_region: 'U\u0000S' });
    expect(response.statusCode, response.body).toBe(422);
    expect(response.json().detail).toEqual([
      { loc: ['body', 'default_region'], msg: 'The text holds a NUL character (U+0000)', type: 'string_nul' },
    ]);
  });
});

describe('security', () => {
  const routes = (id: number) => [
    () => add(id, { contacts: [{ phone_number: '+14155550800' }] }, {}),
    () => importFile(id, { content: 'phone\n+14155550800\n' }, {}, {}),
    () => list(id, '', {}),
  ];

  it('answers 401 without credentials on all three routes', async () => {
    const id = await newCampaign();
    for (const call of routes(id)) expectError(await call(), 401);
  });

  it('needs the API key area campaigns: read to list, read_write to add or import', async () => {
    const id = await newCampaign();
    const none = await f.apiKey(admin, { permissions: { calls: 'read_write' } });
    const read = await f.apiKey(admin, { permissions: { campaigns: 'read' } });
    const write = await f.apiKey(admin, { permissions: { campaigns: 'read_write' } });
    const body = { contacts: [{ phone_number: '+14155550810' }] };
    expectError(await add(id, body, none.headers), 403, /campaigns/);
    expectError(
      await importFile(id, { content: 'phone\n+14155550811\n' }, {}, none.headers),
      403,
      /campaigns/,
    );
    expectError(await list(id, '', none.headers), 403, /campaigns/);
    expectError(await add(id, body, read.headers), 403, /read_write/);
    expectError(
      await importFile(id, { content: 'phone\n+14155550811\n' }, {}, read.headers),
      403,
      /read_write/,
    );
    expect((await list(id, '', read.headers)).statusCode).toBe(200);
    expect(reportOf(await add(id, body, write.headers)).imported).toBe(1);
    expect(
      reportOf(await importFile(id, { content: 'phone\n+14155550811\n' }, {}, write.headers)).imported,
    ).toBe(1);
    expect((await campaignOf(id)).total_contacts).toBe(2);
  });

  it("answers 404 for another organization's campaign on all three routes and changes nothing", async () => {
    const id = await newCampaign();
    reportOf(await add(id, { contacts: [{ phone_number: '+14155550820' }] }));
    const stranger = await f.user();
    const strangerKey = await f.apiKey(stranger, { permissions: { campaigns: 'read_write' } });
    for (const headers of [stranger.headers, strangerKey.headers]) {
      expectError(
        await add(id, { contacts: [{ phone_number: '+14155550821' }] }, headers),
        404,
        /Campaign not found/,
      );
      expectError(
        await importFile(id, { content: 'phone\n+14155550822\n' }, {}, headers),
        404,
        /Campaign not found/,
      );
      expectError(await list(id, '', headers), 404, /Campaign not found/);
    }
    expect((await campaignOf(id)).total_contacts).toBe(1);
    expect((await contactsOf(id)).map((c) => c.phone_number)).toEqual(['+14155550820']);
  });

  it('lets a member of the organization (role user) add and list contacts', async () => {
    const id = await newCampaign();
    const member = await f.member(admin.organizationId, 'user');
    expect(
      reportOf(await add(id, { contacts: [{ phone_number: '+14155550830' }] }, member.headers)).imported,
    ).toBe(1);
    expect((await list(id, '', member.headers)).json().pagination.total_items).toBe(1);
  });
});

describe('documentation', () => {
  it('documents the three routes in OpenAPI, the import as a multipart form with a binary file', async () => {
    const response = await t.app.inject({ method: 'GET', url: '/openapi.json' });
    expect(response.statusCode).toBe(200);
    const doc = response.json() as OpenApiDocument;
    const paths = doc.paths;
    const contacts = paths['/api/v1/campaigns/{campaign_id}/contacts']!;
    const imports = paths['/api/v1/campaigns/{campaign_id}/import-data']!;
    for (const operation of [contacts.get!, contacts.post!, imports.post!]) {
      expect((operation.security as unknown[]).length).toBeGreaterThan(0);
      expect(operation.description).toMatch(/campaigns/);
    }
    // The form is the named component ContactImportForm, used through $ref.
    const form = deref(
      doc,
      (imports.post!.requestBody as { content: Record<string, { schema: Record<string, unknown> }> }).content[
        'multipart/form-data'
      ]!.schema,
    ) as {
      properties: Record<string, { format?: string }>;
      required: string[];
    };
    expect(form.properties.file?.format).toBe('binary');
    expect(Object.keys(form.properties).sort()).toEqual(['column_mappings', 'default_region', 'file']);
    expect(form.required).toEqual(['file']);
    expect(Object.keys(imports.post!.responses as object)).toEqual(
      expect.arrayContaining(['200', '401', '403', '413', '422']),
    );
  });
});

describe('concurrency', () => {
  it('keeps total_contacts equal to the contacts when imports into one campaign overlap', async () => {
    const id = await newCampaign();
    const files = Array.from({ length: 4 }, (_, n) =>
      [
        'phone',
        ...Array.from({ length: 600 }, (_, i) => `+1305555${String(n * 300 + i).padStart(4, '0')}`),
      ].join('\n'),
    );
    const reports = await Promise.all(files.map((content) => importFile(id, { content }).then(reportOf)));
    const imported = reports.reduce((sum, r) => sum + r.imported, 0);
    const duplicates = reports.reduce((sum, r) => sum + r.duplicates, 0);
    // The files overlap by half: 1,500 distinct numbers in 2,400 rows.
    expect(imported).toBe(1500);
    expect(duplicates).toBe(900);
    const counted = await t.database.executeSql(
      'select count(*)::int as n from campaign_contacts where campaign_id = $1',
      [id],
    );
    expect(counted.rows[0]?.n).toBe(1500);
    expect((await campaignOf(id)).total_contacts).toBe(1500);
  });
});

/** V8's full garbage collection, which vitest's workers do not expose by default. */
function garbageCollector(): () => void {
  setFlagsFromString('--expose-gc');
  return runInNewContext('gc') as () => void;
}

describe('streaming', () => {
  it('imports a 100,000-row CSV with memory that does not grow with the file', async () => {
    const id = await newCampaign();
    const rows = 100_000;
    const boundary = '----switchboard-test-boundary';
    const notes = 'n'.repeat(200);
    const areas = [201, 202, 203, 205, 206, 207, 208, 209, 210, 212];
    // The multipart body is generated as it is sent: the test holds no copy of the file either.
    async function* body() {
      yield `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="big.csv"\r\nContent-Type: text/csv\r\n\r\n`;
      yield 'phone,name,plan,notes\n';
      for (let start = 0; start < rows; start += 1000) {
        let chunk = '';
        for (let i = start; i < start + 1000; i++) {
          chunk += `+1${areas[Math.floor(i / 10_000)]}555${String(i % 10_000).padStart(4, '0')},Contact ${i},tier-${i % 7},${notes}\n`;
        }
        yield chunk;
      }
      yield `\r\n--${boundary}--\r\n`;
    }
    // Live memory is measured after a full collection, so garbage not yet collected does not count.
    // Once a second: a full collection costs the worker tens of milliseconds, and a file held whole
    // would show as a climb over many seconds, not a spike between two samples.
    const collect = garbageCollector();
    collect();
    const baseline = process.memoryUsage();
    let peakLive = baseline.heapUsed;
    let peakRss = baseline.rss;
    const sampler = setInterval(() => {
      collect();
      const now = process.memoryUsage();
      peakLive = Math.max(peakLive, now.heapUsed);
      peakRss = Math.max(peakRss, now.rss);
    }, 1000);
    const started = performance.now();
    const response = await t.app.inject({
      method: 'POST',
      url: `${BASE}/${id}/import-data`,
      headers: { ...admin.headers, 'content-type': `multipart/form-data; boundary=${boundary}` },
      payload: Readable.from(body()),
    });
    clearInterval(sampler);
    const seconds = (performance.now() - started) / 1000;
    const report = reportOf(response);
    expect(report).toEqual({ imported: rows, duplicates: 0, invalid: 0, errors: [] });
    expect((await campaignOf(id)).total_contacts).toBe(rows);
    const liveMb = (peakLive - baseline.heapUsed) / 2 ** 20;
    const rssMb = (peakRss - baseline.rss) / 2 ** 20;
    console.log(
      `100k-row import (${t.database.kind}): ${seconds.toFixed(1)} s, ${Math.round(rows / seconds)} rows/s, ` +
        `live heap +${liveMb.toFixed(1)} MB, peak RSS +${rssMb.toFixed(0)} MB (file ${((rows * 250) / 2 ** 20).toFixed(0)} MB)`,
    );
    // The file is ~24 MB, and its rows as objects well over 100 MB: holding either would show here.
    // The import holds one batch of 1,000 at a time. (The embedded database lives in this process,
    // so RSS is bounded only on a server.)
    expect(liveMb).toBeLessThan(32);
    if (t.database.kind === 'server') expect(rssMb).toBeLessThan(100);
  }, 180_000);
});

describe('building blocks', () => {
  it('sniffs the delimiter from the header line, outside quotes', () => {
    expect(sniffDelimiter('phone,name\n1;2;3;4')).toBe(',');
    expect(sniffDelimiter('phone;name;plan\n')).toBe(';');
    expect(sniffDelimiter('phone\tname\n')).toBe('\t');
    expect(sniffDelimiter('"a;b;c",d\n')).toBe(',');
    expect(sniffDelimiter('phone\n')).toBe(',');
  });

  it('reads CSV records across chunk boundaries and stops at a broken quote with its line', async () => {
    const text = 'a,b\r\n"x\r\ny",2\r\n3,"4""5"\r\n';
    const chunks = text.split('').map((c) => Buffer.from(c));
    const records: string[][] = [];
    for await (const record of readCsv(Readable.from(chunks))) records.push(record);
    expect(records).toEqual([
      ['a', 'b'],
      ['x\r\ny', '2'],
      ['3', '4"5'],
    ]);
    await expect(async () => {
      for await (const _ of readCsv(Readable.from(['a\n1\n"2\n']))) void _;
    }).rejects.toMatchObject({ name: 'CsvSyntaxError', line: expect.any(Number) });
  });

  it('reads a JSON array element by element across chunk boundaries', async () => {
    const text = ' [ {"a": "x,]}", "b": [1, {"c": "\\"}"}]}, 7, "s", null, {"d": 1,} ] ';
    const elements: unknown[] = [];
    for await (const element of readJsonArray(Readable.from(text.split('').map((c) => Buffer.from(c))))) {
      elements.push(element);
    }
    expect(elements.slice(0, 4)).toEqual([{ a: 'x,]}', b: [1, { c: '"}' }] }, 7, 's', null]);
    expect(elements[4]).toBeInstanceOf(JsonElementError);
    const multibyte = Buffer.from('[{"n": "Zoë 李"}]');
    const split: unknown[] = [];
    for await (const e of readJsonArray(Readable.from([multibyte.subarray(0, 11), multibyte.subarray(11)])))
      split.push(e);
    expect(split).toEqual([{ n: 'Zoë 李' }]);
  });

  it('turns headers into keys and numbers into E.164', () => {
    expect(columnKey(' Account Plan ')).toBe('account_plan');
    expect(columnKey('E-mail')).toBe('e_mail');
    expect(columnKey('Téléphone #')).toBe('téléphone');
    expect(normalisePhone('(415) 555-2671', 'US')).toBe('+14155552671');
    expect(normalisePhone('020 7946 0958', 'GB')).toBe('+442079460958');
    expect(normalisePhone('33 1 42 68 53 00', 'US')).toBe('+33142685300');
    expect(normalisePhone('415 555 2671 ext 5', 'US')).toBeUndefined();
    expect(normalisePhone('12', 'US')).toBeUndefined();
  });

  it('reads DEFAULT_PHONE_REGION and CONTACT_IMPORT_MAX_BYTES, refusing bad values by name', () => {
    expect(loadConfig({}).contacts).toEqual({ defaultPhoneRegion: 'US', importMaxBytes: 50 * 2 ** 20 });
    expect(loadConfig({ DEFAULT_PHONE_REGION: 'gb', CONTACT_IMPORT_MAX_BYTES: '4096' }).contacts).toEqual({
      defaultPhoneRegion: 'GB',
      importMaxBytes: 4096,
    });
    for (const [name, value] of [
      ['DEFAULT_PHONE_REGION', 'XX'],
      ['DEFAULT_PHONE_REGION', 'USA'],
      ['CONTACT_IMPORT_MAX_BYTES', '10'],
      ['CONTACT_IMPORT_MAX_BYTES', 'lots'],
    ] as const) {
      expect(() => loadConfig({ [name]: value }), `${name}=${value}`).toThrow(ConfigError);
      try {
        loadConfig({ [name]: value });
      } catch (error) {
        expect((error as ConfigError).problems).toHaveLength(1);
        expect((error as ConfigError).problems[0]!.startsWith(`${name} `)).toBe(true);
      }
    }
  });
});
