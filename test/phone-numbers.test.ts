/**
 * Phone numbers: POST/GET /api/v1/phone-numbers and GET/PUT/DELETE /api/v1/phone-numbers/{id}.
 * The response shape, E.164 normalisation, providers, is_toll_free and the SMS rate defaults, one
 * test per validation rule, platform-wide uniqueness (also across formats and under concurrency),
 * routing to an assistant or a graph (own organization only), listing with its filters, who
 * may (not) touch which number, and the assistant that cannot be deleted while a number routes to
 * it. The tests share one platform; each creates the users (and numbers) it needs.
 */
import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { phoneNumbers } from '../src/db/schema/index.js';
import { expectError, expectValidation } from './support/assertions.js';
import { Factories, type TestUser } from './support/factories.js';
import { startTestPlatform, type TestPlatform } from './support/harness.js';

const BASE = '/api/v1/phone-numbers';
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;
const RESPONSE_FIELDS = [
  'id',
  'organization_id',
  'phone_number',
  'provider',
  'friendly_name',
  'assistant_id',
  'assistant_name',
  'graph_id',
  'is_toll_free',
  'sms_rate_per_second',
  'created_at',
  'updated_at',
].sort();
const PROVIDERS = ['carrier_a', 'carrier_b', 'carrier_c', 'sip_trunk'];

let t: TestPlatform;
let f: Factories;
beforeAll(async () => {
  t = await startTestPlatform();
  f = new Factories(t);
});
afterAll(() => t.close());

type Headers = Record<string, string>;
type Json = Record<string, unknown>;
type PhoneNumber = Json & {
  id: number;
  phone_number: string;
  assistant_id: number | null;
  sms_rate_per_second: number;
  updated_at: string;
};

function create(headers: Headers, payload: unknown) {
  return t.app.inject({ method: 'POST', url: BASE, headers, payload: payload as object });
}
function list(headers: Headers, query = '') {
  return t.app.inject({ method: 'GET', url: `${BASE}${query}`, headers });
}
function get(headers: Headers, id: number | string) {
  return t.app.inject({ method: 'GET', url: `${BASE}/${id}`, headers });
}
function update(headers: Headers, id: number | string, payload: unknown) {
  return t.app.inject({ method: 'PUT', url: `${BASE}/${id}`, headers, payload: payload as object });
}
function remove(headers: Headers, id: number | string) {
  return t.app.inject({ method: 'DELETE', url: `${BASE}/${id}`, headers });
}

/** Numbers are unique on the whole platform, so every test takes fresh ones (never 555-2671). */
let serial = 0;
function longCode(): string {
  serial += 1;
  return `+1415555${String(3000 + serial).padStart(4, '0')}`;
}
function tollFree(): string {
  serial += 1;
  return `+1888555${String(3000 + serial).padStart(4, '0')}`;
}
/** `+14155553001` written as `+1 (415) 555-3001`. */
function formatted(e164: string): string {
  return `+1 (${e164.slice(2, 5)}) ${e164.slice(5, 8)}-${e164.slice(8)}`;
}

async function createNumber(user: TestUser, payload: Json = {}): Promise<PhoneNumber> {
  const response = await create(user.headers, {
    phone_number: longCode(),
    provider: 'carrier_a',
    ...payload,
  });
  expect(response.statusCode, response.body).toBe(201);
  return response.json();
}

let assistantSerial = 0;
async function createAssistant(user: TestUser): Promise<{ id: number; name: string }> {
  assistantSerial += 1;
  const response = await t.app.inject({
    method: 'POST',
    url: '/api/v1/assistants',
    headers: user.headers,
    payload: { name: `Router ${assistantSerial}` },
  });
  expect(response.statusCode, response.body).toBe(201);
  return response.json();
}

/** A graph of one entry node (its own assistant). */
async function createGraph(user: TestUser): Promise<{ id: number }> {
  const assistant = await createAssistant(user);
  const response = await t.app.inject({
    method: 'POST',
    url: '/api/v1/assistant-graphs',
    headers: user.headers,
    payload: { name: `Flow ${assistant.id}`, nodes: [{ assistant_id: assistant.id, node_type: 'entry' }] },
  });
  expect(response.statusCode, response.body).toBe(201);
  return response.json();
}

async function storedRow(id: number) {
  const [row] = await t.database.db.select().from(phoneNumbers).where(eq(phoneNumbers.id, id));
  return row;
}

