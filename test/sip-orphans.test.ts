/**
 * SIP calls left by a process that stopped without ending them (kill -9): the records name the agent
 * that held them (`call_meta.sip_agent`, its `host:port`), and when an agent starts on that address
 * it settles them — answered ones `completed`, lasting until the last moment recorded of them, the
 * others `failed` — through the calls domain, so events, billing and campaign attempts follow as for
 * any final status. The records are written here as that previous life left them; the agent then
 * starts on the same fixed port. Calls of another agent, of a carrier, already final, or held by the
 * agent now are left alone; each organization's calls are settled under that organization.
 * Against sipp and a bare socket playing trunks: a live call's record names its agent from the
 * moment its INVITE goes out (outbound) or it is recorded (inbound), and the agent knows the calls it
 * holds (`lookupCall`).
 */
import { createSocket } from 'node:dgram';
import { asc, eq, inArray } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  callEvents,
  calls,
  callTranscriptSegments,
  campaignExecutions,
  campaigns,
  ledgerEntries,
} from '../src/db/schema/index.js';
import {
  STOPPED_BEFORE_ANSWER,
  STOPPED_DURING_CALL,
  settleOrphanedSipCalls,
} from '../src/domains/calls/sip-orphans.js';
import type { SipAgent } from '../src/voice/sip/agent.js';
import { addContacts, addExecutions, ownCampaign } from './support/campaign-seed.js';
import { Factories, type TestUser } from './support/factories.js';
import { startTestPlatform, type TestPlatform, waitFor } from './support/harness.js';
import { type CallRecord, type SipRig, startSipRig } from './support/sip-rig.js';
import { freePort, startSipp } from './support/sipp.js';

let t: TestPlatform;
let f: Factories;
let port: number;
let address: string;

beforeAll(async () => {
  port = await freePort();
  address = `127.0.0.1:${port}`;
  const rtpMin = 30000 + 200 * Math.floor(Math.random() * 100);
  t = await startTestPlatform({
    SIP_HOST: '127.0.0.1',
    SIP_PORT: String(port),
    SIP_PUBLIC_HOST: '127.0.0.1',
    RTP_PORT_MIN: String(rtpMin),
    RTP_PORT_MAX: String(rtpMin + 199),
    SIP_TRUNK_CHECK_INTERVAL_SECONDS: '3600',
  });
  f = new Factories(t);
}, 60_000);
afterAll(async () => {
  await t?.close();
});

const ago = (seconds: number) => new Date(Date.now() - seconds * 1000);
let sid = 0;

interface Seed {
  provider?: string;
  direction?: 'inbound' | 'outbound';
  status: (typeof calls.$inferInsert)['status'];
  agent?: string;
  startedAt?: Date;
  updatedAt: Date;
  campaignId?: number;
}

async function seedCall(user: TestUser, seed: Seed) {
  const [row] = await t.database.db
    .insert(calls)
    .values({
      organizationId: user.organizationId,
      provider: seed.provider ?? 'sip_trunk',
      callSid: `orphan-${++sid}@127.0.0.1`,
      direction: seed.direction ?? 'outbound',
      fromPhoneNumber: '+16285550001',
      toPhoneNumber: '+14155550123',
      customerPhoneNumber: '+14155550123',
      status: seed.status,
      callMeta: seed.agent === undefined ? {} : { sip_agent: seed.agent },
      startedAt: seed.startedAt ?? null,
      updatedAt: seed.updatedAt,
      createdAt: ago(120),
      ...(seed.campaignId === undefined ? {} : { campaignId: seed.campaignId }),
    })
    .returning();
  return row!;
}

async function callRow(id: number) {
  const [row] = await t.database.db.select().from(calls).where(eq(calls.id, id));
  return row!;
}

async function eventsOf(id: number) {
  return t.database.db.select().from(callEvents).where(eq(callEvents.callId, id)).orderBy(asc(callEvents.id));
}

