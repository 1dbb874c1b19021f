/**
 * GET /api/v1/calls/search: full-text search over assistant names, phone numbers (whole or any 3+
 * digits of them, with or without +) and transcripts (stemmed), ranked, inside the organization.
 * These tests share one organization's calls, seeded once.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectError, expectValidation } from './support/assertions.js';
import { seedCall } from './support/call-seed.js';
import { Factories, type TestUser } from './support/factories.js';
import { startTestPlatform, type TestPlatform } from './support/harness.js';

let t: TestPlatform;
let f: Factories;
let owner: TestUser;
let stranger: TestUser;
const ids: Record<string, number> = {};
let salesId: number;

function search(query: string, headers: Record<string, string> = owner.headers) {
  return t.app.inject({ method: 'GET', url: `/api/v1/calls/search?${query}`, headers });
}

async function found(q: string, extra = ''): Promise<number[]> {
  const response = await search(`q=${encodeURIComponent(q)}${extra}`);
  expect(response.statusCode, response.body).toBe(200);
  return response.json().map((call: { id: number }) => call.id);
}

beforeAll(async () => {
  t = await startTestPlatform();
  f = new Factories(t);
  owner = await f.user();
  stranger = await f.user();
  salesId = await f.assistant(owner, 'Sales Concierge');
  const dental = await f.assistant(owner, 'Dental Reminders');
  const org = owner.organizationId;
  ids.refund = (
    await seedCall(t.database, org, {
      assistantId: dental,
      customer: '+12125550123',
      transcript: [
        ['assistant', 'Thanks for calling, how can I help?'],
        ['user', 'I was refunded twice for the same order.'],
      ],
    })
  ).id;
  ids.invoices = (
    await seedCall(t.database, org, {
      assistantId: dental,
      customer: '+13105550000',
      transcript: [
        ['user', 'The invoice is wrong.'],
        ['assistant', 'Let me fix the invoice.'],
        ['user', 'Please send the corrected invoice again.'],
      ],
    })
  ).id;
  ids.invoiceOnce = (
    await seedCall(t.database, org, {
      assistantId: dental,
      customer: '+13105550001',
      transcript: [['user', 'Where is my invoice? Also the kangaroo escaped.']],
    })
  ).id;
  ids.sales = (
    await seedCall(t.database, org, {
      assistantId: salesId,
      customer: '+447700900123',
      transcript: [['user', 'Hello']],
    })
  ).id;
  ids.salesInvoice = (
    await seedCall(t.database, org, {
      assistantId: salesId,
      customer: '+447700900456',
      transcript: [['user', 'A question about an invoice for the sales team.']],
    })
  ).id;
  ids.appointment = (
    await seedCall(t.database, org, {
      assistantId: dental,
      customer: '+16465550999',
      transcript: [['user', 'I would like to book an appointment on Monday.']],
    })
  ).id;
  // The same words and numbers in another organization are never found.
  const theirs = await f.assistant(stranger, 'Sales Concierge');
  ids.foreign = (
    await seedCall(t.database, stranger.organizationId, {
      assistantId: theirs,
      customer: '+12125550123',
      transcript: [['user', 'I was refunded twice, and the invoice is wrong.']],
    })
  ).id;
});
afterAll(async () => {
  await t.close();
});

describe('what search finds', () => {
  it('finds calls by their assistant’s name, stemmed and in any case', async () => {
    expect(await found('Sales Concierge')).toEqual(expect.arrayContaining([ids.sales, ids.salesInvoice]));
    expect(new Set(await found('concierges'))).toEqual(new Set([ids.sales, ids.salesInvoice]));
    expect(await found('DENTAL')).toHaveLength(4);
  });

  it('finds a call by its whole phone number, with or without +, spaced or bracketed', async () => {
    for (const q of ['+12125550123', '12125550123', '+1 (212) 555-0123', '1-212-555-0123'])
      expect(await found(q), q).toEqual([ids.refund]);
  });

  it('finds calls by any 3 or more digits of a number, anywhere in it', async () => {
    expect(await found('5550123')).toEqual([ids.refund]);
    expect(await found('212')).toEqual([ids.refund]);
    expect(new Set(await found('0123'))).toEqual(new Set([ids.refund, ids.sales]));
    expect(new Set(await found('+44 7700'))).toEqual(new Set([ids.sales, ids.salesInvoice]));
    expect(new Set(await found('310555000'))).toEqual(new Set([ids.invoices, ids.invoiceOnce]));
    expect(await found('900456')).toEqual([ids.salesInvoice]);
    expect(await found('98765')).toEqual([]);
  });

  it('finds calls by transcript words, stemmed', async () => {
    expect(await found('refund')).toEqual([ids.refund]);
    expect(await found('refunds')).toEqual([ids.refund]);
    expect(await found('kangaroos')).toEqual([ids.invoiceOnce]);
    expect(await found('booking appointments')).toEqual([ids.appointment]);
    expect(await found('"book an appointment"')).toEqual([ids.appointment]);
    expect(await found('invoice -kangaroo')).not.toContain(ids.invoiceOnce);
  });

  it('ranks the closer match first', async () => {
    // Assistant name and transcript both match: above a transcript mention alone. Three mentions
    // of the word: above one.
    const invoice = await found('sales invoice');
    expect(invoice[0]).toBe(ids.salesInvoice);
    const ranked = await found('invoice');
    expect(ranked.indexOf(ids.invoices!)).toBeLessThan(ranked.indexOf(ids.invoiceOnce!));
    expect(new Set(ranked)).toEqual(new Set([ids.invoices, ids.invoiceOnce, ids.salesInvoice]));
  });

  it('finds the best call even when it is its assistant’s oldest', async () => {
    // A call matching by assistant name and by transcript outranks the assistant's newer calls
    // (name only) and other calls that only say the word, whatever `limit` is.
    const user = await f.user();
    const orthodontics = await f.assistant(user, 'Orthodontics');
    const both = await seedCall(t.database, user.organizationId, {
      assistantId: orthodontics,
      transcript: [['user', 'My orthodontics appointment, please.']],
    });
    for (let i = 0; i < 3; i++)
      await seedCall(t.database, user.organizationId, { assistantId: orthodontics });
    const wordsOnly = await seedCall(t.database, user.organizationId, {
      transcript: [['user', 'Orthodontics? Orthodontics! Orthodontics.']],
    });
    const ranked = async (limit: number) =>
      (await search(`q=orthodontics&limit=${limit}`, user.headers))
        .json()
        .map((call: { id: number }) => call.id);
    expect(await ranked(1)).toEqual([both.id]);
    const all = await ranked(10);
    expect(all).toHaveLength(5);
    expect(all[0]).toBe(both.id);
    // Name only (0.5) ranks above a transcript mention alone, newest first among the name-only ones.
    expect(all.at(-1)).toBe(wordsOnly.id);
    expect(all.slice(1, 4)).toEqual([...all.slice(1, 4)].sort((a: number, b: number) => b - a));
  });

  it('answers the call schema with cost, created_at and updated_at', async () => {
    const response = await search('q=refund');
    const [call] = response.json();
    expect(call).toMatchObject({
      id: ids.refund,
      assistant_id: expect.any(Number),
      call_sid: expect.any(String),
      to_phone_number: '+12125550123',
      customer_phone_number: '+12125550123',
      status: 'completed',
      call_meta: {},
      duration: 30,
      cost: null,
      started_at: expect.any(String),
      ended_at: expect.any(String),
      created_at: expect.any(String),
      updated_at: expect.any(String),
    });
  });

  it('answers at most `limit` calls, and nothing for stop words alone', async () => {
    expect(await found('dental', '&limit=2')).toHaveLength(2);
    expect(await found('the')).toEqual([]);
  });

  it('follows an assistant’s new name at once', async () => {
    const renamed = await t.app.inject({
      method: 'PUT',
      url: `/api/v1/assistants/${salesId}`,
      headers: owner.headers,
      payload: { name: 'Outbound Closer' },
    });
    expect(renamed.statusCode, renamed.body).toBe(200);
    expect(new Set(await found('closer'))).toEqual(new Set([ids.sales, ids.salesInvoice]));
    expect(await found('concierge')).toEqual([]);
  });
});

describe('who searches', () => {
  it('never answers another organization’s calls', async () => {
    const mine = await found('refunded twice');
    expect(mine).toEqual([ids.refund]);
    const theirs = await search(`q=${encodeURIComponent('+12125550123')}`, stranger.headers);
    expect(theirs.json().map((call: { id: number }) => call.id)).toEqual([ids.foreign]);
  });

  it('refuses without credentials and to API keys without the calls area', async () => {
    expectError(await search('q=refund', {}), 401);
    const key = await f.apiKey(owner, { permissions: { assistants: 'read_write' } });
    expectError(await search('q=refund', key.headers), 403);
    const reader = await f.apiKey(owner, { permissions: { calls: 'read' } });
    expect((await search('q=refund', reader.headers)).statusCode).toBe(200);
  });
});

describe('invalid searches', () => {
  it('answers 422 with the validation body', async () => {
    expectValidation(await search(''), ['query', 'q'], 'missing');
    expectValidation(await search('q=ab'), ['query', 'q'], 'string_too_short');
    expectValidation(await search('q='), ['query', 'q'], 'string_too_short');
    expectValidation(await search(`q=${encodeURIComponent('  a  ')}`), ['query', 'q'], 'string_too_short');
    expectValidation(await search(`q=${'x'.repeat(201)}`), ['query', 'q'], 'string_too_long');
    expectValidation(await search('q=refund&limit=0'), ['query', 'limit']);
    expectValidation(await search('q=refund&limit=201'), ['query', 'limit']);
    expectValidation(await search('q=refund&limit=many'), ['query', 'limit']);
    expect((await search('q=refund&limit=200')).statusCode).toBe(200);
    expect((await search('q=abc&limit=1')).statusCode).toBe(200);
  });
});