describe('POST /api/v1/phone-numbers', () => {
  it('answers 201 with exactly the documented fields; GET returns the same', async () => {
    const user = await f.user();
    const number = longCode();
    const response = await create(user.headers, {
      phone_number: number,
      provider: 'carrier_b',
      friendly_name: 'Front desk',
    });
    expect(response.statusCode, response.body).toBe(201);
    const body = response.json() as PhoneNumber;
    expect(Object.keys(body).sort()).toEqual(RESPONSE_FIELDS);
    expect(body).toMatchObject({
      organization_id: user.organizationId,
      phone_number: number,
      provider: 'carrier_b',
      friendly_name: 'Front desk',
      assistant_id: null,
      assistant_name: null,
      graph_id: null,
      is_toll_free: false,
      sms_rate_per_second: 1,
    });
    expect(Number.isInteger(body.id) && body.id > 0).toBe(true);
    expect(body.created_at).toMatch(ISO);
    expect(body.updated_at).toMatch(ISO);
    const fetched = await get(user.headers, body.id);
    expect(fetched.statusCode, fetched.body).toBe(200);
    expect(fetched.json()).toEqual(body);
  });

  it("normalises '+1 (415) 555-2671' to '+14155552671'; the number in another format is then taken (409)", async () => {
    const user = await f.user();
    const response = await create(user.headers, { phone_number: '+1 (415) 555-2671', provider: 'carrier_a' });
    expect(response.statusCode, response.body).toBe(201);
    expect(response.json().phone_number).toBe('+14155552671');
    expect((await storedRow(response.json().id))?.phoneNumber).toBe('+14155552671');
    const other = await f.user();
    for (const variant of ['+1 415-555-2671', '+14155552671', '+1.415.555.2671', ' +1 (415) 555 2671 ']) {
      expectError(
        await create(other.headers, { phone_number: variant, provider: 'carrier_a' }),
        409,
        /\+14155552671/,
      );
      expectError(await create(user.headers, { phone_number: variant, provider: 'carrier_b' }), 409);
    }
    expect((await list(other.headers)).headers['x-total-count']).toBe('0');
    expect((await list(user.headers)).headers['x-total-count']).toBe('1');
  });

  it('accepts each provider: carrier_a, carrier_b, carrier_c, sip_trunk', async () => {
    const user = await f.user();
    for (const provider of PROVIDERS) {
      const response = await create(user.headers, { phone_number: longCode(), provider });
      expect(response.statusCode, response.body).toBe(201);
      expect(response.json().provider).toBe(provider);
    }
    expect((await list(user.headers)).headers['x-total-count']).toBe(String(PROVIDERS.length));
  });

  it('refuses any other provider, and a missing one (422 at provider)', async () => {
    const user = await f.user();
    for (const provider of ['carrier_d', 'twilio', 'CARRIER_A', '', 1, null]) {
      expectValidation(await create(user.headers, { phone_number: longCode(), provider }), [
        'body',
        'provider',
      ]);
    }
    expectValidation(
      await create(user.headers, { phone_number: longCode() }),
      ['body', 'provider'],
      'missing',
    );
    expect((await list(user.headers)).headers['x-total-count']).toBe('0');
  });

  it('refuses a number that is not valid E.164 (422 at phone_number)', async () => {
    const user = await f.user();
    for (const phone_number of [
      '12345',
      '+1415',
      'abc',
      '14155552671',
      '+19999999999',
      '+1 415 555 CALL',
      '+',
      '',
      '+14155552671 ext 5',
      '+1415555267100000000000000000000000',
      // Right length for China, but no such number range (needs the full metadata to tell).
      '+8610012345678',
    ]) {
      expectValidation(await create(user.headers, { phone_number, provider: 'carrier_a' }), [
        'body',
        'phone_number',
      ]);
    }
    expectValidation(await create(user.headers, { phone_number: 14155553999, provider: 'carrier_a' }), [
      'body',
      'phone_number',
    ]);
    expectValidation(
      await create(user.headers, { provider: 'carrier_a' }),
      ['body', 'phone_number'],
      'missing',
    );
    expect((await list(user.headers)).headers['x-total-count']).toBe('0');
  });

  it('accepts a valid number outside North America', async () => {
    const user = await f.user();
    const response = await create(user.headers, { phone_number: '+44 20 7183 8750', provider: 'carrier_c' });
    expect(response.statusCode, response.body).toBe(201);
    expect(response.json()).toMatchObject({ phone_number: '+442071838750', is_toll_free: false });
  });

  it('refuses an unknown field (422) and a body that is not an object', async () => {
    const user = await f.user();
    expectValidation(
      await create(user.headers, { phone_number: longCode(), provider: 'carrier_a', sid: 'PN123' }),
      ['body', 'sid'],
      'extra_forbidden',
    );
    expect((await create(user.headers, ['+14155553999'])).statusCode).toBe(422);
    expect((await list(user.headers)).headers['x-total-count']).toBe('0');
  });

  it('trims friendly_name, stores a blank one as null, and refuses one over 200 characters', async () => {
    const user = await f.user();
    expect((await createNumber(user, { friendly_name: '  Sales  ' })).friendly_name).toBe('Sales');
    expect((await createNumber(user, { friendly_name: '   ' })).friendly_name).toBeNull();
    expect((await createNumber(user, { friendly_name: 'x'.repeat(200) })).friendly_name).toHaveLength(200);
    expectValidation(
      await create(user.headers, {
        phone_number: longCode(),
        provider: 'carrier_a',
        friendly_name: 'x'.repeat(201),
      }),
      ['body', 'friendly_name'],
    );
  });
});

