/**
 * The carriers' answering-machine verdicts through the platform's webhook route
 * (`/webhooks/{carrier}/status`): a signed verdict is recorded on its call (answered_by, a
 * call.machine_detection event) and told to the listeners; an unsigned one, one signed with another
 * account's key, or one naming another organization's call changes nothing. A call already final
 * keeps its record, and one whose session acted on a machine stays a machine's whatever a later
 * verdict or status callback says.
 */
import { and, eq } from 'drizzle-orm';
import { beforeAll, describe, expect, it } from 'vitest';
import { callEvents, calls } from '../src/db/schema/index.js';
import { Tenant } from '../src/db/tenant.js';
import { LiveCalls } from '../src/domains/calls/live.js';
import { carrierASignature } from '../src/providers/carriers/carrier-a.js';
import { seedCall } from './support/call-seed.js';
import { type CarrierOrganization, Factories } from './support/factories.js';
import { useTestPlatform } from './support/harness.js';

const t = useTestPlatform();
let f: Factories;
let org: CarrierOrganization;
let other: CarrierOrganization;
const heard: Array<{ callId: number; verdict: unknown }> = [];

beforeAll(async () => {
  f = new Factories(t);
  org = await f.carrierOrganization();
  other = await f.carrierOrganization();
  t.platform.services.carrierWebhooks.onMachineDetection((_tenant, callId, verdict) =>
    heard.push({ callId, verdict }),
  );
});

let serial = 0;
async function liveCall(owner: CarrierOrganization, callMeta: Record<string, unknown> = {}) {
  serial += 1;
  return seedCall(t.database, owner.admin.organizationId, {
    assistantId: owner.assistantId,
    status: 'in-progress',
    from: owner.number,
    callSid: `CAvm${String(serial).padStart(30, '0')}`,
    endedAt: null,
    duration: null,
    callMeta,
  });
}

/** Posts carrier_a's form callback to the call's status URL, signed with `token` (none: unsigned). */
function post(callId: number, params: Record<string, string>, token?: string) {
  const path = `/webhooks/carrier_a/status?call_id=${callId}`;
  const url = `${t.config.publicUrl}${path}`;
  return t.app.inject({
    method: 'POST',
    url: path,
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      ...(token ? { 'x-twilio-signature': carrierASignature(token, url, params) } : {}),
    },
    payload: new URLSearchParams(params).toString(),
  });
}

const verdict = (owner: CarrierOrganization, callSid: string, answeredBy: string) => ({
  CallSid: callSid,
  AccountSid: owner.account.account_sid,
  AnsweredBy: answeredBy,
  MachineDetectionDuration: '2100',
});

async function meta(callId: number) {
  const [row] = await t.database.db.select({ meta: calls.callMeta }).from(calls).where(eq(calls.id, callId));
  return row!.meta;
}

async function verdictEvents(callId: number) {
  const rows = await t.database.db
    .select({ data: callEvents.data })
    .from(callEvents)
    .where(and(eq(callEvents.callId, callId), eq(callEvents.type, 'call.machine_detection')));
  return rows.map((row) => row.data);
}

describe('a verdict through the status webhook', () => {
  it('is recorded on its call and told to the listeners', async () => {
    const call = await liveCall(org);
    const answer = await post(
      call.id,
      verdict(org, call.callSid!, 'machine_end_beep'),
      org.account.auth_token,
    );
    expect(answer.statusCode, answer.body).toBe(204);
    expect(await meta(call.id)).toMatchObject({ answered_by: 'machine' });
    expect(await verdictEvents(call.id)).toEqual([
      { call_sid: call.callSid, answered_by: 'machine', greeting_ended: 'beep' },
    ]);
    expect(heard.filter((entry) => entry.callId === call.id)).toEqual([
      { callId: call.id, verdict: { answeredBy: 'machine', greetingEnded: 'beep' } },
    ]);
  });

  it('an unknown verdict is recorded as nothing', async () => {
    const call = await liveCall(org);
    expect(
      (await post(call.id, verdict(org, call.callSid!, 'unknown'), org.account.auth_token)).statusCode,
    ).toBe(204);
    expect(await meta(call.id)).not.toHaveProperty('answered_by');
    expect(await verdictEvents(call.id)).toEqual([]);
  });

  it('unsigned, signed with another account, or naming another organization’s call: 403 and nothing changes', async () => {
    const call = await liveCall(org);
    const theirs = await liveCall(other);
    const attempts = [
      post(call.id, verdict(org, call.callSid!, 'machine_end_beep')),
      post(call.id, verdict(org, call.callSid!, 'machine_end_beep'), other.account.auth_token),
      // Their call's verdict, signed with their key, sent to our call's URL.
      post(call.id, verdict(other, theirs.callSid!, 'machine_end_beep'), other.account.auth_token),
      // Our call's verdict, with our key, sent to their call's URL.
      post(theirs.id, verdict(org, call.callSid!, 'machine_end_beep'), org.account.auth_token),
    ];
    for (const answer of await Promise.all(attempts)) expect(answer.statusCode, answer.body).toBe(403);
    for (const id of [call.id, theirs.id]) {
      expect(await meta(id)).not.toHaveProperty('answered_by');
      expect(await verdictEvents(id)).toEqual([]);
    }
    expect(heard.filter((entry) => entry.callId === call.id || entry.callId === theirs.id)).toEqual([]);
  });

  it('a final call keeps its record; a session that acted on a machine keeps it a machine', async () => {
    const ended = await seedCall(t.database, org.admin.organizationId, {
      assistantId: org.assistantId,
      from: org.number,
      callSid: 'CAvmfinal0000000000000000000000001',
    });
    expect(
      (await post(ended.id, verdict(org, ended.callSid!, 'human'), org.account.auth_token)).statusCode,
    ).toBe(204);
    expect(await meta(ended.id)).not.toHaveProperty('answered_by');

    const acted = await liveCall(org);
    // What the runtime calls when the session acts on a machine (voice/voicemail.ts).
    const live = new LiveCalls({
      db: t.database.db,
      carriers: {} as never,
      resolver: t.platform.services.configResolver,
    });
    await live.machineAnswered(new Tenant(org.admin.organizationId), acted.id, 'words');
    expect(
      (await post(acted.id, verdict(org, acted.callSid!, 'human'), org.account.auth_token)).statusCode,
    ).toBe(204);
    const completed = {
      CallSid: acted.callSid!,
      AccountSid: org.account.account_sid,
      From: org.number,
      To: acted.toPhoneNumber,
      Direction: 'outbound-api',
      CallStatus: 'completed',
      CallDuration: '12',
      AnsweredBy: 'human',
    };
    expect((await post(acted.id, completed, org.account.auth_token)).statusCode).toBe(204);
    expect(await meta(acted.id)).toMatchObject({ answered_by: 'machine', voicemail: { source: 'words' } });
  });
});
