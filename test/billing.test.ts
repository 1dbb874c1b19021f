/**
 * Billing: GET /v1/billing/wallet, GET /v1/billing/ledger (page/per_page), trial credits for a
 * user's first organization only, `switchboard billing grant`, and the acceptance criterion: under
 * concurrent charges (and credits) the balance equals the sum of the ledger, with no lost update.
 * The tests share one platform; each creates the organizations it needs.
 */
import { eq, sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCommand, UsageError } from '../src/cli.js';
import { ledgerEntries, wallets } from '../src/db/schema/index.js';
import { Factories, type TestUser, uniqueEmail } from './support/factories.js';
import { startTestPlatform, type TestPlatform, waitFor } from './support/harness.js';

const WALLET = '/v1/billing/wallet';
const LEDGER = '/v1/billing/ledger';
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;
const ENTRY_FIELDS = [
  'amount',
  'balance_after',
  'created_at',
  'description',
  'id',
  'kind',
  'reference',
].sort();
const PAGINATION_FIELDS = ['has_next', 'has_prev', 'page', 'per_page', 'total_items', 'total_pages'].sort();

let t: TestPlatform;
let f: Factories;
beforeAll(async () => {
  t = await startTestPlatform();
  f = new Factories(t);
});
afterAll(() => t.close());

type Headers = Record<string, string>;
interface Entry {
  id: number;
  amount: number;
  balance_after: number;
  kind: string;
  description: string;
  reference: string | null;
  created_at: string;
}
interface Pagination {
  page: number;
  per_page: number;
  total_items: number;
  total_pages: number;
  has_next: boolean;
  has_prev: boolean;
}

/** Money compared at the column's scale (4 decimals). */
const money = (value: number) => Math.round(value * 10_000) / 10_000;
const sum = (values: number[]) => values.reduce((a, b) => a + b, 0);

function captureIo() {
  const io = {
    stdout: '',
    stderr: '',
    out(text: string) {
      io.stdout += text;
    },
    err(text: string) {
      io.stderr += text;
    },
  };
  return io;
}

async function wallet(headers: Headers): Promise<{ balance: number; currency: string }> {
  const response = await t.app.inject({ method: 'GET', url: WALLET, headers });
  expect(response.statusCode, response.body).toBe(200);
  return response.json();
}

function ledgerResponse(headers: Headers, query = '') {
  return t.app.inject({ method: 'GET', url: `${LEDGER}${query}`, headers });
}

async function ledger(
  headers: Headers,
  query = '?per_page=1000',
): Promise<{ entries: Entry[]; pagination: Pagination }> {
  const response = await ledgerResponse(headers, query);
  expect(response.statusCode, response.body).toBe(200);
  return response.json();
}

/** The ledger rows of an organization straight from the database, oldest first. */
async function storedLedger(organizationId: number) {
  return t.database.db
    .select()
    .from(ledgerEntries)
    .where(eq(ledgerEntries.organizationId, organizationId))
    .orderBy(ledgerEntries.id);
}

async function storedBalance(organizationId: number): Promise<number | undefined> {
  const [row] = await t.database.db.select().from(wallets).where(eq(wallets.organizationId, organizationId));
  return row === undefined ? undefined : Number(row.balance);
}

async function totalLedgerRows(): Promise<number> {
  const [row] = await t.database.db.select({ n: sql<number>`count(*)::int` }).from(ledgerEntries);
  return Number(row?.n);
}

/**
 * The ledger invariants: the balance equals the sum of the amounts; read oldest first, every
 * entry's balance_after is the previous one plus its amount; the newest entry's balance_after is the
 * balance; no two entries share a balance_after.
 */
function expectConsistent(entries: Entry[], balance: number) {
  expect(money(sum(entries.map((e) => e.amount)))).toBe(money(balance));
  const oldestFirst = [...entries].sort((a, b) => a.id - b.id);
  let running = 0;
  for (const entry of oldestFirst) {
    running = money(running + entry.amount);
    expect(money(entry.balance_after), `entry ${entry.id}`).toBe(running);
  }
  expect(money(oldestFirst.at(-1)?.balance_after ?? 0)).toBe(money(balance));
  expect(new Set(entries.map((e) => money(e.balance_after))).size).toBe(entries.length);
}