describe('is_toll_free and sms_rate_per_second', () => {
  it('+18005550199 is toll-free (default rate 3), +14155553xxx is not (default rate 1)', async () => {
    const user = await f.user();
    const free = await createNumber(user, { phone_number: '+18005550199' });
    expect(free).toMatchObject({ phone_number: '+18005550199', is_toll_free: true, sms_rate_per_second: 3 });
    const other = await createNumber(user, { phone_number: tollFree() });
    expect(other).toMatchObject({ is_toll_free: true, sms_rate_per_second: 3 });
    const local = await createNumber(user);
    expect(local).toMatchObject({ is_toll_free: false, sms_rate_per_second: 1 });
    // The default is not written into the row: null stands for "the default of the number's kind".
    expect((await storedRow(free.id))?.smsRatePerSecond).toBeNull();
    expect((await storedRow(local.id))?.smsRatePerSecond).toBeNull();
  });

  it('recognises toll-free numbers outside North America (+33 805…, +49 800…)', async () => {
    const user = await f.user();
    for (const phone_number of ['+33805123456', '+498001234567']) {
      const response = await create(user.headers, { phone_number, provider: 'carrier_c' });
      expect(response.statusCode, response.body).toBe(201);
      expect(response.json()).toMatchObject({ phone_number, is_toll_free: true, sms_rate_per_second: 3 });
      expect((await remove(user.headers, response.json().id)).statusCode).toBe(204);
    }
  });

  it('keeps an explicit rate, also fractional and 1000; PUT null returns to the default', async () => {
    const user = await f.user();
    const explicit = await createNumber(user, { phone_number: tollFree(), sms_rate_per_second: 10 });
    expect(explicit.sms_rate_per_second).toBe(10);
    expect((await get(user.headers, explicit.id)).json().sms_rate_per_second).toBe(10);
    expect((await createNumber(user, { sms_rate_per_second: 0.5 })).sms_rate_per_second).toBe(0.5);
    expect((await createNumber(user, { sms_rate_per_second: 1000 })).sms_rate_per_second).toBe(1000);
    expect((await createNumber(user, { sms_rate_per_second: null })).sms_rate_per_second).toBe(1);

    const changed = await update(user.headers, explicit.id, { sms_rate_per_second: 7.5 });
    expect(changed.statusCode, changed.body).toBe(200);
    expect(changed.json().sms_rate_per_second).toBe(7.5);
    const reset = await update(user.headers, explicit.id, { sms_rate_per_second: null });
    expect(reset.statusCode, reset.body).toBe(200);
    expect(reset.json().sms_rate_per_second).toBe(3);
    expect((await storedRow(explicit.id))?.smsRatePerSecond).toBeNull();
  });

  it('the default follows the number when a PUT changes it between long code and toll-free', async () => {
    const user = await f.user();
    const created = await createNumber(user);
    expect(created.sms_rate_per_second).toBe(1);
    const moved = await update(user.headers, created.id, { phone_number: tollFree() });
    expect(moved.statusCode, moved.body).toBe(200);
    expect(moved.json()).toMatchObject({ is_toll_free: true, sms_rate_per_second: 3 });
  });

  it('refuses 0, a negative rate, more than 1000 and a string (422 at sms_rate_per_second), on POST and PUT', async () => {
    const user = await f.user();
    const created = await createNumber(user, { sms_rate_per_second: 2 });
    for (const rate of [0, -1, -0.5, 1000.5, 1001, '5']) {
      expectValidation(
        await create(user.headers, {
          phone_number: longCode(),
          provider: 'carrier_a',
          sms_rate_per_second: rate,
        }),
        ['body', 'sms_rate_per_second'],
      );
      expectValidation(await update(user.headers, created.id, { sms_rate_per_second: rate }), [
        'body',
        'sms_rate_per_second',
      ]);
    }
    expect((await list(user.headers)).headers['x-total-count']).toBe('1');
    expect((await get(user.headers, created.id)).json().sms_rate_per_second).toBe(2);
  });
});

describe('a number belongs to one organization on the whole platform', () => {
  it('answers 409 when another organization registers the same number; the first keeps it', async () => {
    const owner = await f.user();
    const other = await f.user();
    const number = longCode();
    const first = await createNumber(owner, { phone_number: number });
    expectError(
      await create(other.headers, { phone_number: number, provider: 'carrier_b' }),
      409,
      /already registered/,
    );
    expectError(
      await create(other.headers, { phone_number: formatted(number), provider: 'sip_trunk' }),
      409,
      /already registered/,
    );
    expect((await list(other.headers)).json()).toEqual([]);
    expect((await get(owner.headers, first.id)).json()).toEqual(first);
  });

  it('answers 409 within the organization too', async () => {
    const user = await f.user();
    const number = tollFree();
    await createNumber(user, { phone_number: number });
    expectError(await create(user.headers, { phone_number: formatted(number), provider: 'carrier_c' }), 409);
    expect((await list(user.headers)).headers['x-total-count']).toBe('1');
  });

  it('answers 409 when a PUT changes a number to one already registered (in any format), and changes nothing', async () => {
    const owner = await f.user();
    const other = await f.user();
    const theirs = await createNumber(owner);
    const mine = await createNumber(other, { friendly_name: 'mine' });
    const sibling = await createNumber(other);
    expectError(
      await update(other.headers, mine.id, { phone_number: theirs.phone_number }),
      409,
      /already registered/,
    );
    expectError(
      await update(other.headers, mine.id, {
        phone_number: formatted(theirs.phone_number),
        friendly_name: 'x',
      }),
      409,
    );
    expectError(await update(other.headers, mine.id, { phone_number: sibling.phone_number }), 409);
    expect((await get(other.headers, mine.id)).json()).toEqual(mine);
    expect((await get(owner.headers, theirs.id)).json()).toEqual(theirs);
  });

  it('a PUT with its own number (in another format) keeps it; a deleted number is free again', async () => {
    const user = await f.user();
    const created = await createNumber(user);
    const same = await update(user.headers, created.id, { phone_number: formatted(created.phone_number) });
    expect(same.statusCode, same.body).toBe(200);
    expect(same.json().phone_number).toBe(created.phone_number);
    expect((await remove(user.headers, created.id)).statusCode).toBe(204);
    const other = await f.user();
    const again = await create(other.headers, { phone_number: created.phone_number, provider: 'carrier_a' });
    expect(again.statusCode, again.body).toBe(201);
    expect(again.json().organization_id).toBe(other.organizationId);
  });

  it('lets exactly one of two organizations registering one number at the same time through (201 and 409)', async () => {
    const [a, b] = await Promise.all([f.user(), f.user()]);
    const number = longCode();
    const responses = await Promise.all([
      create(a.headers, { phone_number: number, provider: 'carrier_a' }),
      create(b.headers, { phone_number: formatted(number), provider: 'carrier_b' }),
    ]);
    const statuses = responses.map((r) => r.statusCode).sort();
    expect(statuses, responses.map((r) => r.body).join('\n')).toEqual([201, 409]);
    const loser = responses.find((r) => r.statusCode === 409);
    expectError(loser as (typeof responses)[number], 409, /already registered/);
    const winner = responses.find((r) => r.statusCode === 201)?.json() as PhoneNumber;
    const rows = await t.database.db.select().from(phoneNumbers).where(eq(phoneNumbers.phoneNumber, number));
    expect(rows).toHaveLength(1);
    expect(rows[0]?.id).toBe(winner.id);
    expect(rows[0]?.organizationId).toBe(winner.organization_id);
  });

  it('lets exactly one of several parallel creates in one organization through', async () => {
    const user = await f.user();
    const number = longCode();
    const responses = await Promise.all(
      PROVIDERS.map((provider) => create(user.headers, { phone_number: number, provider })),
    );
    expect(responses.filter((r) => r.statusCode === 201)).toHaveLength(1);
    expect(responses.filter((r) => r.statusCode === 409)).toHaveLength(PROVIDERS.length - 1);
    expect((await list(user.headers)).headers['x-total-count']).toBe('1');
  });
});

