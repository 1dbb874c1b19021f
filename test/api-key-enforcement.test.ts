/**
 * What a user API key may do once it is in use: permission areas, deactivation and deletion taking
 * effect at once, the per-key rate limit, usage counting, the owner's current role, the key's
 * organization, and that the secret never reaches the logs.
 * The tests share one platform and database; each creates the users and keys it needs.
 */
import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Permissions } from '../src/domains/identity/principal.js';
import { IdentityChanges } from '../src/domains/identity/principal-cache.js';
import { insertMembership, setRole } from '../src/domains/identity/store.js';
import { Factories, type TestApiKey, type TestUser } from './support/factories.js';
import { startTestPlatform, type TestPlatform, waitFor } from './support/harness.js';
import { awayFromMinuteEdge } from './support/rate-windows.js';

const KEYS = '/api/v1/users/me/api-keys';
const ORGANIZATION = '/api/v1/organization';

let t: TestPlatform;
let f: Factories;
/** Every secret minted in this file, for the log check. */
const secrets: string[] = [];

beforeAll(async () => {
  t = await startTestPlatform();
  f = new Factories(t);
});
afterAll(() => t.close());

async function newKey(
  user: TestUser,
  options: { permissions?: Permissions; rateLimit?: number } = {},
): Promise<TestApiKey> {
  const key = await f.apiKey(user, options);
  secrets.push(key.key);
  return key;
}

function get(url: string, headers: Record<string, string>) {
  return t.app.inject({ method: 'GET', url, headers });
}

function updateKey(user: TestUser, id: number, payload: object) {
  return t.app.inject({ method: 'PUT', url: `${KEYS}/${id}`, headers: user.headers, payload });
}

async function keyMeta(user: TestUser, id: number) {
  const response = await get(KEYS, user.headers);
  expect(response.statusCode).toBe(200);
  const row = (response.json() as Array<Record<string, unknown>>).find((k) => k.id === id);
  expect(row, `key ${id} not listed`).toBeDefined();
  return row as { usage_count: number; last_used_at: string | null; is_active: boolean };
}

function statuses(responses: LightMyRequestResponse[]): number[] {
  return responses.map((r) => r.statusCode);
}

describe('permission areas', () => {
  let user: TestUser;
  beforeAll(async () => {
    user = await f.user();
  });

  it("a key with organization 'read' may GET the organization", async () => {
    const key = await newKey(user, { permissions: { organization: 'read' } });
    const response = await get(ORGANIZATION, key.headers);
    expect(response.statusCode, response.body).toBe(200);
    expect(response.json().id).toBe(user.organizationId);
  });

  it("a key with organization 'read_write' may GET it too", async () => {
    const key = await newKey(user, { permissions: { organization: 'read_write' } });
    const response = await get(ORGANIZATION, key.headers);
    expect(response.statusCode).toBe(200);
    expect(response.json().id).toBe(user.organizationId);
  });

  it('a key without the area is refused with 403, whatever else it may do', async () => {
    for (const permissions of [
      {},
      { assistants: 'read_write', calls: 'read_write', campaigns: 'read_write', graphs: 'read_write' },
      { sms: 'read_write', phone_numbers: 'read_write' },
    ] as Permissions[]) {
      const key = await newKey(user, { permissions });
      const response = await get(ORGANIZATION, key.headers);
      expect(response.statusCode, JSON.stringify(permissions)).toBe(403);
      expect(response.json().detail).toMatch(/organization/);
    }
  });

  it('a JWT needs no area', async () => {
    const response = await get(ORGANIZATION, user.headers);
    expect(response.statusCode).toBe(200);
    expect(response.json().id).toBe(user.organizationId);
  });

  it('a change of permissions applies to the very next request', async () => {
    const key = await newKey(user, { permissions: {} });
    expect((await get(ORGANIZATION, key.headers)).statusCode).toBe(403);

    expect((await updateKey(user, key.id, { permissions: { organization: 'read' } })).statusCode).toBe(200);
    expect((await get(ORGANIZATION, key.headers)).statusCode).toBe(200);

    expect((await updateKey(user, key.id, { permissions: { calls: 'read' } })).statusCode).toBe(200);
    expect((await get(ORGANIZATION, key.headers)).statusCode).toBe(403);
  });
});