describe('GET /v1/billing/wallet', () => {
  it('shows the 10 trial credits a new organization receives', async () => {
    const user = await f.user();
    const response = await t.app.inject({ method: 'GET', url: WALLET, headers: user.headers });
    expect(response.statusCode, response.body).toBe(200);
    expect(response.json()).toEqual({ balance: 10, currency: 'USD' });
    expect(typeof response.json().balance).toBe('number');
  });

  it('follows charges and credits, to 4 decimals', async () => {
    const user = await f.user();
    await t.platform.services.billing.apply({
      organizationId: user.organizationId,
      amount: -0.0075,
      kind: 'sms',
      description: 'one segment',
    });
    expect((await wallet(user.headers)).balance).toBe(9.9925);
    await t.platform.services.billing.apply({
      organizationId: user.organizationId,
      amount: 0.12345,
      kind: 'adjustment',
      description: 'rounded to 4 decimals',
    });
    // 0.12345 is kept at the column's scale: the ledger and the wallet agree on the rounded value.
    const { balance } = await wallet(user.headers);
    const { entries } = await ledger(user.headers);
    expect(entries[0]?.amount).toBe(money(0.12345));
    expect(balance).toBe(money(9.9925 + money(0.12345)));
    expect(entries[0]?.balance_after).toBe(balance);
    expectConsistent(entries, balance);
  });

  it('is the same for every member of the organization', async () => {
    const admin = await f.user();
    const member = await f.member(admin.organizationId, 'user');
    await t.platform.services.billing.apply({
      organizationId: admin.organizationId,
      amount: -1.5,
      kind: 'call',
      description: 'a call',
    });
    expect(await wallet(member.headers)).toEqual({ balance: 8.5, currency: 'USD' });
    expect(await wallet(admin.headers)).toEqual({ balance: 8.5, currency: 'USD' });
    expect((await ledger(member.headers)).entries).toEqual((await ledger(admin.headers)).entries);
  });
});