describe('routing: assistant_id and graph_id', () => {
  it('routes to an own assistant and shows its name, on POST, GET, list and PUT', async () => {
    const user = await f.user();
    const assistant = await createAssistant(user);
    const routed = await createNumber(user, { assistant_id: assistant.id });
    expect(routed).toMatchObject({
      assistant_id: assistant.id,
      assistant_name: assistant.name,
      graph_id: null,
    });
    expect((await get(user.headers, routed.id)).json()).toMatchObject({ assistant_name: assistant.name });
    expect((await list(user.headers)).json()[0]).toMatchObject({ assistant_name: assistant.name });

    const second = await createAssistant(user);
    const moved = await update(user.headers, routed.id, { assistant_id: second.id });
    expect(moved.statusCode, moved.body).toBe(200);
    expect(moved.json()).toMatchObject({ assistant_id: second.id, assistant_name: second.name });
  });

  it('shows the new name of a renamed assistant', async () => {
    const user = await f.user();
    const assistant = await createAssistant(user);
    const routed = await createNumber(user, { assistant_id: assistant.id });
    const renamed = await t.app.inject({
      method: 'PUT',
      url: `/api/v1/assistants/${assistant.id}`,
      headers: user.headers,
      payload: { name: `${assistant.name} renamed` },
    });
    expect(renamed.statusCode, renamed.body).toBe(200);
    expect((await get(user.headers, routed.id)).json().assistant_name).toBe(`${assistant.name} renamed`);
  });

  it('allows assistant_id null; PUT {assistant_id: null} unassigns', async () => {
    const user = await f.user();
    const assistant = await createAssistant(user);
    const unrouted = await createNumber(user, { assistant_id: null, graph_id: null });
    expect(unrouted).toMatchObject({ assistant_id: null, assistant_name: null, graph_id: null });
    const routed = await createNumber(user, { assistant_id: assistant.id, friendly_name: 'kept' });
    const unassigned = await update(user.headers, routed.id, { assistant_id: null });
    expect(unassigned.statusCode, unassigned.body).toBe(200);
    expect(unassigned.json()).toMatchObject({
      assistant_id: null,
      assistant_name: null,
      friendly_name: 'kept',
    });
    expect((await storedRow(routed.id))?.assistantId).toBeNull();
  });

  it("refuses another organization's assistant (422 at assistant_id), on POST and PUT", async () => {
    const user = await f.user();
    const stranger = await f.user();
    const theirs = await createAssistant(stranger);
    expectValidation(
      await create(user.headers, {
        phone_number: longCode(),
        provider: 'carrier_a',
        assistant_id: theirs.id,
      }),
      ['body', 'assistant_id'],
    );
    const mine = await createNumber(user);
    expectValidation(await update(user.headers, mine.id, { assistant_id: theirs.id }), [
      'body',
      'assistant_id',
    ]);
    expect((await get(user.headers, mine.id)).json()).toEqual(mine);
    expect((await list(user.headers)).headers['x-total-count']).toBe('1');
  });

  it('refuses an assistant that does not exist, or was deleted, and ids out of range (422)', async () => {
    const user = await f.user();
    const gone = await createAssistant(user);
    expect(
      (await t.app.inject({ method: 'DELETE', url: `/api/v1/assistants/${gone.id}`, headers: user.headers }))
        .statusCode,
    ).toBe(204);
    for (const assistant_id of [gone.id, 2_147_483_647, 0, -1, 2_147_483_648, 'abc', 1.5]) {
      expectValidation(
        await create(user.headers, { phone_number: longCode(), provider: 'carrier_a', assistant_id }),
        ['body', 'assistant_id'],
      );
    }
    expect((await list(user.headers)).headers['x-total-count']).toBe('0');
  });

  it('routes to an own graph on POST and PUT; PUT {graph_id: null} unroutes', async () => {
    const user = await f.user();
    const graph = await createGraph(user);
    const routed = await createNumber(user, { graph_id: graph.id });
    expect(routed).toMatchObject({ graph_id: graph.id, assistant_id: null, assistant_name: null });
    expect((await get(user.headers, routed.id)).json()).toEqual(routed);
    const second = await createGraph(user);
    const plain = await createNumber(user);
    const moved = await update(user.headers, plain.id, { graph_id: second.id });
    expect(moved.statusCode, moved.body).toBe(200);
    expect(moved.json()).toMatchObject({ graph_id: second.id, assistant_id: null });
    expect((await storedRow(plain.id))?.graphId).toBe(second.id);
    const cleared = await update(user.headers, plain.id, { graph_id: null });
    expect(cleared.statusCode, cleared.body).toBe(200);
    expect(cleared.json().graph_id).toBeNull();
  });

  it('routing to a graph ends routing to an assistant, and the other way round', async () => {
    const user = await f.user();
    const assistant = await createAssistant(user);
    const graph = await createGraph(user);
    const routed = await createNumber(user, { assistant_id: assistant.id });
    const toGraph = await update(user.headers, routed.id, { graph_id: graph.id });
    expect(toGraph.statusCode, toGraph.body).toBe(200);
    expect(toGraph.json()).toMatchObject({ graph_id: graph.id, assistant_id: null, assistant_name: null });
    const back = await update(user.headers, routed.id, { assistant_id: assistant.id });
    expect(back.json()).toMatchObject({ graph_id: null, assistant_id: assistant.id });
  });

  it("refuses another organization's graph, an unknown or deleted graph and ids out of range (422 at graph_id)", async () => {
    const user = await f.user();
    const stranger = await f.user();
    const theirs = await createGraph(stranger);
    const gone = await createGraph(user);
    expect(
      (
        await t.app.inject({
          method: 'DELETE',
          url: `/api/v1/assistant-graphs/${gone.id}`,
          headers: user.headers,
        })
      ).statusCode,
    ).toBe(204);
    for (const graph_id of [theirs.id, gone.id, 2_147_483_647]) {
      const response = await create(user.headers, {
        phone_number: longCode(),
        provider: 'carrier_a',
        graph_id,
      });
      expectValidation(response, ['body', 'graph_id']);
      expect(response.json().detail[0].msg).toBe('No graph with this id in your organization');
    }
    for (const graph_id of [0, -1, 'abc']) {
      expectValidation(
        await create(user.headers, { phone_number: longCode(), provider: 'carrier_a', graph_id }),
        ['body', 'graph_id'],
      );
    }
    const created = await createNumber(user);
    expectValidation(await update(user.headers, created.id, { graph_id: theirs.id }), ['body', 'graph_id']);
    expectValidation(await update(user.headers, created.id, { graph_id: 0 }), ['body', 'graph_id']);
    expect((await get(user.headers, created.id)).json()).toEqual(created);
    expect((await list(user.headers)).headers['x-total-count']).toBe('1');
  });

  it('a graph a number routes to cannot be deleted (409 naming the number)', async () => {
    const user = await f.user();
    const graph = await createGraph(user);
    const routed = await createNumber(user, { graph_id: graph.id });
    const refused = await t.app.inject({
      method: 'DELETE',
      url: `/api/v1/assistant-graphs/${graph.id}`,
      headers: user.headers,
    });
    expectError(refused, 409, new RegExp(`phone number \\${routed.phone_number} \\(id ${routed.id}\\)`));
    expect((await remove(user.headers, routed.id)).statusCode).toBe(204);
    const deleted = await t.app.inject({
      method: 'DELETE',
      url: `/api/v1/assistant-graphs/${graph.id}`,
      headers: user.headers,
    });
    expect(deleted.statusCode, deleted.body).toBe(204);
  });

  it('refuses assistant_id and graph_id both set (422), and keeps the routing', async () => {
    const user = await f.user();
    const assistant = await createAssistant(user);
    expectValidation(
      await create(user.headers, {
        phone_number: longCode(),
        provider: 'carrier_a',
        assistant_id: assistant.id,
        graph_id: 1,
      }),
      ['body', 'graph_id'],
    );
    const routed = await createNumber(user, { assistant_id: assistant.id });
    expectValidation(await update(user.headers, routed.id, { assistant_id: assistant.id, graph_id: 2 }), [
      'body',
      'graph_id',
    ]);
    expect((await get(user.headers, routed.id)).json()).toEqual(routed);
  });

  it('PUT {graph_id: null} alone keeps the assistant; {assistant_id, graph_id: null} routes to it', async () => {
    const user = await f.user();
    const assistant = await createAssistant(user);
    const routed = await createNumber(user, { assistant_id: assistant.id });
    const kept = await update(user.headers, routed.id, { graph_id: null });
    expect(kept.statusCode, kept.body).toBe(200);
    expect(kept.json()).toMatchObject({ assistant_id: assistant.id, graph_id: null });
    const plain = await createNumber(user);
    const both = await update(user.headers, plain.id, { assistant_id: assistant.id, graph_id: null });
    expect(both.statusCode, both.body).toBe(200);
    expect(both.json()).toMatchObject({
      assistant_id: assistant.id,
      assistant_name: assistant.name,
      graph_id: null,
    });
  });
});