describe('an agent starting on the address of a stopped one', () => {
  let a: TestUser;
  let b: TestUser;
  const ids: Record<string, number> = {};
  let executions: number[];
  let agent: SipAgent;

  beforeAll(async () => {
    a = await f.user();
    b = await f.user();
    const { campaignId } = await ownCampaign(t, f, a);
    await t.database.db
      .update(campaigns)
      .set({ status: 'running', maxAttempts: 1, startedAt: ago(300) })
      .where(eq(campaigns.id, campaignId));
    const contacts = await addContacts(t, a, campaignId, ['in_progress', 'in_progress']);

    // Organization a: an answered campaign call whose last news is its transcript, 40 s after the
    // answer; an outbound call whose INVITE had gone out (claimed, not answered).
    const answered = await seedCall(a, {
      status: 'in-progress',
      agent: address,
      startedAt: ago(60),
      updatedAt: ago(50),
      campaignId,
    });
    await t.database.db.insert(callEvents).values({
      organizationId: a.organizationId,
      callId: answered.id,
      type: 'call.in-progress',
      data: {},
      createdAt: ago(30),
    });
    await t.database.db.insert(callTranscriptSegments).values({
      organizationId: a.organizationId,
      callId: answered.id,
      position: 1,
      speaker: 'assistant',
      text: 'Hello, this is the clinic.',
      startedAt: ago(25),
      endedAt: ago(20),
    });
    ids.answered = answered.id;
    ids.dialling = (
      await seedCall(a, { status: 'queued', agent: address, updatedAt: ago(10), campaignId })
    ).id;
    executions = await addExecutions(t, a, campaignId, [
      {
        contactId: contacts[0]!.id,
        attemptNumber: 1,
        channel: 'call',
        status: 'in_progress',
        callId: ids.answered,
      },
      {
        contactId: contacts[1]!.id,
        attemptNumber: 1,
        channel: 'call',
        status: 'in_progress',
        callId: ids.dialling,
      },
    ]);

    // Organization b: an inbound call ringing, and an inbound call answered 5 s before its last update.
    ids.ringing = (
      await seedCall(b, { direction: 'inbound', status: 'ringing', agent: address, updatedAt: ago(8) })
    ).id;
    ids.talking = (
      await seedCall(b, {
        direction: 'inbound',
        status: 'in-progress',
        agent: address,
        startedAt: ago(12),
        updatedAt: ago(7),
      })
    ).id;

    // Left alone: another agent's call, a carrier's call, a call already final, a call naming no agent.
    ids.otherAgent = (
      await seedCall(a, {
        status: 'in-progress',
        agent: `127.0.0.1:${port + 1}`,
        startedAt: ago(30),
        updatedAt: ago(5),
      })
    ).id;
    ids.carrier = (
      await seedCall(a, {
        provider: 'carrier_a',
        status: 'in-progress',
        agent: address,
        startedAt: ago(30),
        updatedAt: ago(5),
      })
    ).id;
    ids.final = (await seedCall(b, { status: 'busy', agent: address, updatedAt: ago(40) })).id;
    ids.unnamed = (await seedCall(b, { status: 'ringing', updatedAt: ago(5) })).id;

    agent = await t.platform.startSip();
    expect(agent.address.port).toBe(port);
  }, 60_000);

  it('ends an answered call completed, lasting until the last moment recorded, with the reason', async () => {
    const call = await callRow(ids.answered!);
    expect(call).toMatchObject({ status: 'completed', duration: 40 });
    expect(call.callMeta).toMatchObject({ sip_agent: address, error: STOPPED_DURING_CALL });
    // Ended when its transcript's last segment ended; started 40 s before.
    const transcriptEnd = (
      await t.database.db
        .select({ endedAt: callTranscriptSegments.endedAt })
        .from(callTranscriptSegments)
        .where(eq(callTranscriptSegments.callId, ids.answered!))
    )[0]!.endedAt;
    expect(call.endedAt?.getTime()).toBe(transcriptEnd.getTime());
    expect(call.startedAt?.getTime()).toBe(transcriptEnd.getTime() - 40_000);
    const completed = (await eventsOf(ids.answered!)).find((event) => event.type === 'call.completed');
    expect(completed?.data).toMatchObject({ duration: 40, error: STOPPED_DURING_CALL });
    expect(Number(call.cost)).toBeGreaterThan(0);
  });

  it('fails the calls not answered yet, with the reason, outbound and inbound', async () => {
    for (const id of [ids.dialling!, ids.ringing!]) {
      const call = await callRow(id);
      expect(call).toMatchObject({ status: 'failed', duration: 0 });
      expect(call.callMeta).toMatchObject({ sip_agent: address, error: STOPPED_BEFORE_ANSWER });
      const failed = (await eventsOf(id)).find((event) => event.type === 'call.failed');
      expect(failed?.data).toMatchObject({ error: STOPPED_BEFORE_ANSWER });
    }
    const talking = await callRow(ids.talking!);
    expect(talking).toMatchObject({ status: 'completed', duration: 5 });
  });

  it('finishes the campaign attempts on those calls', async () => {
    const rows = await t.database.db
      .select()
      .from(campaignExecutions)
      .where(inArray(campaignExecutions.id, executions))
      .orderBy(asc(campaignExecutions.id));
    expect(rows.map((row) => row.status)).toEqual(['completed', 'failed']);
    expect(rows[1]!.executionData).toMatchObject({ error_details: STOPPED_BEFORE_ANSWER });
    expect(rows.every((row) => row.finishedAt !== null)).toBe(true);
  });

  it('leaves other agents’ calls, carriers’ calls, final calls and calls naming no agent alone', async () => {
    expect((await callRow(ids.otherAgent!)).status).toBe('in-progress');
    expect((await callRow(ids.carrier!)).status).toBe('in-progress');
    expect(await callRow(ids.final!)).toMatchObject({ status: 'busy', endedAt: null, duration: null });
    expect((await callRow(ids.unnamed!)).status).toBe('ringing');
    for (const id of [ids.otherAgent!, ids.carrier!, ids.final!, ids.unnamed!])
      expect(await eventsOf(id)).toEqual([]);
  });

  it('settles each organization’s calls under that organization: events, charges, API', async () => {
    const owners: Array<[TestUser, number[]]> = [
      [a, [ids.answered!, ids.dialling!]],
      [b, [ids.ringing!, ids.talking!]],
    ];
    for (const [owner, mine] of owners) {
      for (const id of mine) {
        for (const event of await eventsOf(id)) expect(event.organizationId).toBe(owner.organizationId);
        const seen = await t.app.inject({
          method: 'GET',
          url: `/api/v1/calls/${id}`,
          headers: owner.headers,
        });
        expect(seen.statusCode).toBe(200);
      }
    }
    const charges = await t.database.db
      .select({ organizationId: ledgerEntries.organizationId, reference: ledgerEntries.reference })
      .from(ledgerEntries)
      .where(inArray(ledgerEntries.reference, [`call:${ids.answered}`, `call:${ids.talking}`]))
      .orderBy(asc(ledgerEntries.id));
    expect(charges).toEqual([
      { organizationId: a.organizationId, reference: `call:${ids.answered}` },
      { organizationId: b.organizationId, reference: `call:${ids.talking}` },
    ]);
    const foreign = await t.app.inject({
      method: 'GET',
      url: `/api/v1/calls/${ids.answered}`,
      headers: b.headers,
    });
    expect([403, 404]).toContain(foreign.statusCode);
  });

  it('keeps a call the agent holds now, and knows no call it does not hold', async () => {
    const user = await f.user();
    const held = await seedCall(user, {
      status: 'in-progress',
      agent: address,
      startedAt: ago(5),
      updatedAt: ago(1),
    });
    const settled = await settleOrphanedSipCalls(
      { db: t.database.db, calls: t.platform.services.calls },
      address,
      async (callSid) => callSid === held.callSid,
    );
    expect(settled).toBe(0);
    expect((await callRow(held.id)).status).toBe('in-progress');
    expect(await agent.lookupCall(held.callSid!)).toBeUndefined();
  });
});