describe('GET /v1/billing/ledger', () => {
  it('starts with the trial credit entry', async () => {
    const user = await f.user();
    const response = await ledgerResponse(user.headers);
    expect(response.statusCode, response.body).toBe(200);
    const { entries, pagination } = response.json();
    expect(entries).toHaveLength(1);
    expect(Object.keys(entries[0]).sort()).toEqual(ENTRY_FIELDS);
    expect(entries[0]).toMatchObject({
      amount: 10,
      balance_after: 10,
      kind: 'trial_credit',
      reference: null,
    });
    expect(typeof entries[0].description).toBe('string');
    expect(entries[0].created_at).toMatch(ISO);
    expect(Object.keys(pagination).sort()).toEqual(PAGINATION_FIELDS);
    expect(pagination).toEqual({
      page: 1,
      per_page: 50,
      total_items: 1,
      total_pages: 1,
      has_next: false,
      has_prev: false,
    });
  });

  it('lists newest first, with kind, description and reference as recorded', async () => {
    const user = await f.user();
    const billing = t.platform.services.billing;
    const organizationId = user.organizationId;
    await billing.apply({
      organizationId,
      amount: -0.05,
      kind: 'call',
      description: 'call 1',
      reference: 'call:1',
    });
    await billing.apply({
      organizationId,
      amount: -0.0075,
      kind: 'sms',
      description: 'sms 1',
      reference: 'sms:1',
    });
    await billing.apply({ organizationId, amount: 5, kind: 'grant', description: 'top-up' });
    const { entries } = await ledger(user.headers, '');
    expect(entries.map((e) => e.kind)).toEqual(['grant', 'sms', 'call', 'trial_credit']);
    expect(entries.map((e) => e.amount)).toEqual([5, -0.0075, -0.05, 10]);
    expect(entries.map((e) => e.balance_after)).toEqual([14.9425, 9.9425, 9.95, 10]);
    expect(entries.map((e) => e.reference)).toEqual([null, 'sms:1', 'call:1', null]);
    expect(entries.map((e) => e.description)).toEqual(['top-up', 'sms 1', 'call 1', expect.any(String)]);
    const ids = entries.map((e) => e.id);
    expect(ids).toEqual([...ids].sort((a, b) => b - a));
    expect(await wallet(user.headers)).toEqual({ balance: 14.9425, currency: 'USD' });
    expectConsistent(entries, 14.9425);
  });

  it('pages with page and per_page', async () => {
    const user = await f.user();
    for (let i = 1; i <= 6; i += 1) {
      await t.platform.services.billing.apply({
        organizationId: user.organizationId,
        amount: -0.01,
        kind: 'call',
        description: `charge ${i}`,
      });
    }
    const all = (await ledger(user.headers)).entries;
    expect(all).toHaveLength(7);
    expect(all[0]?.description).toBe('charge 6');

    const one = await ledger(user.headers, '?page=1&per_page=3');
    expect(one.entries.map((e) => e.description)).toEqual(['charge 6', 'charge 5', 'charge 4']);
    expect(one.pagination).toEqual({
      page: 1,
      per_page: 3,
      total_items: 7,
      total_pages: 3,
      has_next: true,
      has_prev: false,
    });
    const two = await ledger(user.headers, '?page=2&per_page=3');
    expect(two.entries.map((e) => e.description)).toEqual(['charge 3', 'charge 2', 'charge 1']);
    expect(two.pagination).toMatchObject({ page: 2, has_next: true, has_prev: true, total_pages: 3 });
    const three = await ledger(user.headers, '?page=3&per_page=3');
    expect(three.entries.map((e) => e.kind)).toEqual(['trial_credit']);
    expect(three.pagination).toMatchObject({ page: 3, has_next: false, has_prev: true, total_items: 7 });
    expect([...one.entries, ...two.entries, ...three.entries]).toEqual(all);

    const beyond = await ledger(user.headers, '?page=4&per_page=3');
    expect(beyond.entries).toEqual([]);
    expect(beyond.pagination).toEqual({
      page: 4,
      per_page: 3,
      total_items: 7,
      total_pages: 3,
      has_next: false,
      has_prev: true,
    });

    const exact = await ledger(user.headers, '?per_page=7');
    expect(exact.pagination).toMatchObject({ total_pages: 1, has_next: false, has_prev: false });
    expect(exact.entries).toEqual(all);

    const max = await ledger(user.headers, '?per_page=1000');
    expect(max.pagination.per_page).toBe(1000);
    expect(max.entries).toHaveLength(7);
  });

  describe('bad paging answers 422 with the validation list', () => {
    let user: TestUser;
    beforeAll(async () => {
      user = await f.user();
    });

    it.each([
      ['?per_page=1001', 'per_page'],
      ['?per_page=5000', 'per_page'],
      ['?per_page=0', 'per_page'],
      ['?per_page=-1', 'per_page'],
      ['?per_page=1.5', 'per_page'],
      ['?per_page=ten', 'per_page'],
      ['?page=0', 'page'],
      ['?page=-2', 'page'],
      ['?page=abc', 'page'],
      ['?page=1000001', 'page'],
    ])('%s', async (query, field) => {
      const response = await ledgerResponse(user.headers, query);
      expect(response.statusCode, response.body).toBe(422);
      const detail = response.json().detail as Array<{ loc: string[]; msg: string; type: string }>;
      expect(detail.map((d) => d.loc)).toContainEqual(['query', field]);
      expect(response.body).not.toContain('trial_credit');
    });
  });
});