describe('GET /api/v1/phone-numbers', () => {
  let user: TestUser;
  let assistant: { id: number; name: string };
  let numbers: PhoneNumber[];
  beforeAll(async () => {
    user = await f.user();
    assistant = await createAssistant(user);
    numbers = [];
    for (const [provider, routed] of [
      ['carrier_a', true],
      ['carrier_b', false],
      ['carrier_a', false],
      ['sip_trunk', true],
    ] as const) {
      numbers.push(await createNumber(user, { provider, assistant_id: routed ? assistant.id : null }));
    }
    // Another organization's numbers, routed and with the same providers, never show.
    const stranger = await f.user();
    const theirs = await createAssistant(stranger);
    await createNumber(stranger, { provider: 'carrier_a', assistant_id: theirs.id });
    await createNumber(stranger, { provider: 'sip_trunk' });
  });

  it("lists the organization's numbers in creation order, X-Total-Count, exactly the documented fields", async () => {
    const response = await list(user.headers);
    expect(response.statusCode, response.body).toBe(200);
    expect(response.json()).toEqual(numbers);
    expect(response.headers['x-total-count']).toBe('4');
    for (const item of response.json() as PhoneNumber[])
      expect(Object.keys(item).sort()).toEqual(RESPONSE_FIELDS);
  });

  it('pages with skip and limit; the total counts every match', async () => {
    const page = await list(user.headers, '?skip=1&limit=2');
    expect(page.statusCode, page.body).toBe(200);
    expect((page.json() as PhoneNumber[]).map((n) => n.id)).toEqual([numbers[1]?.id, numbers[2]?.id]);
    expect(page.headers['x-total-count']).toBe('4');
    const beyond = await list(user.headers, '?skip=10');
    expect(beyond.json()).toEqual([]);
    expect(beyond.headers['x-total-count']).toBe('4');
  });

  it('filters by assistant_id and by provider, alone and together', async () => {
    const routed = await list(user.headers, `?assistant_id=${assistant.id}`);
    expect(routed.statusCode, routed.body).toBe(200);
    expect((routed.json() as PhoneNumber[]).map((n) => n.id)).toEqual([numbers[0]?.id, numbers[3]?.id]);
    expect(routed.headers['x-total-count']).toBe('2');
    const carrierA = await list(user.headers, '?provider=carrier_a');
    expect((carrierA.json() as PhoneNumber[]).map((n) => n.id)).toEqual([numbers[0]?.id, numbers[2]?.id]);
    expect(carrierA.headers['x-total-count']).toBe('2');
    const both = await list(user.headers, `?provider=sip_trunk&assistant_id=${assistant.id}`);
    expect((both.json() as PhoneNumber[]).map((n) => n.id)).toEqual([numbers[3]?.id]);
    expect(both.headers['x-total-count']).toBe('1');
    const none = await list(user.headers, '?provider=carrier_c');
    expect(none.json()).toEqual([]);
    expect(none.headers['x-total-count']).toBe('0');
    const paged = await list(user.headers, '?provider=carrier_a&limit=1&skip=1');
    expect((paged.json() as PhoneNumber[]).map((n) => n.id)).toEqual([numbers[2]?.id]);
    expect(paged.headers['x-total-count']).toBe('2');
  });

  it("another organization's assistant id as filter lists nothing", async () => {
    const stranger = await f.user();
    const response = await list(stranger.headers, `?assistant_id=${assistant.id}`);
    expect(response.statusCode, response.body).toBe(200);
    expect(response.json()).toEqual([]);
    expect(response.headers['x-total-count']).toBe('0');
  });

  it('accepts limit 1 and 1000; refuses limit 0 and 1001, a negative skip, a bad provider or assistant_id', async () => {
    expect((await list(user.headers, '?limit=1')).json()).toHaveLength(1);
    expect((await list(user.headers, '?limit=1000')).statusCode).toBe(200);
    expectValidation(await list(user.headers, '?limit=0'), ['query', 'limit']);
    expectValidation(await list(user.headers, '?limit=1001'), ['query', 'limit']);
    expectValidation(await list(user.headers, '?skip=-1'), ['query', 'skip']);
    expectValidation(await list(user.headers, '?provider=carrier_z'), ['query', 'provider']);
    expectValidation(await list(user.headers, '?assistant_id=abc'), ['query', 'assistant_id']);
    expectValidation(await list(user.headers, '?assistant_id=0'), ['query', 'assistant_id']);
  });

  it('is an empty list with a total of 0 for an organization without numbers', async () => {
    const fresh = await f.user();
    const response = await list(fresh.headers);
    expect(response.statusCode).toBe(200);
    expect(response.json()).toEqual([]);
    expect(response.headers['x-total-count']).toBe('0');
  });
});

