/**
 * Failed sign-ins are throttled per email, across processes (counted in the database): over the
 * limit a login answers 429 with Retry-After before the password is even checked.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Factories, type TestUser, uniqueEmail } from './support/factories.js';
import { startTestPlatform, type TestPlatform } from './support/harness.js';

let t: TestPlatform;
let f: Factories;
beforeAll(async () => {
  t = await startTestPlatform({ LOGIN_MAX_FAILURES: '3', LOGIN_FAILURE_WINDOW_MINUTES: '15' });
  f = new Factories(t);
});
afterAll(() => t.close());

const login = (email: string, password: string) =>
  t.app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { email, password } });

async function failTimes(email: string, times: number) {
  for (let i = 0; i < times; i++) expect((await login(email, 'wrong password')).statusCode).toBe(401);
}

describe('login throttling', () => {
  let user: TestUser;
  beforeAll(async () => {
    user = await f.user();
  });

  it('answers 429 with Retry-After after the allowed failures, even with the right password', async () => {
    await failTimes(user.email, 3);
    const blocked = await login(user.email, user.password);
    expect(blocked.statusCode).toBe(429);
    expect(blocked.json().detail).toMatch(/Too many failed sign-ins/);
    const retryAfter = Number(blocked.headers['retry-after']);
    expect(Number.isInteger(retryAfter)).toBe(true);
    expect(retryAfter).toBeGreaterThan(0);
    expect(retryAfter).toBeLessThanOrEqual(15 * 60);
    expect(blocked.cookies.find((c) => c.name === 'sb_session')).toBeUndefined();
  });

  it('lets the account in again once the window has passed', async () => {
    await t.database.executeSql(
      "update login_failures set window_start = now() - interval '16 minutes' where email = $1",
      [user.email],
    );
    expect((await login(user.email, user.password)).statusCode).toBe(200);
  });

  it('clears the count on a successful sign-in', async () => {
    const other = await f.user();
    await failTimes(other.email, 2);
    expect((await login(other.email, other.password)).statusCode).toBe(200);
    await failTimes(other.email, 2); // would be the 4th failure without the reset
    expect((await login(other.email, other.password)).statusCode).toBe(200);
  });

  it('counts per email, case-insensitively, and treats unknown emails alike (no enumeration)', async () => {
    const other = await f.user();
    await failTimes(other.email.toUpperCase(), 3);
    expect((await login(other.email, other.password)).statusCode).toBe(429);

    const bystander = await f.user();
    expect((await login(bystander.email, bystander.password)).statusCode).toBe(200);

    const unknown = uniqueEmail('nobody');
    await failTimes(unknown, 3);
    const blocked = await login(unknown, 'anything at all');
    expect(blocked.statusCode).toBe(429);
  });

  it('counts concurrent failures without losing any', async () => {
    const target = await f.user();
    const answers = await Promise.all(Array.from({ length: 8 }, () => login(target.email, 'wrong password')));
    for (const answer of answers) expect([401, 429]).toContain(answer.statusCode);
    const { rows } = await t.database.executeSql('select failures from login_failures where email = $1', [
      target.email,
    ]);
    expect(Number(rows[0]?.failures)).toBe(answers.filter((a) => a.statusCode === 401).length);
    expect((await login(target.email, target.password)).statusCode).toBe(429);
  });
});
