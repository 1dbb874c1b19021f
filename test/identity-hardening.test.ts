/**
 * Issue 14, identity: (1) only a refresh token that a session really issued and has since replaced
 * can end it — the session id is public (every access token's `sid`), so a stranger with a guessed
 * secret must change nothing; (10) failed sign-ins are throttled per client address too, so one
 * source trying many emails meets a 429, and TRUST_PROXY decides what the client address is.
 * One platform for the whole file; every test makes its own users and uses its own client addresses.
 */
import { randomBytes } from 'node:crypto';
import type { LightMyRequestResponse } from 'fastify';
import { decodeJwt } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REFRESH_RACE_GRACE_SECONDS, SPENT_REFRESH_TOKENS_KEPT } from '../src/domains/identity/store.js';
import { expectError } from './support/assertions.js';
import { Factories, type TestUser, uniqueEmail } from './support/factories.js';
import { startTestPlatform, type TestPlatform } from './support/harness.js';

const PER_ADDRESS = 5;
const PER_EMAIL = 3;
const WINDOW_MINUTES = 15;
/** The reverse proxy this file's platform trusts (TRUST_PROXY). */
const PROXY = '192.0.2.10';

let t: TestPlatform;
let f: Factories;
beforeAll(async () => {
  t = await startTestPlatform({
    LOGIN_MAX_FAILURES: String(PER_EMAIL),
    LOGIN_MAX_FAILURES_PER_ADDRESS: String(PER_ADDRESS),
    LOGIN_FAILURE_WINDOW_MINUTES: String(WINDOW_MINUTES),
    TRUST_PROXY: `${PROXY}, 10.0.0.0/8`,
  });
  f = new Factories(t);
});
afterAll(() => t.close());

const refresh = (refreshToken: string) =>
  t.app.inject({ method: 'POST', url: '/api/v1/auth/refresh', payload: { refresh_token: refreshToken } });
const me = (accessToken: string) =>
  t.app.inject({
    method: 'GET',
    url: '/api/v1/users/me',
    headers: { authorization: `Bearer ${accessToken}` },
  });

/** What a stranger can make from an access token: its session id and a well-formed random secret. */
function forgedRefreshToken(accessToken: string): string {
  return `${decodeJwt(accessToken).sid as string}.${randomBytes(32).toString('base64url')}`;
}

async function spentHashes(sessionId: string): Promise<string[]> {
  const { rows } = await t.database.executeSql(
    'select spent_refresh_token_hashes as spent from auth_sessions where id = $1',
    [sessionId],
  );
  return (rows[0] as { spent: string[] }).spent;
}

/** Moves the session's last rotation out of REFRESH_RACE_GRACE_SECONDS, as if it had happened a while ago. */
async function ageLastRotation(sessionId: string): Promise<void> {
  await t.database.executeSql(
    `update auth_sessions set last_refreshed_at = now() - make_interval(secs => $2) where id = $1`,
    [sessionId, REFRESH_RACE_GRACE_SECONDS + 1],
  );
}

/** Refreshes `times` times in a row; every refresh token issued on the way, oldest first. */
async function rotate(user: TestUser, times: number): Promise<{ issued: string[]; access: string }> {
  const issued = [user.refreshToken];
  let access = user.accessToken;
  for (let i = 0; i < times; i++) {
    const answer = await refresh(issued.at(-1)!);
    expect(answer.statusCode, answer.body).toBe(200);
    issued.push(answer.json().refresh_token);
    access = answer.json().access_token;
  }
  return { issued, access };
}