describe('GET, PUT and DELETE /api/v1/phone-numbers/{phone_number_id}', () => {
  it('PUT changes only the fields it names and moves updated_at', async () => {
    const user = await f.user();
    const created = await createNumber(user, { friendly_name: 'before', sms_rate_per_second: 4 });
    await new Promise((resolve) => setTimeout(resolve, 5));
    const renamed = await update(user.headers, created.id, { friendly_name: 'after' });
    expect(renamed.statusCode, renamed.body).toBe(200);
    expect(renamed.json()).toEqual({
      ...created,
      friendly_name: 'after',
      updated_at: renamed.json().updated_at,
    });
    expect(Date.parse(renamed.json().updated_at)).toBeGreaterThan(Date.parse(created.updated_at));
    const number = longCode();
    const changed = await update(user.headers, created.id, {
      phone_number: formatted(number),
      provider: 'sip_trunk',
    });
    expect(changed.statusCode, changed.body).toBe(200);
    expect(changed.json()).toMatchObject({
      phone_number: number,
      provider: 'sip_trunk',
      friendly_name: 'after',
      sms_rate_per_second: 4,
    });
    expect((await get(user.headers, created.id)).json()).toEqual(changed.json());
  });

  it('PUT validates like POST: empty body, unknown field, bad number, bad provider (422), nothing changed', async () => {
    const user = await f.user();
    const created = await createNumber(user);
    const empty = await update(user.headers, created.id, {});
    expect(empty.statusCode, empty.body).toBe(422);
    expect(empty.json().detail[0].loc).toEqual(['body']);
    expectValidation(
      await update(user.headers, created.id, { sid: 'x' }),
      ['body', 'sid'],
      'extra_forbidden',
    );
    expectValidation(await update(user.headers, created.id, { friendly_name: 'x', sid: 'x' }), [
      'body',
      'sid',
    ]);
    expectValidation(await update(user.headers, created.id, { phone_number: '12345' }), [
      'body',
      'phone_number',
    ]);
    expectValidation(await update(user.headers, created.id, { phone_number: null }), [
      'body',
      'phone_number',
    ]);
    expectValidation(await update(user.headers, created.id, { provider: 'carrier_x' }), ['body', 'provider']);
    expectValidation(await update(user.headers, created.id, { provider: null }), ['body', 'provider']);
    expect((await get(user.headers, created.id)).json()).toEqual(created);
  });

  it('DELETE answers 204 with no body; then GET, PUT and DELETE answer 404', async () => {
    const user = await f.user();
    const created = await createNumber(user);
    const kept = await createNumber(user);
    const response = await remove(user.headers, created.id);
    expect(response.statusCode, response.body).toBe(204);
    expect(response.body).toBe('');
    expectError(await get(user.headers, created.id), 404, /Phone number not found/);
    expectError(await update(user.headers, created.id, { friendly_name: 'x' }), 404);
    expectError(await remove(user.headers, created.id), 404);
    expect(await storedRow(created.id)).toBeUndefined();
    expect((await list(user.headers)).json()).toEqual([kept]);
  });

  it('answers 404 for an id that does not exist, 422 for 0, a negative id, 2147483648 and a non-number', async () => {
    const user = await f.user();
    for (const call of [
      () => get(user.headers, 2_147_483_647),
      () => update(user.headers, 2_147_483_647, { friendly_name: 'x' }),
      () => remove(user.headers, 2_147_483_647),
    ]) {
      expectError(await call(), 404);
    }
    for (const id of ['0', '-1', '2147483648', 'abc', '1.5', '99999999999999999999']) {
      expectValidation(await get(user.headers, id), ['path', 'phone_number_id']);
      expectValidation(await update(user.headers, id, { friendly_name: 'x' }), ['path', 'phone_number_id']);
      expectValidation(await remove(user.headers, id), ['path', 'phone_number_id']);
    }
  });
});

