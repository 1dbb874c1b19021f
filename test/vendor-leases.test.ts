/**
 * Vendor key leases (domains/leases) on a real database: a key is taken up to its limit and refused
 * beyond, a call taking a key again does not count twice, released and expired leases stop counting,
 * renewals keep a lease alive, the sweep clears expired rows, another organization's leases never
 * count — and two lease services ("processes") racing for a key's last slots on the same database
 * get exactly the slots there are. On a server (TEST_DATABASE_URL) the second service has its own
 * connection pool, as a second process would. The tests share one database; each uses its own keys.
 */
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { type Database, openDatabase } from '../src/db/client.js';
import { organizations, vendorLeases } from '../src/db/schema/index.js';
import { Tenant } from '../src/db/tenant.js';
import { type LeaseKey, VendorLeases } from '../src/domains/leases/service.js';
import { CallLeases } from '../src/voice/call-leases.js';
import { seedCall } from './support/call-seed.js';
import { openTestDatabase, waitFor } from './support/harness.js';
import { databaseUrl } from './support/template.js';

let database: Database;
let drop: () => Promise<void>;
/** A second connection to the same database on a server; the same instance on PGlite. */
let other: Database;
let orgA: Tenant;
let orgB: Tenant;
let keySerial = 0;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function organization(name: string): Promise<Tenant> {
  const [row] = await database.db
    .insert(organizations)
    .values({ name, slug: `${name}-${Date.now()}` })
    .returning({ id: organizations.id });
  return new Tenant(row!.id);
}

async function callsOf(tenant: Tenant, count: number): Promise<number[]> {
  const ids: number[] = [];
  for (let i = 0; i < count; i++)
    ids.push((await seedCall(database, tenant.organizationId, { status: 'in-progress' })).id);
  return ids;
}

function freshKey(kind: LeaseKey['kind'] = 'tts'): LeaseKey {
  keySerial += 1;
  return { kind, provider: kind === 'tts' ? 'tts_a' : 'stt_a', keyRef: `fallback:${1000 + keySerial}` };
}

beforeAll(async () => {
  ({ database, drop } = await openTestDatabase());
  const template = inject('template');
  if (template.kind === 'server') {
    const result = (await database.db.execute(sql`select current_database() as name`)) as unknown as {
      rows: Array<{ name: string }>;
    };
    other = await openDatabase({
      kind: 'server',
      url: databaseUrl(template.adminUrl, result.rows[0]!.name),
      poolSize: 5,
    });
  } else {
    other = database;
  }
  orgA = await organization('leases-a');
  orgB = await organization('leases-b');
});

afterAll(async () => {
  if (other !== database) await other.close();
  await database.close();
  await drop();
});

describe('a key under its limit', () => {
  it('is taken up to the limit and refused beyond it; a call taking it again counts once', async () => {
    const leases = new VendorLeases({ db: database.db });
    const key = freshKey();
    const [c1, c2, c3] = await callsOf(orgA, 3);
    expect(await leases.acquire(orgA, c1!, key, 2)).toBe(true);
    expect(await leases.acquire(orgA, c1!, key, 2)).toBe(true);
    expect(await leases.live(orgA, key)).toBe(1);
    expect(await leases.acquire(orgA, c2!, key, 2)).toBe(true);
    expect(await leases.acquire(orgA, c3!, key, 2)).toBe(false);
    expect(await leases.live(orgA, key)).toBe(2);
    // The refused call holds nothing.
    const rows = await database.db.select().from(vendorLeases).where(orgA.where(vendorLeases));
    expect(rows.filter((row) => row.callId === c3)).toEqual([]);
  });

  it('is free again for another call once a holder releases it', async () => {
    const leases = new VendorLeases({ db: database.db });
    const key = freshKey('stt');
    const [c1, c2] = await callsOf(orgA, 2);
    expect(await leases.acquire(orgA, c1!, key, 1)).toBe(true);
    expect(await leases.acquire(orgA, c2!, key, 1)).toBe(false);
    await leases.release(orgA, c1!);
    expect(await leases.live(orgA, key)).toBe(0);
    expect(await leases.acquire(orgA, c2!, key, 1)).toBe(true);
  });

  it('counts a lease only until it expires, unless it is renewed; the sweep clears expired rows', async () => {
    // No sweep in the background of the acquires: the test sweeps itself.
    const leases = new VendorLeases({
      db: database.db,
      timings: { ttlMs: 1000, heartbeatMs: 300, sweepMs: 3_600_000 },
    });
    await leases.sweep();
    const kept = freshKey();
    const lapsed = freshKey();
    const [holder, crashed, late] = await callsOf(orgA, 3);
    expect(await leases.acquire(orgA, holder!, kept, 1)).toBe(true);
    expect(await leases.acquire(orgA, crashed!, lapsed, 1)).toBe(true);
    for (let i = 0; i < 4; i++) {
      await sleep(300);
      expect(await leases.renew(orgA, holder!)).toBe(1);
    }
    // 1.2 s on: the renewed lease still counts, the other (a process that stopped) no longer does.
    expect(await leases.live(orgA, kept)).toBe(1);
    expect(await leases.live(orgA, lapsed)).toBe(0);
    expect(await leases.acquire(orgA, late!, kept, 1)).toBe(false);
    expect(
      (await database.db.select().from(vendorLeases).where(orgA.where(vendorLeases))).some(
        (row) => row.callId === crashed,
      ),
    ).toBe(true);
    expect(await leases.sweep()).toBeGreaterThanOrEqual(1);
    const left = await database.db.select().from(vendorLeases).where(orgA.where(vendorLeases));
    expect(left.some((row) => row.callId === crashed)).toBe(false);
    expect(left.some((row) => row.callId === holder)).toBe(true);
    expect(await leases.acquire(orgA, late!, lapsed, 1)).toBe(true);
  });
});