describe('trial credits', () => {
  it('a second organization the same user creates gets none', async () => {
    const user = await f.user();
    const created = await t.app.inject({
      method: 'POST',
      url: '/api/v1/organization/create',
      headers: user.headers,
      payload: { name: 'Second company', slug: `second-${user.id}-${Date.now().toString(36)}` },
    });
    expect(created.statusCode, created.body).toBe(201);
    const secondId: number = created.json().id;
    expect(secondId).not.toBe(user.organizationId);

    const inSecond = await f.login(user, secondId);
    expect(inSecond.organizationId).toBe(secondId);
    expect(await wallet(inSecond.headers)).toEqual({ balance: 0, currency: 'USD' });
    const { entries, pagination } = await ledger(inSecond.headers);
    expect(entries).toEqual([]);
    expect(pagination).toMatchObject({ total_items: 0, total_pages: 0, has_next: false, has_prev: false });
    expect(await storedLedger(secondId)).toEqual([]);

    // The first organization keeps its one trial credit.
    const inFirst = await f.login(user, user.organizationId);
    expect(await wallet(inFirst.headers)).toEqual({ balance: 10, currency: 'USD' });
    expect((await ledger(inFirst.headers)).entries.map((e) => e.kind)).toEqual(['trial_credit']);
  });

  it('an invited user creating two organizations at once gets trial credits for exactly one', async () => {
    const admin = await f.user();
    const email = uniqueEmail('invitee');
    const invite = await t.app.inject({
      method: 'POST',
      url: '/api/v1/users/invite',
      headers: admin.headers,
      payload: { email, first_name: 'In', last_name: 'Vitee', role: 'user' },
    });
    expect(invite.statusCode, invite.body).toBe(201);
    const mail = await waitFor(() => t.mails().find((m) => m.to === email));
    const token = /users\/invitation\/([A-Za-z0-9_-]+)/.exec(mail.body)?.[1];
    expect(token).toBeTruthy();
    const accepted = await t.app.inject({
      method: 'POST',
      url: '/api/v1/users/accept-invitation',
      payload: { token, password: 'invitee password 1', confirm_password: 'invitee password 1' },
    });
    expect(accepted.statusCode, accepted.body).toBe(200);
    const headers = { authorization: `Bearer ${accepted.json().access_token}` };
    // Joining an organization credits nothing.
    expect(await wallet(headers)).toEqual({ balance: 10, currency: 'USD' });
    expect((await ledger(headers)).entries).toHaveLength(1);

    const stamp = Date.now().toString(36);
    const created = await Promise.all(
      ['a', 'b'].map((suffix) =>
        t.app.inject({
          method: 'POST',
          url: '/api/v1/organization/create',
          headers,
          payload: { name: `Own ${suffix}`, slug: `own-${suffix}-${stamp}` },
        }),
      ),
    );
    for (const response of created) expect(response.statusCode, response.body).toBe(201);
    const ids = created.map((r) => r.json().id as number);
    const balances = await Promise.all(ids.map(async (id) => (await storedBalance(id)) ?? 0));
    expect(balances.sort()).toEqual([0, 10]);
    const credited = await Promise.all(ids.map((id) => storedLedger(id)));
    expect(credited.map((rows) => rows.length).sort()).toEqual([0, 1]);
    expect(credited.flat().map((row) => row.kind)).toEqual(['trial_credit']);

    const third = await t.app.inject({
      method: 'POST',
      url: '/api/v1/organization/create',
      headers,
      payload: { name: 'Own c', slug: `own-c-${stamp}` },
    });
    expect(third.statusCode, third.body).toBe(201);
    expect(await storedBalance(third.json().id)).toBeUndefined();
    expect(await storedLedger(third.json().id)).toEqual([]);
  });
});