describe('security', () => {
  it('answers 401 without credentials on every route, and changes nothing', async () => {
    const user = await f.user();
    const created = await createNumber(user);
    const none = {};
    const number = longCode();
    const responses = [
      await create(none, { phone_number: number, provider: 'carrier_a' }),
      await list(none),
      await get(none, created.id),
      await update(none, created.id, { friendly_name: 'x' }),
      await remove(none, created.id),
    ];
    for (const response of responses) expectError(response, 401);
    expect((await get(user.headers, created.id)).json()).toEqual(created);
    const rows = await t.database.db.select().from(phoneNumbers).where(eq(phoneNumbers.phoneNumber, number));
    expect(rows).toEqual([]);
  });

  it('answers 401 for a bad token', async () => {
    expectError(await list({ authorization: 'Bearer not-a-real-token' }), 401);
  });

  it("never shows or touches another organization's number (404, never listed), which stays unchanged", async () => {
    const owner = await f.user();
    const stranger = await f.user();
    const assistant = await createAssistant(owner);
    const theirs = await createNumber(owner, { assistant_id: assistant.id, friendly_name: 'private' });
    expectError(await get(stranger.headers, theirs.id), 404);
    expectError(await update(stranger.headers, theirs.id, { friendly_name: 'hijacked' }), 404);
    expectError(await update(stranger.headers, theirs.id, { assistant_id: null }), 404);
    expectError(await update(stranger.headers, theirs.id, { phone_number: longCode() }), 404);
    expectError(await remove(stranger.headers, theirs.id), 404);
    const listed = await list(stranger.headers);
    expect(listed.json()).toEqual([]);
    expect(listed.headers['x-total-count']).toBe('0');
    const key = await f.apiKey(stranger, { permissions: { phone_numbers: 'read_write' } });
    expectError(await get(key.headers, theirs.id), 404);
    expectError(await update(key.headers, theirs.id, { provider: 'sip_trunk' }), 404);
    expectError(await remove(key.headers, theirs.id), 404);
    // Untouched for its owner, row included.
    expect((await get(owner.headers, theirs.id)).json()).toEqual(theirs);
    expect(await storedRow(theirs.id)).toMatchObject({
      organizationId: owner.organizationId,
      friendlyName: 'private',
      assistantId: assistant.id,
      provider: 'carrier_a',
      phoneNumber: theirs.phone_number,
    });
  });

  it('refuses an API key without the phone_numbers area (403) on every route', async () => {
    const user = await f.user();
    const created = await createNumber(user);
    const key = await f.apiKey(user, { permissions: { assistants: 'read_write', calls: 'read_write' } });
    const number = longCode();
    const responses = [
      await create(key.headers, { phone_number: number, provider: 'carrier_a' }),
      await list(key.headers),
      await get(key.headers, created.id),
      await update(key.headers, created.id, { friendly_name: 'x' }),
      await remove(key.headers, created.id),
    ];
    for (const response of responses) expectError(response, 403);
    expect((await list(user.headers)).json()).toEqual([created]);
  });

  it('lets a phone_numbers:read key read but not write (403)', async () => {
    const user = await f.user();
    const created = await createNumber(user);
    const key = await f.apiKey(user, { permissions: { phone_numbers: 'read' } });
    const listed = await list(key.headers);
    expect(listed.statusCode, listed.body).toBe(200);
    expect(listed.json()).toEqual([created]);
    const fetched = await get(key.headers, created.id);
    expect(fetched.statusCode, fetched.body).toBe(200);
    expect(fetched.json()).toEqual(created);
    expectError(await create(key.headers, { phone_number: longCode(), provider: 'carrier_a' }), 403);
    expectError(await update(key.headers, created.id, { friendly_name: 'x' }), 403);
    expectError(await remove(key.headers, created.id), 403);
    expect((await list(user.headers)).json()).toEqual([created]);
  });

  it('lets a phone_numbers:read_write key create, change and delete', async () => {
    const user = await f.user();
    const key = await f.apiKey(user, { permissions: { phone_numbers: 'read_write' } });
    const created = await create(key.headers, { phone_number: longCode(), provider: 'carrier_c' });
    expect(created.statusCode, created.body).toBe(201);
    expect(created.json().organization_id).toBe(user.organizationId);
    const id = created.json().id;
    const changed = await update(key.headers, id, { friendly_name: 'via key' });
    expect(changed.statusCode, changed.body).toBe(200);
    expect(changed.json().friendly_name).toBe('via key');
    expect((await remove(key.headers, id)).statusCode).toBe(204);
    expect((await list(user.headers)).json()).toEqual([]);
  });

  it('a member (role user) of the organization sees and manages its numbers', async () => {
    const admin = await f.user();
    const byAdmin = await createNumber(admin);
    const member = await f.member(admin.organizationId, 'user');
    expect(member.role).toBe('user');
    expect((await get(member.headers, byAdmin.id)).json()).toEqual(byAdmin);
    const own = await create(member.headers, { phone_number: longCode(), provider: 'carrier_b' });
    expect(own.statusCode, own.body).toBe(201);
    expect(own.json().organization_id).toBe(admin.organizationId);
    const changed = await update(member.headers, byAdmin.id, { friendly_name: 'by member' });
    expect(changed.statusCode, changed.body).toBe(200);
    expect((await remove(member.headers, own.json().id)).statusCode).toBe(204);
    expect((await list(admin.headers)).json()).toEqual([changed.json()]);
  });
});

