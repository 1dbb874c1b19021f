/**
 * The TypeScript client (`clients/typescript`): its generated types match the API as it is now
 * (freshness), and a new user's whole path runs through it against a listening platform and the
 * carrier_a simulator — register, verify the email, sign in, create an API key, then with the key:
 * carrier credentials, an assistant, a number, a call placed, read back and listed. Every request
 * goes through the typed client; `expectTypeOf` lines are checked by `npm run typecheck`.
 */
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, expectTypeOf, it } from 'vitest';
import { type Assistant, type Call, createSwitchboardClient } from '../clients/typescript/src/index.js';
import { generateClientSchema, SCHEMA_FILE } from '../scripts/generate-client.js';
import { CarrierASimulator } from '../src/sim/carrier-a.js';
import { useTestPlatform, verificationToken } from './support/harness.js';

const sim = new CarrierASimulator();
let baseUrl: string;

beforeAll(() => sim.start());
const t = useTestPlatform(() => ({ CARRIER_A_BASE_URL: sim.baseUrl }), { listen: true });
beforeAll(() => {
  baseUrl = t.baseUrl!;
});
// Registered after the platform, so it runs before the platform closes (after-hooks run in reverse).
afterAll(() => sim.stop());

describe('the generated types', () => {
  it('are what the current route schemas generate', { timeout: 180_000 }, async () => {
    const committed = readFileSync(SCHEMA_FILE, 'utf8');
    const fresh = await generateClientSchema();
    // A plain comparison first: a 400 kB diff in the failure message would bury the instruction.
    if (fresh !== committed) {
      expect.fail(
        'clients/typescript/src/schema.d.ts is stale: run npm run client:generate and commit the result',
      );
    }
  });
});

describe('a new user, through the client', () => {
  it('registers, verifies, signs in, creates an API key, and with it places a call and reads it back', async () => {
    const anonymous = createSwitchboardClient({ baseUrl });
    const email = 'client.user@example.test';
    const password = 'a long client password';

    const registered = await anonymous.POST('/api/v1/auth/register', {
      body: { email, password, first_name: 'Client', last_name: 'User', organization_name: 'Client Co' },
    });
    expect(registered.response.status, JSON.stringify(registered.error)).toBe(201);
    expectTypeOf(registered.data!.user.is_verified).toEqualTypeOf<boolean>();
    expect(registered.data!.user).toMatchObject({ email, is_verified: false });
    expect(registered.data!.organization.name).toBe('Client Co');

    // The token comes from the verification mail; the verification itself goes through the client.
    const token = await verificationToken(t, email);
    const verified = await anonymous.POST('/api/v1/auth/verify-email', { body: { token } });
    expect(verified.response.status, JSON.stringify(verified.error)).toBe(200);
    expect(verified.data!.user.is_verified).toBe(true);

    const signedIn = await anonymous.POST('/api/v1/auth/login', { body: { email, password } });
    expect(signedIn.response.status, JSON.stringify(signedIn.error)).toBe(200);
    expectTypeOf(signedIn.data!.access_token).toEqualTypeOf<string>();
    const session = createSwitchboardClient({ baseUrl, accessToken: signedIn.data!.access_token });

    const created = await session.POST('/api/v1/users/me/api-keys', {
      body: {
        name: 'client test',
        permissions: {
          organization: 'read_write',
          assistants: 'read_write',
          phone_numbers: 'read_write',
          calls: 'read_write',
        },
      },
    });
    expect(created.response.status, JSON.stringify(created.error)).toBe(201);
    const key = created.data!.key;
    expect(key).toMatch(/^sk_/);
    const api = createSwitchboardClient({ baseUrl, apiKey: key });

    // From here on, only the API key.
    const me = await api.GET('/api/v1/users/me');
    expect(me.data?.email).toBe(email);
    // A request's own Authorization header wins over the client's credential.
    const own = await api.GET('/api/v1/users/me', {
      headers: { authorization: `Bearer sk_${'0'.repeat(40)}` },
    });
    expect(own.response.status).toBe(401);

    const account = { account_sid: `AC${'7'.repeat(32)}`, auth_token: 'client-test-carrier-token' };
    sim.addAccount(account);
    const organization = await api.PUT('/api/v1/organization', { body: { carrier_a: account } });
    expect(organization.response.status, JSON.stringify(organization.error)).toBe(200);

    const assistant = await api.POST('/api/v1/assistants', { body: { name: 'Front desk' } });
    expect(assistant.response.status, JSON.stringify(assistant.error)).toBe(201);
    expectTypeOf(assistant.data!.id).toEqualTypeOf<number>();
    // Responses are the document's named schemas, exported under their names.
    expectTypeOf(assistant.data!).toMatchTypeOf<Assistant>();
    expect(assistant.data!.name).toBe('Front desk');

    const number = await api.POST('/api/v1/phone-numbers', {
      body: { phone_number: '+14155550142', provider: 'carrier_a', assistant_id: assistant.data!.id },
    });
    expect(number.response.status, JSON.stringify(number.error)).toBe(201);
    expect(number.data).toMatchObject({
      phone_number: '+14155550142',
      provider: 'carrier_a',
      assistant_id: assistant.data!.id,
    });

    const to = '+14155550199';
    sim.setCallOutcome(to, { status: 'completed', durationSeconds: 42 });
    const placed = await api.POST('/calls/initiate', {
      body: { from_phone_number: '+14155550142', to_phone_number: to },
    });
    expect(placed.response.status, JSON.stringify(placed.error)).toBe(200);
    const callId = placed.data!.call_id;
    expectTypeOf(callId).toEqualTypeOf<number>();
    expect(placed.data!.call_sid).toMatch(/^CA/);
    await sim.settle();

    const call = await api.GET('/api/v1/calls/{call_id}', { params: { path: { call_id: callId } } });
    expect(call.response.status, JSON.stringify(call.error)).toBe(200);
    expectTypeOf(call.data!.direction).toEqualTypeOf<'inbound' | 'outbound'>();
    expectTypeOf(call.data!).toMatchTypeOf<Call>();
    expect(call.data).toMatchObject({
      id: callId,
      call_sid: placed.data!.call_sid,
      direction: 'outbound',
      status: 'completed',
      duration: 42,
      from_phone_number: '+14155550142',
      to_phone_number: to,
      assistant_id: assistant.data!.id,
    });

    const listed = await api.GET('/api/v1/calls', { params: { query: { status: 'completed', limit: 10 } } });
    expect(listed.response.status, JSON.stringify(listed.error)).toBe(200);
    expect(listed.data!.map((c) => c.id)).toEqual([callId]);
    expect(listed.response.headers.get('x-total-count')).toBe('1');
  });

  it('sends no credential unless given one, and answers errors as the typed error body', async () => {
    const anonymous = createSwitchboardClient({ baseUrl });
    const refused = await anonymous.GET('/api/v1/calls');
    expect(refused.response.status).toBe(401);
    expect(refused.data).toBeUndefined();
    expect(refused.error?.detail).toEqual(expect.any(String));

    const wrongKey = createSwitchboardClient({ baseUrl, apiKey: `sk_${'0'.repeat(40)}` });
    expect((await wrongKey.GET('/api/v1/calls')).response.status).toBe(401);

    expect(() => createSwitchboardClient({ baseUrl, apiKey: 'sk_a', accessToken: 'jwt' })).toThrow(
      /apiKey or accessToken/,
    );
  });
});