describe('deactivated and deleted keys stop working at once', () => {
  it('deactivate → 401 on the next use; reactivate → works again', async () => {
    const user = await f.user();
    const key = await newKey(user, { permissions: { organization: 'read' } });
    expect((await get(ORGANIZATION, key.headers)).statusCode).toBe(200); // now cached

    const off = await updateKey(user, key.id, { is_active: false });
    expect(off.statusCode).toBe(200);
    for (const url of [ORGANIZATION, '/api/v1/users/me']) {
      const refused = await get(url, key.headers);
      expect(refused.statusCode, url).toBe(401);
      expect(typeof refused.json().detail).toBe('string');
      expect(refused.body).not.toContain(key.key);
    }

    const on = await updateKey(user, key.id, { is_active: true });
    expect(on.statusCode).toBe(200);
    const again = await get(ORGANIZATION, key.headers);
    expect(again.statusCode).toBe(200);
    expect(again.json().id).toBe(user.organizationId);
  });

  it('deactivating one key leaves the owner’s other keys working', async () => {
    const user = await f.user();
    const a = await newKey(user, { permissions: { organization: 'read' } });
    const b = await newKey(user, { permissions: { organization: 'read' } });
    expect((await get(ORGANIZATION, a.headers)).statusCode).toBe(200);
    expect((await get(ORGANIZATION, b.headers)).statusCode).toBe(200);
    expect((await updateKey(user, a.id, { is_active: false })).statusCode).toBe(200);
    expect((await get(ORGANIZATION, a.headers)).statusCode).toBe(401);
    expect((await get(ORGANIZATION, b.headers)).statusCode).toBe(200);
  });

  it('delete → 401 on the next use', async () => {
    const user = await f.user();
    const key = await newKey(user, { permissions: { organization: 'read' } });
    expect((await get(ORGANIZATION, key.headers)).statusCode).toBe(200); // now cached
    expect((await get('/api/v1/users/me', key.headers)).statusCode).toBe(200);

    const removed = await t.app.inject({ method: 'DELETE', url: `${KEYS}/${key.id}`, headers: user.headers });
    expect(removed.statusCode).toBe(204);
    expect((await get(ORGANIZATION, key.headers)).statusCode).toBe(401);
    expect((await get('/api/v1/users/me', key.headers)).statusCode).toBe(401);
  });

  it('a made-up key of the right shape is 401', async () => {
    const response = await get(ORGANIZATION, {
      authorization: 'Bearer sk_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA',
    });
    expect(response.statusCode).toBe(401);
    expect(response.headers['www-authenticate']).toBe('Bearer');
  });
});

describe('rate_limit', () => {
  it('3 per minute: three 200s, then 429 with Retry-After and the limit headers', async () => {
    const user = await f.user();
    const key = await newKey(user, { permissions: { organization: 'read' }, rateLimit: 3 });
    await awayFromMinuteEdge();

    const allowed: LightMyRequestResponse[] = [];
    for (let i = 0; i < 3; i += 1) allowed.push(await get(ORGANIZATION, key.headers));
    expect(statuses(allowed)).toEqual([200, 200, 200]);
    expect(allowed.map((r) => r.headers['x-ratelimit-limit'])).toEqual(['3', '3', '3']);
    expect(allowed.map((r) => r.headers['x-ratelimit-remaining'])).toEqual(['2', '1', '0']);

    for (let i = 0; i < 2; i += 1) {
      const limited = await get(ORGANIZATION, key.headers);
      expect(limited.statusCode).toBe(429);
      const retryAfter = String(limited.headers['retry-after']);
      expect(retryAfter).toMatch(/^\d+$/);
      expect(Number(retryAfter)).toBeGreaterThanOrEqual(1);
      expect(Number(retryAfter)).toBeLessThanOrEqual(60);
      expect(limited.headers['x-ratelimit-limit']).toBe('3');
      expect(limited.headers['x-ratelimit-remaining']).toBe('0');
      expect(typeof limited.json().detail).toBe('string');
      expect(limited.json().detail).toMatch(/rate limit/i);
      expect(limited.headers['x-request-id']).toBeTruthy();
    }
  });

  it('counts per key: another key of the same user is not affected', async () => {
    const user = await f.user();
    const limited = await newKey(user, { permissions: { organization: 'read' }, rateLimit: 1 });
    const other = await newKey(user, { permissions: { organization: 'read' }, rateLimit: 2 });
    await awayFromMinuteEdge();
    expect((await get(ORGANIZATION, limited.headers)).statusCode).toBe(200);
    expect((await get(ORGANIZATION, limited.headers)).statusCode).toBe(429);
    expect((await get(ORGANIZATION, other.headers)).statusCode).toBe(200);
    expect((await get(ORGANIZATION, other.headers)).statusCode).toBe(200);
    expect((await get(ORGANIZATION, other.headers)).statusCode).toBe(429);
  });

  it('a key without rate_limit is not limited and gets no limit headers', async () => {
    const user = await f.user();
    const key = await newKey(user, { permissions: { organization: 'read' } });
    const responses = await Promise.all(Array.from({ length: 25 }, () => get(ORGANIZATION, key.headers)));
    expect(statuses(responses).every((s) => s === 200)).toBe(true);
    expect(responses[0]?.headers['x-ratelimit-limit']).toBeUndefined();
  });

  it('lifting the limit with PUT applies at once', async () => {
    const user = await f.user();
    const key = await newKey(user, { permissions: { organization: 'read' }, rateLimit: 1 });
    await awayFromMinuteEdge();
    expect((await get(ORGANIZATION, key.headers)).statusCode).toBe(200);
    expect((await get(ORGANIZATION, key.headers)).statusCode).toBe(429);
    expect((await updateKey(user, key.id, { rate_limit: null })).statusCode).toBe(200);
    const after = await get(ORGANIZATION, key.headers);
    expect(after.statusCode).toBe(200);
    expect(after.headers['x-ratelimit-limit']).toBeUndefined();
  });

  it('holds under parallel requests: exactly rate_limit of them pass', async () => {
    const user = await f.user();
    const key = await newKey(user, { permissions: { organization: 'read' }, rateLimit: 5 });
    await awayFromMinuteEdge();
    const responses = await Promise.all(Array.from({ length: 12 }, () => get(ORGANIZATION, key.headers)));
    const codes = statuses(responses);
    expect(codes.filter((s) => s === 200)).toHaveLength(5);
    expect(codes.filter((s) => s === 429)).toHaveLength(7);
  });
});