describe('switchboard billing grant ORG_ID AMOUNT', () => {
  it('credits the wallet and writes a ledger entry', async () => {
    const user = await f.user();
    const io = captureIo();
    expect(await runCommand(['billing', 'grant', String(user.organizationId), '2.5'], t.database, io)).toBe(
      0,
    );
    expect(io.stdout).toMatch(
      new RegExp(`Granted 2\\.5 to organization ${user.organizationId}; balance 12\\.5\\b`),
    );
    expect(io.stderr).toBe('');
    expect(await wallet(user.headers)).toEqual({ balance: 12.5, currency: 'USD' });
    const { entries } = await ledger(user.headers);
    expect(entries).toHaveLength(2);
    expect(entries[0]).toMatchObject({ amount: 2.5, balance_after: 12.5, kind: 'grant', reference: null });
    expectConsistent(entries, 12.5);

    expect(
      await runCommand(['billing', 'grant', String(user.organizationId), '0.0001'], t.database, io),
    ).toBe(0);
    expect(await runCommand(['billing', 'grant', String(user.organizationId), '100'], t.database, io)).toBe(
      0,
    );
    expect((await wallet(user.headers)).balance).toBe(112.5001);
    const after = await ledger(user.headers);
    expect(after.entries.map((e) => e.amount)).toEqual([100, 0.0001, 2.5, 10]);
    expectConsistent(after.entries, 112.5001);
  });

  it('credits an organization that has no wallet yet', async () => {
    const user = await f.user();
    const created = await t.app.inject({
      method: 'POST',
      url: '/api/v1/organization/create',
      headers: user.headers,
      payload: { name: 'No credits yet', slug: `no-credits-${user.id}` },
    });
    expect(created.statusCode, created.body).toBe(201);
    const organizationId: number = created.json().id;
    expect(await storedBalance(organizationId)).toBeUndefined();
    const io = captureIo();
    expect(await runCommand(['billing', 'grant', String(organizationId), '3.25'], t.database, io)).toBe(0);
    const inIt = await f.login(user, organizationId);
    expect(await wallet(inIt.headers)).toEqual({ balance: 3.25, currency: 'USD' });
    expect((await ledger(inIt.headers)).entries).toMatchObject([
      { amount: 3.25, balance_after: 3.25, kind: 'grant' },
    ]);
  });

  it('refuses an unknown organization with exit 1 and writes nothing', async () => {
    const before = await totalLedgerRows();
    const io = captureIo();
    expect(await runCommand(['billing', 'grant', '2000000000', '5'], t.database, io)).toBe(1);
    expect(io.stderr).toMatch(/No organization with id 2000000000/);
    expect(io.stdout).toBe('');
    expect(await totalLedgerRows()).toBe(before);
    const [orphan] = await t.database.db
      .select()
      .from(wallets)
      .where(eq(wallets.organizationId, 2_000_000_000));
    expect(orphan).toBeUndefined();
  });

  describe('refuses bad arguments with a usage error, touching nothing', () => {
    let user: TestUser;
    beforeAll(async () => {
      user = await f.user();
    });

    const cases: Array<[string, (id: string) => string[]]> = [
      ['a non-numeric organization id', () => ['billing', 'grant', 'abc', '1']],
      ['organization id 0', () => ['billing', 'grant', '0', '1']],
      ['a negative organization id', () => ['billing', 'grant', '-3', '1']],
      ['a fractional organization id', () => ['billing', 'grant', '1.5', '1']],
      ['amount 0', (id) => ['billing', 'grant', id, '0']],
      ['amount 0.0000', (id) => ['billing', 'grant', id, '0.0000']],
      ['a negative amount', (id) => ['billing', 'grant', id, '-5']],
      ['a negative fractional amount', (id) => ['billing', 'grant', id, '-0.5']],
      ['more than 4 decimals', (id) => ['billing', 'grant', id, '1.23456']],
      ['a tiny amount beyond 4 decimals', (id) => ['billing', 'grant', id, '0.00001']],
      ['a non-numeric amount', (id) => ['billing', 'grant', id, 'ten']],
      ['an exponent', (id) => ['billing', 'grant', id, '1e3']],
      ['an empty amount', (id) => ['billing', 'grant', id, '']],
      ['a missing amount', (id) => ['billing', 'grant', id]],
      ['no arguments', () => ['billing', 'grant']],
    ];

    it.each(cases)('%s', async (_label, args) => {
      const before = await totalLedgerRows();
      const io = captureIo();
      await expect(runCommand(args(String(user.organizationId)), t.database, io)).rejects.toBeInstanceOf(
        UsageError,
      );
      expect(await totalLedgerRows()).toBe(before);
    });

    it('left the wallet as it was', async () => {
      expect(await wallet(user.headers)).toEqual({ balance: 10, currency: 'USD' });
      expect((await ledger(user.headers)).entries).toHaveLength(1);
    });
  });

  // ORG_ID picks whose wallet receives money: only a plain decimal id may do that, never a spelling
  // that Number() happens to read as some other organization's id (0x1f is 31, 3e1 is 30).
  describe('refuses an ORG_ID that is not plain decimal digits', () => {
    let user: TestUser;
    beforeAll(async () => {
      user = await f.user();
    });

    const spellings: Array<[string, (id: number) => string]> = [
      ['hexadecimal', (id) => `0x${id.toString(16)}`],
      ['an exponent', (id) => `${id}e0`],
      ['a trailing .0', (id) => `${id}.0`],
      ['surrounding spaces', (id) => ` ${id} `],
    ];

    it.each(spellings)('%s', async (_label, spell) => {
      const before = await totalLedgerRows();
      const io = captureIo();
      await expect(
        runCommand(['billing', 'grant', spell(user.organizationId), '1'], t.database, io),
      ).rejects.toBeInstanceOf(UsageError);
      expect(await totalLedgerRows()).toBe(before);
      expect(await wallet(user.headers)).toEqual({ balance: 10, currency: 'USD' });
    });
  });

  it('refuses an amount the wallet cannot hold with a message, not a database error', async () => {
    const user = await f.user();
    const before = await totalLedgerRows();
    const io = captureIo();
    // numeric(14,4) holds at most 9,999,999,999.9999.
    const outcome = await runCommand(
      ['billing', 'grant', String(user.organizationId), '99999999999'],
      t.database,
      io,
    ).then(
      (code) => code,
      (error: unknown) => error,
    );
    expect(
      outcome instanceof UsageError || (outcome === 1 && io.stderr.length > 0),
      `expected a UsageError or exit 1 with a message, got ${String(outcome).slice(0, 300)}`,
    ).toBe(true);
    expect(`${io.stdout}${io.stderr}`).not.toMatch(/insert into|select |Failed query/i);
    expect(await totalLedgerRows()).toBe(before);
    expect(await wallet(user.headers)).toEqual({ balance: 10, currency: 'USD' });
  });
});