describe('a SIP call’s record names the agent that holds it', () => {
  let rig: SipRig;
  let agentAddress: string;

  beforeAll(async () => {
    rig = await startSipRig();
    agentAddress = `127.0.0.1:${rig.agent.address.port}`;
  }, 60_000);
  afterAll(async () => {
    await rig?.close();
  });

  async function record(org: { admin: TestUser }, id: number): Promise<CallRecord> {
    const response = await rig.t.app.inject({
      method: 'GET',
      url: `/api/v1/calls/${id}`,
      headers: org.admin.headers,
    });
    expect(response.statusCode, response.body).toBe(200);
    return response.json();
  }

  it('outbound: as its INVITE goes out, before the trunk answers anything', async () => {
    // A trunk that takes the INVITE and never answers.
    const trunk = createSocket('udp4');
    const trunkPort = await new Promise<number>((resolve) =>
      trunk.bind(0, '127.0.0.1', () => resolve(trunk.address().port)),
    );
    const invited = new Promise<void>((resolve) =>
      trunk.on('message', (message) => {
        if (message.toString('latin1').startsWith('INVITE ')) resolve();
      }),
    );
    try {
      const org = await rig.organization({ port: trunkPort });
      const callId = await rig.dial(org, '+14155550188');
      await invited;
      const claimed = await waitFor(async () => {
        const call = await record(org, callId);
        return call.call_meta?.sip_agent ? call : undefined;
      }, 10_000);
      expect(claimed).toMatchObject({ status: 'queued', call_meta: { sip_agent: agentAddress } });
      expect(await rig.agent.lookupCall(claimed.call_sid)).toMatchObject({
        callSid: claimed.call_sid,
        status: 'queued',
      });
    } finally {
      trunk.close();
    }
  }, 60_000);

  it('inbound: from the moment it is recorded', async () => {
    const org = await rig.organization({ port: 5060 });
    const caller = await startSipp({
      scenario: 'uac_invite_play_bye.xml',
      remote: agentAddress,
      service: org.number,
      timeoutSeconds: 30,
    });
    const live = await waitFor(async () => {
      const list = await rig.t.app.inject({
        method: 'GET',
        url: '/api/v1/calls',
        headers: org.admin.headers,
      });
      const [listed] = list.json() as Array<{ id: number }>;
      if (!listed) return undefined;
      const call = await record(org, listed.id);
      return call.status === 'in-progress' ? call : undefined;
    }, 20_000);
    expect(live).toMatchObject({ direction: 'inbound', call_meta: { sip_agent: agentAddress } });
    expect(await rig.agent.lookupCall(live.call_sid)).toMatchObject({ status: 'in-progress' });
    const sipp = await caller.done;
    expect(sipp.code, sipp.errors || sipp.output).toBe(0);
    const { call } = await rig.finished(org, live.id);
    expect(call).toMatchObject({ status: 'completed', call_meta: { sip_agent: agentAddress } });
    expect(await rig.agent.lookupCall(live.call_sid)).toBeUndefined();
  }, 60_000);
});