describe('usage_count and last_used_at', () => {
  it('counts every request with the key; the list shows the counts at once', async () => {
    const user = await f.user();
    const key = await newKey(user, { permissions: { organization: 'read' } });
    const fresh = await keyMeta(user, key.id);
    expect(fresh.usage_count).toBe(0);
    expect(fresh.last_used_at).toBeNull();

    const before = Date.now();
    for (const url of [ORGANIZATION, ORGANIZATION, '/api/v1/users/me', ORGANIZATION]) {
      expect((await get(url, key.headers)).statusCode).toBe(200);
    }
    const after = Date.now();
    const used = await keyMeta(user, key.id);
    expect(used.usage_count).toBe(4);
    expect(used.last_used_at).not.toBeNull();
    const lastUsed = Date.parse(used.last_used_at as string);
    expect(lastUsed).toBeGreaterThanOrEqual(before - 1_000);
    expect(lastUsed).toBeLessThanOrEqual(after + 1_000);

    const parallel = await Promise.all(Array.from({ length: 10 }, () => get(ORGANIZATION, key.headers)));
    expect(statuses(parallel).every((s) => s === 200)).toBe(true);
    const more = await keyMeta(user, key.id);
    expect(more.usage_count).toBe(14);
    expect(Date.parse(more.last_used_at as string)).toBeGreaterThanOrEqual(lastUsed);
  });

  it('counts each key separately and leaves unused keys at 0', async () => {
    const user = await f.user();
    const a = await newKey(user, { permissions: { organization: 'read' } });
    const b = await newKey(user, { permissions: { organization: 'read' } });
    const idle = await newKey(user, { permissions: { organization: 'read' } });
    for (let i = 0; i < 3; i += 1) expect((await get(ORGANIZATION, a.headers)).statusCode).toBe(200);
    expect((await get(ORGANIZATION, b.headers)).statusCode).toBe(200);
    expect((await keyMeta(user, a.id)).usage_count).toBe(3);
    expect((await keyMeta(user, b.id)).usage_count).toBe(1);
    const unused = await keyMeta(user, idle.id);
    expect(unused.usage_count).toBe(0);
    expect(unused.last_used_at).toBeNull();
  });

  it('reaches the database on its own within a few seconds (no list needed)', async () => {
    const user = await f.user();
    const key = await newKey(user, { permissions: { organization: 'read' } });
    for (let i = 0; i < 2; i += 1) expect((await get(ORGANIZATION, key.headers)).statusCode).toBe(200);
    const row = await waitFor(async () => {
      const { rows } = await t.database.executeSql(
        'select usage_count, last_used_at from api_keys where id = $1',
        [key.id],
      );
      return Number(rows[0]?.usage_count) === 2 ? rows[0] : undefined;
    }, 5_000);
    expect(row.last_used_at).not.toBeNull();
  });
});