describe('refresh-token reuse detection', () => {
  it('a secret the session never issued is a plain 401 that ends nothing', async () => {
    const user = await f.user();
    for (let i = 0; i < 5; i++) {
      const answer = await refresh(forgedRefreshToken(user.accessToken));
      expectError(answer, 401, /Invalid refresh token/);
    }
    expect((await me(user.accessToken)).statusCode).toBe(200);
    expect(
      (
        await t.app.inject({
          method: 'GET',
          url: '/api/v1/users/me',
          cookies: { sb_session: user.sessionCookie },
        })
      ).statusCode,
    ).toBe(200);
    expect((await refresh(user.refreshToken)).statusCode).toBe(200);
  });

  it('strangers guessing while the owner refreshes change nothing: the owner carries on', async () => {
    const user = await f.user();
    const answers = await Promise.all([
      refresh(user.refreshToken),
      ...Array.from({ length: 6 }, () => refresh(forgedRefreshToken(user.accessToken))),
    ]);
    const [own, ...forged] = answers;
    expect(own!.statusCode, own!.body).toBe(200);
    for (const answer of forged) expect(answer.statusCode).toBe(401);
    expect((await me(own!.json().access_token)).statusCode).toBe(200);
    expect((await refresh(own!.json().refresh_token)).statusCode).toBe(200);
  });

  it('a token the session issued and replaced ends it — not only the last one', async () => {
    const user = await f.user();
    const { issued, access } = await rotate(user, 3);
    expectError(await refresh(issued[1]!), 401, /already used/);
    expect((await me(access)).statusCode).toBe(401);
    expect((await refresh(issued.at(-1)!)).statusCode).toBe(401);
  });

  it('the refresh token replaced by switch-organization counts as spent', async () => {
    const owner = await f.user();
    const member = await f.member(owner.organizationId, 'user');
    const ownOrganization = (await me(member.accessToken))
      .json()
      .organizations.find((o: { id: number }) => o.id !== owner.organizationId).id as number;
    const switched = await t.app.inject({
      method: 'POST',
      url: '/api/v1/auth/switch-organization',
      headers: member.headers,
      payload: { organization_id: ownOrganization },
    });
    expect(switched.statusCode, switched.body).toBe(200);
    const { access_token: access, refresh_token: next } = switched.json();
    // A stranger's guess still ends nothing after the switch…
    expectError(await refresh(forgedRefreshToken(access)), 401, /Invalid refresh token/);
    expect((await me(access)).statusCode).toBe(200);
    // …but the token the switch replaced coming back does.
    await ageLastRotation(decodeJwt(access).sid as string);
    expectError(await refresh(member.refreshToken), 401, /already used/);
    expect((await me(access)).statusCode).toBe(401);
    expect((await refresh(next)).statusCode).toBe(401);
  });

  it(`keeps only the newest ${SPENT_REFRESH_TOKENS_KEPT} spent hashes: an older token is a plain 401`, async () => {
    const user = await f.user();
    const { issued, access } = await rotate(user, SPENT_REFRESH_TOKENS_KEPT + 1);
    const sessionId = decodeJwt(access).sid as string;
    expect(await spentHashes(sessionId)).toHaveLength(SPENT_REFRESH_TOKENS_KEPT);
    // issued[0] fell out of the list: it grants nothing, and ends nothing either.
    expectError(await refresh(issued[0]!), 401, /Invalid refresh token/);
    expect((await me(access)).statusCode).toBe(200);
    // issued[1] is the oldest still kept.
    expectError(await refresh(issued[1]!), 401, /already used/);
    expect((await me(access)).statusCode).toBe(401);
  });

  it('the token replaced last, back within the race grace, is refused without ending the session', async () => {
    const user = await f.user();
    const { issued, access } = await rotate(user, 1);
    expectError(await refresh(issued[0]!), 401, /^Refresh token already used$/);
    expect((await me(access)).statusCode).toBe(200);
    // Past the grace the same token is a replay.
    await ageLastRotation(decodeJwt(access).sid as string);
    expectError(await refresh(issued[0]!), 401, /the session has been ended/);
    expect((await me(access)).statusCode).toBe(401);
  });

  it('lets one of two simultaneous refreshes with one token through, and the session lives on', async () => {
    const user = await f.user();
    const answers = await Promise.all([refresh(user.refreshToken), refresh(user.refreshToken)]);
    expect(answers.map((a) => a.statusCode).sort()).toEqual([200, 401]);
    const winner = answers.find((a) => a.statusCode === 200)!.json();
    expect(await spentHashes(decodeJwt(user.accessToken).sid as string)).toHaveLength(1);
    expect((await me(winner.access_token)).statusCode).toBe(200);
    expect((await refresh(winner.refresh_token)).statusCode).toBe(200);
  });

  it("drops a session's spent hashes when the session ends", async () => {
    const loggedOut = await f.user();
    await rotate(loggedOut, 2);
    const other = await f.login(loggedOut);
    const { access } = await rotate(other, 1);
    const logout = await t.app.inject({
      method: 'POST',
      url: '/api/v1/auth/logout',
      headers: { authorization: `Bearer ${access}` },
    });
    expect(logout.statusCode, logout.body).toBe(200);
    expect(await spentHashes(decodeJwt(access).sid as string)).toEqual([]);

    // Changing the password ends the user's other sessions: theirs go too.
    const kept = await f.login(loggedOut);
    const changed = await t.app.inject({
      method: 'POST',
      url: '/api/v1/users/me/change-password',
      headers: kept.headers,
      payload: { current_password: loggedOut.password, new_password: 'a brand new password' },
    });
    expect(changed.statusCode, changed.body).toBe(200);
    expect(await spentHashes(decodeJwt(loggedOut.accessToken).sid as string)).toEqual([]);
  });
});

