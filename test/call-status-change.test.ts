/**
 * A carrier callback's status, decided from the call it read (src/domains/calls/status-change.ts) and
 * applied by CallService.applyReportedStatus: nothing when it moves nothing, one conditional statement
 * for a plain move while the call is still as read, the locked transaction otherwise. The carrier
 * flows (carrier-*.test.ts, carrier-flows.test.ts) run the whole path; here each branch on its own,
 * including a call read before another callback moved it.
 */
import { sql } from 'drizzle-orm';
import { beforeAll, describe, expect, it } from 'vitest';
import { Tenant } from '../src/db/tenant.js';
import { statusChange } from '../src/domains/calls/status-change.js';
import * as store from '../src/domains/calls/store.js';
import { Factories } from './support/factories.js';
import { useTestPlatform } from './support/harness.js';

const t = useTestPlatform();
let f: Factories;
beforeAll(() => {
  f = new Factories(t);
});

/** A carrier_a status event; `callSid`: the carrier's id of the call (unique per call). */
const status = (
  value: store.CallRow['status'],
  extra: { durationSeconds?: number; sipAgent?: string; callSid?: string } = {},
) => ({ kind: 'call_status' as const, callSid: 'CA-status-change', status: value, ...extra });

let serial = 0;
/** A queued outbound call of a new organization, as a campaign or /calls/initiate records it. */
async function queuedCall(): Promise<{ tenant: Tenant; call: store.CallRow; assistantId: number }> {
  const { admin, assistantId, number, numberId } = await f.carrierOrganization();
  const tenant = new Tenant(admin.organizationId);
  const to = `+1415777${String(++serial).padStart(4, '0')}`;
  const call = await t.platform.services.calls.recordOutbound(t.platform.database.db, tenant, {
    assistantId,
    phoneNumberId: numberId,
    provider: 'carrier_a',
    from: number,
    to,
    callMeta: {},
  });
  return { tenant, call, assistantId };
}

async function eventsOf(tenant: Tenant, callId: number): Promise<string[]> {
  const rows = await store.eventsOf(t.platform.database.db, tenant, callId, { skip: 0, limit: 50 });
  return rows.map((row) => row.type);
}

describe('statusChange (pure)', () => {
  const call = {
    status: 'ringing',
    callSid: 'CA1',
    callMeta: {},
    startedAt: null,
  } as unknown as store.CallRow;

  it('moves nothing for a status behind the call or repeated without a duration', () => {
    expect(statusChange(call, status('queued'), 1).kind).toBe('none');
    expect(statusChange(call, status('ringing'), 1).kind).toBe('none');
    expect(statusChange({ ...call, status: 'completed' }, status('in-progress'), 1).kind).toBe('none');
  });

  it("records a SIP agent's claim without a move", () => {
    const change = statusChange(call, status('ringing', { sipAgent: '10.0.0.1:5060' }), 1);
    expect(change).toMatchObject({ kind: 'agent', changes: { callMeta: { sip_agent: '10.0.0.1:5060' } } });
  });

  it('moves forward, a final status with its billed duration and cost', () => {
    const answered = statusChange(call, status('in-progress'), 1);
    expect(answered).toMatchObject({ kind: 'move', final: false, event: { type: 'call.in-progress' } });
    const ended = statusChange(call, status('completed', { durationSeconds: 90 }), 2);
    expect(ended).toMatchObject({ kind: 'move', final: true, duration: 90, cost: 3 });
  });
});

describe('applyReportedStatus', () => {
  it('a plain move: the call and its event written, once', async () => {
    const { tenant, call } = await queuedCall();
    await t.platform.services.calls.applyReportedStatus(
      { call, webhookUrl: null },
      status('ringing', { callSid: `CA-${call.id}` }),
    );
    const moved = await store.findCall(t.platform.database.db, tenant, call.id);
    expect(moved?.status).toBe('ringing');
    expect(await eventsOf(tenant, call.id)).toEqual(['call.queued', 'call.ringing']);
  });

  it('a status that moves nothing on the call as read writes nothing', async () => {
    const { tenant, call } = await queuedCall();
    await t.platform.services.calls.applyReportedStatus(
      { call, webhookUrl: null },
      status('queued', { callSid: `CA-${call.id}` }),
    );
    expect(await eventsOf(tenant, call.id)).toEqual(['call.queued']);
  });

  it('a call moved by another callback since it was read is decided again under the lock', async () => {
    const { tenant, call } = await queuedCall();
    // Another callback moved it to ringing after this one read it as queued.
    await t.platform.services.calls.applyStatus(
      tenant.organizationId,
      call.id,
      status('ringing', { callSid: `CA-${call.id}` }),
    );
    await t.platform.services.calls.applyReportedStatus(
      { call, webhookUrl: null },
      status('in-progress', { callSid: `CA-${call.id}` }),
    );
    const moved = await store.findCall(t.platform.database.db, tenant, call.id);
    expect(moved?.status).toBe('in-progress');
    expect(moved?.startedAt).not.toBeNull();
    expect(await eventsOf(tenant, call.id)).toEqual(['call.queued', 'call.ringing', 'call.in-progress']);
  });

  it('the one-statement move does not apply to a call changed since it was read, nor write its event', async () => {
    const { tenant, call } = await queuedCall();
    const db = t.platform.database.db;
    await db.execute(
      sql`update calls set call_meta = '{"answered_by": "human"}'::jsonb where id = ${call.id}`,
    );
    const event = { type: 'call.ringing', data: {} };
    const options = { noWebhookUrl: true };
    expect(await store.moveCallIfUnchanged(db, tenant, call, { status: 'ringing' }, event, options)).toBe(
      false,
    );
    expect((await store.findCall(db, tenant, call.id))?.status).toBe('queued');
    expect(await eventsOf(tenant, call.id)).toEqual(['call.queued']);
  });

  it("an assistant with a webhook_url takes the locked path, which sends the call's event", async () => {
    const { tenant, call, assistantId } = await queuedCall();
    const db = t.platform.database.db;
    const options = { noWebhookUrl: true };
    await db.execute(
      sql`update assistants set config = config || '{"webhook_url": "https://hooks.example.com/calls"}'::jsonb
        where id = ${assistantId}`,
    );
    const event = { type: 'call.ringing', data: {} };
    expect(await store.moveCallIfUnchanged(db, tenant, call, { status: 'ringing' }, event, options)).toBe(
      false,
    );
    const seen = await store.lockCallForStatus(db, tenant, call.id);
    expect(seen?.webhookUrl).toBe('https://hooks.example.com/calls');
    await t.platform.services.calls.applyReportedStatus(
      seen!,
      status('ringing', { callSid: `CA-${call.id}` }),
    );
    expect((await store.findCall(db, tenant, call.id))?.status).toBe('ringing');
    const deliveries = await db.execute(
      sql`select event_type from webhook_deliveries where organization_id = ${tenant.organizationId}`,
    );
    const types = (deliveries as unknown as { rows: Array<{ event_type: string }> }).rows.map(
      (row) => row.event_type,
    );
    expect(types).toEqual(['call.ringing']);
  });

  it("another organization's call is neither moved nor found", async () => {
    const { call } = await queuedCall();
    const other = await queuedCall();
    const db = t.platform.database.db;
    const event = { type: 'call.ringing', data: {} };
    const options = { noWebhookUrl: true };
    expect(
      await store.moveCallIfUnchanged(db, other.tenant, call, { status: 'ringing' }, event, options),
    ).toBe(false);
    expect(await store.findCall(db, other.tenant, call.id)).toBeUndefined();
  });
});
