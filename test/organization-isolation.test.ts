/**
 * Isolation between organizations: one organization's credentials, settings and limits are invisible
 * to another, and a user of several organizations changes only the one the session is in, as its role there allows.
 * Split from the former organization.test.ts. The tests share one platform and database; each creates
 * the users and organizations it needs.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { insertMembership } from '../src/domains/identity/store.js';
import { Factories } from './support/factories.js';
import { useTestPlatform } from './support/harness.js';
import { type Json, organizationApi, secret, uniqueSlug } from './support/organization-api.js';
import { masked } from './support/secrets.js';

// Its close lets the verification mails of the users made here finish before the database closes.
const t = useTestPlatform();
const {
  getOrg,
  putOrg,
  createOrg,
  getStatus,
  getConcurrency,
  putConcurrency,
  postFallback,
  organizationOf,
  storedCredential,
} = organizationApi(t);
let f: Factories;

beforeAll(() => {
  f = new Factories(t);
});

describe('isolation between organizations', () => {
  it("one organization's credentials, settings and concurrency are invisible to another", async () => {
    const a = await f.user();
    const b = await f.user();
    const token = secret('iso-token');
    const llm = secret('iso-llm');
    const sip = secret('iso-sip');
    const put = await putOrg(a.headers, {
      name: 'Org A',
      settings: { default_timezone: 'Asia/Tokyo', hipaa_enabled: true, marker: 'only-in-a' },
      api_keys: { llm_a: { api_key: llm } },
      carrier_a: { account_sid: 'AC-only-in-a', auth_token: token },
      sip_trunk_config: { sip_domain: 'only-in-a.example.com', username: 'a-user', password: sip },
    });
    expect(put.statusCode, put.body).toBe(200);
    const concurrency = { tts: { tts_a: { enabled: true, concurrent_limit: 42 } }, stt: {} };
    expect((await putConcurrency(a.headers, concurrency)).statusCode).toBe(200);
    const fallback = await postFallback(a.headers, 'tts_b', {
      name: 'a-spare',
      api_key: secret('iso-fb'),
      enabled: true,
    });
    expect(fallback.statusCode).toBe(201);

    const seen = await getOrg(b.headers);
    expect(seen.statusCode).toBe(200);
    expect(seen.json()).toMatchObject({
      id: b.organizationId,
      api_keys: {},
      carrier_a: null,
      carrier_b: null,
      carrier_c: null,
      sip_trunk_config: null,
      inactive_keys: [],
    });
    expect(seen.json().name).not.toBe('Org A');
    for (const text of ['only-in-a', 'Asia/Tokyo', 'AC-only-in-a', 'a-user', masked(token), masked(llm)]) {
      expect(seen.body, text).not.toContain(text);
    }
    expect((await getConcurrency(b.headers)).json()).toEqual({ tts: {}, stt: {} });
    const status = (await getStatus(b.headers)).json();
    expect(status.ready).toBe(false);
    expect(status.missing).toHaveLength(4);
    for (const kind of ['telephony', 'llm', 'stt', 'tts']) {
      expect(status.providers[kind], kind).toEqual({ ready: false, usable: [], inactive: [] });
    }

    // B's own changes do not reach A.
    expect(
      (await putOrg(b.headers, { name: 'Org B', carrier_a: null, api_keys: { llm_a: null } })).statusCode,
    ).toBe(200);
    expect((await putConcurrency(b.headers, { tts: {}, stt: {} })).statusCode).toBe(200);
    const aAfter = await organizationOf(a);
    expect(aAfter.name).toBe('Org A');
    expect(aAfter.carrier_a).toEqual({ account_sid: 'AC-only-in-a', auth_token: masked(token) });
    expect(await storedCredential(a.organizationId, 'llm_a')).toEqual({ api_key: llm });
    expect((await getConcurrency(a.headers)).json()).toEqual(concurrency);
  });

  it('a user in two organizations changes only the one the session is in', async () => {
    const user = await f.user();
    const created = await createOrg(user.headers, { name: 'Second home', slug: uniqueSlug('second-home') });
    expect(created.statusCode).toBe(201);
    const there = await f.login(user, created.json().id);

    const token = secret('second-home-token');
    expect(
      (
        await putOrg(there.headers, {
          carrier_a: { account_sid: 'AC-second', auth_token: token },
          settings: { only: 'second' },
        })
      ).statusCode,
    ).toBe(200);
    expect(
      (await putConcurrency(there.headers, { stt: { stt_a: { enabled: true, concurrent_limit: 8 } } }))
        .statusCode,
    ).toBe(200);

    const home = await organizationOf(user);
    expect(home.id).toBe(user.organizationId);
    expect(home.carrier_a).toBeNull();
    expect((home.settings as Json).only).toBeUndefined();
    expect((await getConcurrency(user.headers)).json()).toEqual({ tts: {}, stt: {} });
    expect((await organizationOf(there)).carrier_a).toEqual({
      account_sid: 'AC-second',
      auth_token: masked(token),
    });
    expect(await storedCredential(user.organizationId, 'carrier_a')).toBeUndefined();
  });

  it('an admin elsewhere who is a plain member here cannot change this organization', async () => {
    const owner = await f.user();
    const visitor = await f.user(); // admin of their own organization
    const inOwners = await f.member(owner.organizationId, 'user');
    // `member` makes a fresh user; make the visitor a member too and sign them in there.
    await insertMembership(t.database.db, visitor.id, owner.organizationId, 'user');
    const visiting = await f.login(visitor, owner.organizationId);
    expect(visiting.role).toBe('user');
    for (const who of [inOwners, visiting]) {
      expect((await putOrg(who.headers, { name: 'hijack' })).statusCode).toBe(403);
      expect((await putConcurrency(who.headers, { tts: {} })).statusCode).toBe(403);
    }
    expect((await organizationOf(owner)).name).not.toBe('hijack');
    // The visitor's admin role at home is untouched.
    expect((await putOrg(visitor.headers, { name: 'Visitor home' })).statusCode).toBe(200);
  });
});