describe('sign-in throttling per client address', () => {
  const login = (email: string, password: string, from: { remoteAddress: string; forwardedFor?: string }) =>
    t.app.inject({
      method: 'POST',
      url: '/api/v1/auth/login',
      remoteAddress: from.remoteAddress,
      ...(from.forwardedFor ? { headers: { 'x-forwarded-for': from.forwardedFor } } : {}),
      payload: { email, password },
    });

  /** One failed sign-in for each of `count` different unknown emails (never the per-email limit). */
  async function failWithFreshEmails(count: number, from: { remoteAddress: string; forwardedFor?: string }) {
    for (let i = 0; i < count; i++) {
      const answer = await login(uniqueEmail('guess'), 'wrong password', from);
      expect(answer.statusCode, answer.body).toBe(401);
    }
  }

  function expectAddressRefused(answer: LightMyRequestResponse): void {
    expectError(answer, 429, /Too many failed sign-ins from this address/);
    const retryAfter = Number(answer.headers['retry-after']);
    expect(Number.isInteger(retryAfter)).toBe(true);
    expect(retryAfter).toBeGreaterThan(0);
    expect(retryAfter).toBeLessThanOrEqual(WINDOW_MINUTES * 60);
    expect(answer.cookies.find((c) => c.name === 'sb_session')).toBeUndefined();
  }

  it('refuses an address after its allowed failures over many emails, even with a right password', async () => {
    const user = await f.user();
    const from = { remoteAddress: '203.0.113.1' };
    await failWithFreshEmails(PER_ADDRESS, from);
    expectAddressRefused(await login(uniqueEmail('guess'), 'wrong password', from));
    expectAddressRefused(await login(user.email, user.password, from));
    // The account itself is not locked: from elsewhere it signs in.
    expect((await login(user.email, user.password, { remoteAddress: '203.0.113.2' })).statusCode).toBe(200);
  });

  it('counts only failures, and a success does not clear them', async () => {
    const user = await f.user();
    const from = { remoteAddress: '203.0.113.3' };
    for (let i = 0; i < PER_ADDRESS * 2; i++) {
      expect((await login(user.email, user.password, from)).statusCode).toBe(200);
    }
    await failWithFreshEmails(PER_ADDRESS - 1, from);
    expect((await login(user.email, user.password, from)).statusCode).toBe(200);
    await failWithFreshEmails(1, from);
    expectAddressRefused(await login(user.email, user.password, from));
  });

  it('counts concurrent failures from one address without losing any', async () => {
    const from = { remoteAddress: '203.0.113.4' };
    const answers = await Promise.all(
      Array.from({ length: PER_ADDRESS + 3 }, () => login(uniqueEmail('guess'), 'wrong password', from)),
    );
    for (const answer of answers) expect([401, 429]).toContain(answer.statusCode);
    const { rows } = await t.database.executeSql('select count from rate_limit_windows where bucket = $1', [
      `login.address:${from.remoteAddress}`,
    ]);
    expect(Number(rows[0]?.count)).toBe(answers.filter((a) => a.statusCode === 401).length);
    expectAddressRefused(await login(uniqueEmail('guess'), 'wrong password', from));
  });

  it('counts an IPv6 client by its /64, so taking a new address per guess does not help', async () => {
    const user = await f.user();
    for (let i = 0; i < PER_ADDRESS; i++) {
      const from = { remoteAddress: `2001:db8:77:1:${(i + 1).toString(16)}::${i + 1}` };
      expect((await login(uniqueEmail('guess'), 'wrong password', from)).statusCode).toBe(401);
    }
    expectAddressRefused(await login(user.email, user.password, { remoteAddress: '2001:DB8:77:1:ffff::1' }));
    expect((await login(user.email, user.password, { remoteAddress: '2001:db8:77:2::1' })).statusCode).toBe(
      200,
    );
  });

  it('ignores X-Forwarded-For from a client that is not a trusted proxy', async () => {
    const from = (i: number) => ({ remoteAddress: '198.51.100.7', forwardedFor: `203.0.113.${100 + i}` });
    for (let i = 0; i < PER_ADDRESS; i++) {
      expect((await login(uniqueEmail('guess'), 'wrong password', from(i))).statusCode).toBe(401);
    }
    expectAddressRefused(await login(uniqueEmail('guess'), 'wrong password', from(99)));
  });

  it("counts a trusted proxy's clients by the address X-Forwarded-For names, not the proxy's", async () => {
    const user = await f.user();
    const alice = { remoteAddress: PROXY, forwardedFor: '198.51.100.20' };
    const bob = { remoteAddress: PROXY, forwardedFor: '198.51.100.21' };
    await failWithFreshEmails(PER_ADDRESS, alice);
    expectAddressRefused(await login(user.email, user.password, alice));
    expect((await login(user.email, user.password, bob)).statusCode).toBe(200);
    // A client naming a fake origin before the proxy's own entry is counted by the proxy's entry.
    const chained = { remoteAddress: '10.1.2.3', forwardedFor: '203.0.113.250, 198.51.100.20' };
    expectAddressRefused(await login(user.email, user.password, chained));
  });

  it('keeps the per-email limit beside it, with its own message', async () => {
    const user = await f.user();
    for (let i = 0; i < PER_EMAIL; i++) {
      const from = { remoteAddress: `203.0.113.${50 + i}` };
      expect((await login(user.email, 'wrong password', from)).statusCode).toBe(401);
    }
    expectError(
      await login(user.email, user.password, { remoteAddress: '203.0.113.60' }),
      429,
      /for this email/,
    );
  });
});