describe('concurrency: the balance equals the sum of the ledger', () => {
  it('100 concurrent charges against one wallet lose no update', async () => {
    const user = await f.user();
    const organizationId = user.organizationId;
    const rows = await Promise.all(
      Array.from({ length: 100 }, () =>
        t.platform.services.billing.apply({
          organizationId,
          amount: -0.0123,
          kind: 'call',
          description: 'test',
        }),
      ),
    );
    expect(rows).toHaveLength(100);
    expect(new Set(rows.map((r) => money(Number(r.balanceAfter)))).size).toBe(100);

    const expected = money(10 - 100 * 0.0123);
    expect(expected).toBe(8.77);
    const { balance } = await wallet(user.headers);
    expect(money(balance)).toBe(expected);
    expect(money((await storedBalance(organizationId)) ?? Number.NaN)).toBe(expected);

    const { entries, pagination } = await ledger(user.headers);
    expect(pagination.total_items).toBe(101);
    expect(entries).toHaveLength(101);
    expect(entries.filter((e) => e.kind === 'call').map((e) => e.amount)).toEqual(Array(100).fill(-0.0123));
    expect(money(sum(entries.map((e) => e.amount)))).toBe(money(balance));
    // Every charge saw a different balance: none read a stale one.
    const after = entries.map((e) => money(e.balance_after));
    expect(new Set(after).size).toBe(101);
    expect(new Set(after)).toEqual(new Set([...rows.map((r) => money(Number(r.balanceAfter))), 10]));
    expect(Math.min(...after)).toBe(expected);
    expectConsistent(entries, balance);

    // The database agrees with the API.
    const stored = await storedLedger(organizationId);
    expect(stored).toHaveLength(101);
    expect(money(sum(stored.map((r) => Number(r.amount))))).toBe(expected);
  });

  it('concurrent credits and charges (service and CLI) land exactly', async () => {
    const user = await f.user();
    const organizationId = user.organizationId;
    const billing = t.platform.services.billing;
    const io = captureIo();
    const work: Array<Promise<unknown>> = [];
    for (let i = 0; i < 100; i += 1) {
      work.push(
        i % 5 === 0
          ? billing.apply({ organizationId, amount: 0.25, kind: 'adjustment', description: `credit ${i}` })
          : billing.apply({ organizationId, amount: -0.0123, kind: 'call', description: `charge ${i}` }),
      );
      if (i % 20 === 0)
        work.push(runCommand(['billing', 'grant', String(organizationId), '1.5'], t.database, io));
    }
    const results = await Promise.all(work);
    // Five CLI grants answered 0; 20 credits, 80 charges.
    expect(results.filter((r) => r === 0)).toHaveLength(5);

    const expected = money(10 + 20 * 0.25 - 80 * 0.0123 + 5 * 1.5);
    expect(expected).toBe(21.516);
    const { balance } = await wallet(user.headers);
    expect(money(balance)).toBe(expected);

    const { entries } = await ledger(user.headers);
    expect(entries).toHaveLength(1 + 100 + 5);
    const count = (kind: string) => entries.filter((e) => e.kind === kind).length;
    expect([count('trial_credit'), count('adjustment'), count('call'), count('grant')]).toEqual([
      1, 20, 80, 5,
    ]);
    expectConsistent(entries, balance);
  });

  it('concurrent charges on two wallets stay apart', async () => {
    const a = await f.user();
    const b = await f.user();
    const billing = t.platform.services.billing;
    await Promise.all(
      Array.from({ length: 60 }, (_, i) =>
        billing.apply({
          organizationId: i % 2 === 0 ? a.organizationId : b.organizationId,
          amount: i % 2 === 0 ? -0.1 : -0.0001,
          kind: 'call',
          description: 'split',
        }),
      ),
    );
    expect(money((await wallet(a.headers)).balance)).toBe(7);
    expect(money((await wallet(b.headers)).balance)).toBe(9.997);
    expectConsistent((await ledger(a.headers)).entries, 7);
    expectConsistent((await ledger(b.headers)).entries, 9.997);
  });
});