describe("a call's hold on its keys", () => {
  it('is renewed while the call lives, taken again if it went missing, and given back at the end', async () => {
    const leases = new VendorLeases({
      db: database.db,
      timings: { ttlMs: 1200, heartbeatMs: 200, sweepMs: 3_600_000 },
    });
    const [callId, rival] = await callsOf(orgA, 2);
    const limited = {
      provider: 'tts_a',
      apiKey: 'k',
      baseUrl: 'ws://127.0.0.1:1',
      label: 'organization key',
      limit: { keyRef: `fallback:${9000 + keySerial++}`, max: 1 },
    };
    const key = { provider: limited.provider, keyRef: limited.limit.keyRef };
    const warnings: object[] = [];
    const holder = new CallLeases(leases, orgA, callId!, { warn: (data) => warnings.push(data) });
    expect(await holder.hold('tts', { ...limited, limit: undefined })).toBe(true);
    expect(await leases.live(orgA, key)).toBe(0);
    expect(await holder.hold('tts', limited)).toBe(true);
    // Well past the expiry, the heartbeat has kept it counting.
    await sleep(1800);
    expect(await leases.live(orgA, key)).toBe(1);
    expect(await leases.acquire(orgA, rival!, { kind: 'tts', ...key }, 1)).toBe(false);
    // Another process gives the call's leases back (its wait for the stream ran out): the next
    // heartbeat takes the key again.
    await leases.release(orgA, callId!);
    await waitFor(async () => ((await leases.live(orgA, key)) === 1 ? true : undefined), 3000);
    await holder.release();
    expect(await leases.live(orgA, key)).toBe(0);
    // Once released, the call takes nothing more.
    expect(await holder.hold('tts', limited)).toBe(false);
    await sleep(400);
    expect(await leases.live(orgA, key)).toBe(0);
    expect(warnings).toEqual([]);
  });
});

describe('organizations', () => {
  it("never count each other's leases, nor release them", async () => {
    const leases = new VendorLeases({ db: database.db });
    const key = { kind: 'tts' as const, provider: 'tts_a', keyRef: 'organization' };
    const [a1, a2] = await callsOf(orgA, 2);
    const [b1] = await callsOf(orgB, 1);
    await leases.release(orgA, a1!);
    await leases.release(orgA, a2!);
    expect(await leases.acquire(orgB, b1!, key, 1)).toBe(true);
    // The same provider and key reference in organization A is another key: its slot is free.
    expect(await leases.acquire(orgA, a1!, key, 1)).toBe(true);
    expect(await leases.acquire(orgA, a2!, key, 1)).toBe(false);
    // A's tenant cannot release (or renew) B's call's lease.
    await leases.release(orgA, b1!);
    expect(await leases.renew(orgA, b1!)).toBe(0);
    expect(await leases.live(orgB, key)).toBe(1);
  });
});

describe('two processes racing', () => {
  it('get exactly the slots a key has, never more', async () => {
    const first = new VendorLeases({ db: database.db });
    const second = new VendorLeases({ db: other.db });
    for (const limit of [1, 3]) {
      const key = freshKey();
      const calls = await callsOf(orgA, 8);
      const taken = await Promise.all(
        calls.map((callId, i) => (i % 2 === 0 ? first : second).acquire(orgA, callId, key, limit)),
      );
      expect(taken.filter(Boolean)).toHaveLength(limit);
      expect(await first.live(orgA, key)).toBe(limit);
      expect(await second.live(orgA, key)).toBe(limit);
    }
  });
});
