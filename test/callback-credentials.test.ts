/**
 * Carrier callbacks verify their signatures with credentials kept in memory
 * (domains/runtime/credential-cache.ts), checked against the organization's configuration version
 * that the callback reads with its call. Every change to what they come from — the organization's
 * credentials, an assistant's own carrier config — is used, and what it replaced refused, by the very
 * next callback: in the platform that made the change, in a second platform on the same database (on
 * a server, with its own connections, as another process would), and after a change no platform made
 * (an operator's SQL). A cache that never hears the triggers' NOTIFY is still right: the version is
 * what it rests on.
 */
import { randomUUID } from 'node:crypto';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Tenant } from '../src/db/tenant.js';
import { insertCall } from '../src/domains/calls/store.js';
import { TelephonyCredentialCache } from '../src/domains/runtime/credential-cache.js';
import { ConfigResolver } from '../src/domains/runtime/resolve-config.js';
import { configVersion } from '../src/domains/runtime/versioned-cache.js';
import { expectError } from './support/assertions.js';
import { type Account, carrierA, nextNumber } from './support/carrier-callbacks.js';
import { Factories, type TestUser } from './support/factories.js';
import { startTestPlatform, type TestPlatform } from './support/harness.js';

let one: TestPlatform;
let two: TestPlatform;

beforeAll(async () => {
  // Nothing here reaches a carrier's API: nothing listens at these addresses.
  const env = { CARRIER_A_BASE_URL: 'http://127.0.0.1:9' };
  one = await startTestPlatform(env, { workers: false });
  two = await startTestPlatform(env, { workers: false, shareDatabaseOf: one });
});
afterAll(async () => {
  await two?.close();
  await one?.close();
});

interface Org extends Account {
  admin: TestUser;
  assistantId: number;
  /** A finished call: its callbacks are verified, then change nothing. */
  call: { id: number; sid: string; to: string };
}

async function organization(): Promise<Org> {
  const admin = await new Factories(one).user();
  const credentials = carrierA.credentials();
  await putOrganizationCredentials(admin, credentials);
  const assistantId = await new Factories(one).assistant(admin, 'Caller');
  const number = nextNumber();
  const registered = await one.app.inject({
    method: 'POST',
    url: '/api/v1/phone-numbers',
    headers: admin.headers,
    payload: { phone_number: number, provider: 'carrier_a', assistant_id: assistantId },
  });
  expect(registered.statusCode, registered.body).toBe(201);
  const to = nextNumber();
  const sid = `CA${randomUUID().replace(/-/g, '')}`;
  const row = await insertCall(one.database.db, new Tenant(admin.organizationId), {
    provider: 'carrier_a',
    callSid: sid,
    assistantId,
    direction: 'outbound',
    fromPhoneNumber: number,
    toPhoneNumber: to,
    customerPhoneNumber: to,
    status: 'completed',
  });
  return { admin, credentials, number, assistantId, call: { id: row.id, sid, to } };
}

async function putOrganizationCredentials(admin: TestUser, credentials: Record<string, string>) {
  const put = await one.app.inject({
    method: 'PUT',
    url: '/api/v1/organization',
    headers: admin.headers,
    payload: { carrier_a: credentials },
  });
  expect(put.statusCode, put.body).toBe(200);
}

/** A status callback of the org's call, signed with `credentials` (carrier_a signs URL and form). */
async function callback(t: TestPlatform, org: Org, credentials: Record<string, string>) {
  const account = { ...org, credentials };
  const body = carrierA.completed(account, org.call);
  const url = `/webhooks/carrier_a/status?call_id=${org.call.id}`;
  return t.app.inject({
    method: 'POST',
    url,
    headers: {
      'content-type': body.contentType,
      ...(await carrierA.sign(account, `${t.config.publicUrl}${url}`, body, 'good')),
    },
    payload: body.body,
  });
}

const REFUSED = /Invalid webhook signature/;

async function expectVerifiedOnlyWith(good: Record<string, string>, bad: Record<string, string>, org: Org) {
  for (const t of [one, two]) {
    const accepted = await callback(t, org, good);
    expect(accepted.statusCode, accepted.body).toBe(204);
    expectError(await callback(t, org, bad), 403, REFUSED);
  }
}

describe('callback credentials kept in memory', () => {
  it('a credential rotated through one platform is used, the old one refused, by the next callback of both', async () => {
    const org = await organization();
    const first = org.credentials;
    // Both platforms keep the first credentials.
    await expectVerifiedOnlyWith(first, carrierA.credentials(), org);
    const second = { account_sid: first.account_sid!, auth_token: `rotated-${randomUUID()}` };
    await putOrganizationCredentials(org.admin, second);
    // At once, in the order that would show a stale entry: the other platform first.
    for (const t of [two, one]) {
      expectError(await callback(t, org, first), 403, REFUSED);
      expect((await callback(t, org, second)).statusCode).toBe(204);
    }
  });

  it("an assistant's own carrier config given through one platform wins at once in both; removed, the organization's is back", async () => {
    const org = await organization();
    await expectVerifiedOnlyWith(org.credentials, carrierA.credentials(), org);
    const own = { account_sid: org.credentials.account_sid!, auth_token: `assistant-${randomUUID()}` };
    const set = await one.app.inject({
      method: 'PUT',
      url: `/api/v1/assistants/${org.assistantId}`,
      headers: org.admin.headers,
      payload: { carrier_a_config: own },
    });
    expect(set.statusCode, set.body).toBe(200);
    await expectVerifiedOnlyWith(own, org.credentials, org);
    const unset = await one.app.inject({
      method: 'PUT',
      url: `/api/v1/assistants/${org.assistantId}`,
      headers: org.admin.headers,
      payload: { carrier_a_config: null },
    });
    expect(unset.statusCode, unset.body).toBe(200);
    await expectVerifiedOnlyWith(org.credentials, own, org);
  });

  it("credentials removed by an operator's SQL refuse the next callback of both; added again, they verify", async () => {
    const org = await organization();
    await expectVerifiedOnlyWith(org.credentials, carrierA.credentials(), org);
    const removed = await one.database.db.execute(
      sql`delete from provider_credentials where organization_id = ${org.admin.organizationId}
          and provider = 'carrier_a'`,
    );
    expect(removed).toBeDefined();
    for (const t of [two, one]) expectError(await callback(t, org, org.credentials), 403, REFUSED);
    await putOrganizationCredentials(org.admin, org.credentials);
    await expectVerifiedOnlyWith(org.credentials, carrierA.credentials(), org);
  });

  it('a cache that hears no notification still answers with the credentials of the current version', async () => {
    const org = await organization();
    const tenant = new Tenant(org.admin.organizationId);
    // Never started: it hears nothing, so only the version read with each callback can tell it.
    const cache = new TelephonyCredentialCache({
      db: two.database.db,
      resolver: new ConfigResolver({ db: two.database.db, secrets: two.platform.secrets }),
    });
    const ask = async () =>
      (
        await cache.credentials(
          tenant,
          { provider: 'carrier_a', assistantId: org.assistantId },
          await configVersion(two.database.db, tenant),
        )
      ).credentials;
    expect(await ask()).toMatchObject(org.credentials);
    const second = { account_sid: org.credentials.account_sid!, auth_token: `rotated-${randomUUID()}` };
    await putOrganizationCredentials(org.admin, second);
    expect(await ask()).toMatchObject(second);
    // Unchanged configuration: the same answer, from memory (the very object kept).
    expect(await ask()).toBe(await ask());
  });
});