describe("the key acts with its owner's current role", () => {
  it('promotion and demotion are seen by the key once identity changes are announced', async () => {
    const admin = await f.user();
    const member = await f.member(admin.organizationId, 'user');
    const key = await newKey(member, { permissions: { organization: 'read' } });
    const me = () => get('/api/v1/users/me', key.headers);

    const first = await me();
    expect(first.statusCode).toBe(200);
    expect(first.json().role).toBe('user');
    expect(first.json().organization_id).toBe(admin.organizationId);

    // Promote in the database, then announce it the way `switchboard users make-admin` does.
    expect(await setRole(t.database.db, member.id, 'admin', admin.organizationId)).toBe(1);
    await new IdentityChanges(t.database).userChanged(member.id);
    const promoted = await waitFor(async () => {
      const response = await me();
      return response.json().role === 'admin' ? response : undefined;
    }, 5_000);
    expect(promoted.statusCode).toBe(200);

    // Demote in the database; a change to one of the member's keys (the public path) also drops
    // the cached principal, so the very next request sees the new role.
    expect(await setRole(t.database.db, member.id, 'user', admin.organizationId)).toBe(1);
    expect((await updateKey(member, key.id, { name: 'renamed' })).statusCode).toBe(200);
    const demoted = await me();
    expect(demoted.statusCode).toBe(200);
    expect(demoted.json().role).toBe('user');
  });
});

describe('a key belongs to the organization it was made in', () => {
  it('a key made in A reads A, one made in B reads B', async () => {
    const user = await f.user();
    const ownerOfB = await f.user();
    await insertMembership(t.database.db, user.id, ownerOfB.organizationId, 'user');
    const inB = await f.login(user, ownerOfB.organizationId);

    const keyA = await newKey(user, { permissions: { organization: 'read' } });
    const keyB = await newKey(inB, { permissions: { organization: 'read' } });

    const readA = await get(ORGANIZATION, keyA.headers);
    expect(readA.statusCode).toBe(200);
    expect(readA.json().id).toBe(user.organizationId);
    const readB = await get(ORGANIZATION, keyB.headers);
    expect(readB.statusCode).toBe(200);
    expect(readB.json().id).toBe(ownerOfB.organizationId);
    expect(user.organizationId).not.toBe(ownerOfB.organizationId);

    const meA = (await get('/api/v1/users/me', keyA.headers)).json();
    expect(meA.organization_id).toBe(user.organizationId);
    expect(meA.role).toBe('admin');
    const meB = (await get('/api/v1/users/me', keyB.headers)).json();
    expect(meB.organization_id).toBe(ownerOfB.organizationId);
    expect(meB.role).toBe('user');

    // Switching the dashboard session to B does not move the key made in A.
    const switched = await t.app.inject({
      method: 'POST',
      url: '/api/v1/auth/switch-organization',
      headers: user.headers,
      payload: { organization_id: ownerOfB.organizationId },
    });
    expect(switched.statusCode).toBe(200);
    const stillA = await get(ORGANIZATION, keyA.headers);
    expect(stillA.statusCode).toBe(200);
    expect(stillA.json().id).toBe(user.organizationId);
  });
});

describe('secrets stay out of the logs', () => {
  it('a key used in every way (200, 403, 401, 429) never appears in a log line', async () => {
    const user = await f.user();
    const key = await newKey(user, { permissions: { organization: 'read' }, rateLimit: 2 });
    await awayFromMinuteEdge();
    expect((await get(ORGANIZATION, key.headers)).statusCode).toBe(200);
    expect((await get(KEYS, key.headers)).statusCode).toBe(403);
    expect((await get(`${ORGANIZATION}?key=${key.key}&api_key=${key.key}`, key.headers)).statusCode).toBe(
      200,
    );
    expect((await get(ORGANIZATION, key.headers)).statusCode).toBe(429);
    expect((await updateKey(user, key.id, { is_active: false })).statusCode).toBe(200);
    expect((await get(ORGANIZATION, key.headers)).statusCode).toBe(401);

    // The requests were logged (so the check below looks at real lines)…
    const requestLines = t.logs.filter((line) => line.includes('/api/v1/organization'));
    expect(requestLines.length).toBeGreaterThan(0);
    // …and no line of the whole file's run carries any secret minted here, or its hidden part.
    expect(secrets).toContain(key.key);
    for (const secret of secrets) {
      const leaks = t.logs.filter((line) => line.includes(secret) || line.includes(secret.slice(12)));
      expect(leaks, `secret ${secret.slice(0, 12)}… in logs`).toEqual([]);
    }
  });
});