describe('an assistant a number routes to cannot be deleted', () => {
  function deleteAssistant(user: TestUser, id: number) {
    return t.app.inject({ method: 'DELETE', url: `/api/v1/assistants/${id}`, headers: user.headers });
  }

  it('answers 409 naming the number and its id; after unassigning, DELETE answers 204', async () => {
    const user = await f.user();
    const assistant = await createAssistant(user);
    const routed = await createNumber(user, {
      phone_number: formatted(longCode()),
      assistant_id: assistant.id,
    });
    const refused = await deleteAssistant(user, assistant.id);
    expectError(refused, 409);
    expect(refused.json().detail).toContain(routed.phone_number);
    expect(refused.json().detail).toContain(`(id ${routed.id})`);
    const still = await t.app.inject({
      method: 'GET',
      url: `/api/v1/assistants/${assistant.id}`,
      headers: user.headers,
    });
    expect(still.statusCode, still.body).toBe(200);
    expect((await get(user.headers, routed.id)).json()).toEqual(routed);

    const unassigned = await update(user.headers, routed.id, { assistant_id: null });
    expect(unassigned.statusCode, unassigned.body).toBe(200);
    expect((await deleteAssistant(user, assistant.id)).statusCode).toBe(204);
    expect((await get(user.headers, routed.id)).json()).toMatchObject({
      assistant_id: null,
      assistant_name: null,
    });
  });

  it('names every number that routes to it, and deleting the numbers frees it too', async () => {
    const user = await f.user();
    const assistant = await createAssistant(user);
    const first = await createNumber(user, { assistant_id: assistant.id });
    const second = await createNumber(user, { phone_number: tollFree(), assistant_id: assistant.id });
    await createNumber(user);
    const refused = await deleteAssistant(user, assistant.id);
    expectError(refused, 409);
    for (const n of [first, second])
      expect(refused.json().detail).toContain(`${n.phone_number} (id ${n.id})`);
    expect((await remove(user.headers, first.id)).statusCode).toBe(204);
    const again = await deleteAssistant(user, assistant.id);
    expectError(again, 409);
    expect(again.json().detail).not.toContain(first.phone_number);
    expect(again.json().detail).toContain(`${second.phone_number} (id ${second.id})`);
    expect((await remove(user.headers, second.id)).statusCode).toBe(204);
    expect((await deleteAssistant(user, assistant.id)).statusCode).toBe(204);
  });

  it('routing a number and deleting its assistant at the same time never leaves a number on a deleted assistant', async () => {
    const user = await f.user();
    const assistant = await createAssistant(user);
    const plain = await createNumber(user);
    const [routed, deleted] = await Promise.all([
      update(user.headers, plain.id, { assistant_id: assistant.id }),
      deleteAssistant(user, assistant.id),
    ]);
    const outcome = [routed.statusCode, deleted.statusCode];
    // Either the routing came first (and the deletion is refused) or the deletion (and the routing is).
    expect([
      [200, 409],
      [422, 204],
    ]).toContainEqual(outcome);
    const row = await storedRow(plain.id);
    if (deleted.statusCode === 204) {
      expectValidation(routed, ['body', 'assistant_id']);
      expect(row?.assistantId).toBeNull();
    } else {
      expect(row?.assistantId).toBe(assistant.id);
    }
  });
});
