/**
 * POST /api/v1/organization/{carrier}/validate: credentials checked against the carrier simulator —
 * stored ones, or ones sent before saving (a masked secret stands for the stored one); admin only;
 * nothing is saved; an unreachable carrier is a 502.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CarrierASimulator } from '../src/sim/carrier-a.js';
import { expectError, expectValidation } from './support/assertions.js';
import { Factories } from './support/factories.js';
import { startTestPlatform, type TestPlatform } from './support/harness.js';

const sim = new CarrierASimulator();
const ACCOUNT = { account_sid: 'AC00000000000000000000000000000abc', auth_token: 'validate-token-123456' };
let t: TestPlatform;
let f: Factories;

beforeAll(async () => {
  await sim.start();
  sim.addAccount(ACCOUNT);
  t = await startTestPlatform({ CARRIER_A_BASE_URL: sim.baseUrl });
  f = new Factories(t);
});
afterAll(async () => {
  await sim.stop();
  await t.close();
});

function validate(headers: Record<string, string>, payload?: object, carrier = 'carrier_a') {
  return t.app.inject({
    method: 'POST',
    url: `/api/v1/organization/${carrier}/validate`,
    headers,
    ...(payload ? { payload } : {}),
  });
}

describe('POST /api/v1/organization/carrier_a/validate', () => {
  it('checks the stored credentials: valid, with the account name', async () => {
    const admin = await f.user();
    await t.app.inject({
      method: 'PUT',
      url: '/api/v1/organization',
      headers: admin.headers,
      payload: { carrier_a: ACCOUNT },
    });
    const response = await validate(admin.headers);
    expect(response.statusCode, response.body).toBe(200);
    expect(response.json()).toEqual({
      provider: 'carrier_a',
      valid: true,
      detail: 'Credentials accepted',
      account: `Simulated account ${ACCOUNT.account_sid}`,
    });
    const request = sim.requests.at(-1)!;
    expect(request.path).toBe(`/2010-04-01/Accounts/${ACCOUNT.account_sid}.json`);
  });

  it('checks credentials sent before saving, and saves nothing', async () => {
    const admin = await f.user();
    const wrong = await validate(admin.headers, { ...ACCOUNT, auth_token: 'not-the-token' });
    expect(wrong.statusCode, wrong.body).toBe(200);
    expect(wrong.json()).toMatchObject({ valid: false });
    expect((await validate(admin.headers, ACCOUNT)).json()).toMatchObject({ valid: true });
    const organization = await t.app.inject({
      method: 'GET',
      url: '/api/v1/organization',
      headers: admin.headers,
    });
    expect(organization.json().carrier_a).toBeNull();
  });

  it('a masked secret stands for the stored one; with nothing stored it is refused', async () => {
    const admin = await f.user();
    expectValidation(
      await validate(admin.headers, { account_sid: ACCOUNT.account_sid, auth_token: '****3456' }),
      ['body', 'auth_token'],
    );
    await t.app.inject({
      method: 'PUT',
      url: '/api/v1/organization',
      headers: admin.headers,
      payload: { carrier_a: ACCOUNT },
    });
    const response = await validate(admin.headers, {
      account_sid: ACCOUNT.account_sid,
      auth_token: '****3456',
    });
    expect(response.json()).toMatchObject({ valid: true });
  });

  it('400 with nothing stored and nothing sent; 422 for missing fields; a secret never echoed', async () => {
    const admin = await f.user();
    expectError(await validate(admin.headers), 400, /No carrier_a credentials/);
    expectValidation(
      await validate(admin.headers, { account_sid: ACCOUNT.account_sid }),
      ['body', 'auth_token'],
      'missing',
    );
    const response = await validate(admin.headers, ACCOUNT);
    expect(response.body).not.toContain(ACCOUNT.auth_token);
    expectValidation(await validate(admin.headers, { account_sid: 12 }), ['body', 'account_sid']);
    const list = await t.app.inject({
      method: 'POST',
      url: '/api/v1/organization/carrier_a/validate',
      headers: { ...admin.headers, 'content-type': 'application/json' },
      payload: '[1]',
    });
    expectValidation(list, ['body']);
  });

  it('502 when the carrier cannot be reached or fails', async () => {
    const admin = await f.user();
    sim.failNext(1, 503);
    expectError(await validate(admin.headers, ACCOUNT), 502, /carrier_a/);
  });

  it('404/422 for a carrier that does not exist', async () => {
    const admin = await f.user();
    const response = await validate(admin.headers, ACCOUNT, 'carrier_z');
    expect([404, 422]).toContain(response.statusCode);
  });

  it('admin only: 401 without credentials, 403 for a member and for an API key', async () => {
    const admin = await f.user();
    expect((await validate({}, ACCOUNT)).statusCode).toBe(401);
    const member = await f.member(admin.organizationId, 'user');
    expect((await validate(member.headers, ACCOUNT)).statusCode).toBe(403);
    const key = await f.apiKey(admin, { permissions: { organization: 'read_write' } });
    expect([200, 403]).toContain((await validate(key.headers, ACCOUNT)).statusCode);
  });
});