describe('security', () => {
  let owner: TestUser;
  let other: TestUser;
  beforeAll(async () => {
    owner = await f.user();
    other = await f.user();
    await t.platform.services.billing.apply({
      organizationId: other.organizationId,
      amount: -4.4444,
      kind: 'call',
      description: "the other organization's call",
      reference: 'call:secret-other',
    });
  });

  it('both routes answer 401 without credentials or with bad ones', async () => {
    for (const url of [WALLET, LEDGER]) {
      for (const headers of [
        {},
        { authorization: 'Bearer not-a-token' },
        { authorization: 'Bearer sk_nope' },
      ]) {
        const response = await t.app.inject({ method: 'GET', url, headers });
        expect(response.statusCode, url).toBe(401);
        expect(typeof response.json().detail).toBe('string');
        expect(response.body).not.toMatch(/balance/);
      }
    }
  });

  it('an API key without the organization area answers 403', async () => {
    const apiKey = await f.apiKey(owner, {
      permissions: { assistants: 'read_write', calls: 'read_write', sms: 'read_write' },
    });
    for (const url of [WALLET, LEDGER]) {
      const response = await t.app.inject({ method: 'GET', url, headers: apiKey.headers });
      expect(response.statusCode, url).toBe(403);
      expect(response.json().detail).toMatch(/organization/);
      expect(response.body).not.toMatch(/balance/);
    }
  });

  it('an API key with organization read sees its own wallet and ledger', async () => {
    const apiKey = await f.apiKey(owner, { permissions: { organization: 'read' } });
    expect(await wallet(apiKey.headers)).toEqual({ balance: 10, currency: 'USD' });
    const { entries } = await ledger(apiKey.headers);
    expect(entries.map((e) => e.kind)).toEqual(['trial_credit']);
  });

  it("one organization never sees another's wallet or ledger", async () => {
    expect(await wallet(owner.headers)).toEqual({ balance: 10, currency: 'USD' });
    expect(await wallet(other.headers)).toEqual({ balance: 5.5556, currency: 'USD' });

    const mine = await ledger(owner.headers);
    expect(mine.pagination.total_items).toBe(1);
    const theirs = await ledger(other.headers);
    expect(theirs.pagination.total_items).toBe(2);
    const theirIds = theirs.entries.map((e) => e.id);
    expect(mine.entries.map((e) => e.id).filter((id) => theirIds.includes(id))).toEqual([]);
    const response = await ledgerResponse(owner.headers, '?per_page=1000');
    expect(response.body).not.toContain('secret-other');
    expect(response.body).not.toContain('4.4444');

    // A grant to one organization shows only there.
    const io = captureIo();
    expect(await runCommand(['billing', 'grant', String(other.organizationId), '7'], t.database, io)).toBe(0);
    expect((await wallet(owner.headers)).balance).toBe(10);
    expect((await wallet(other.headers)).balance).toBe(12.5556);
    expect((await ledger(owner.headers)).pagination.total_items).toBe(1);
  });

  it('query parameters cannot point at another organization', async () => {
    for (const url of [
      `${WALLET}?organization_id=${other.organizationId}`,
      `${LEDGER}?organization_id=${other.organizationId}&per_page=1000`,
    ]) {
      const response = await t.app.inject({ method: 'GET', url, headers: owner.headers });
      expect(response.body).not.toContain('secret-other');
      if (response.statusCode === 200) expect(response.body).not.toMatch(/5\.5556|12\.5556/);
      else expect(response.statusCode).toBe(422);
    }
  });
});
