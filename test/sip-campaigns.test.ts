/**
 * Campaigns from a number on a SIP trunk: a call campaign's attempt is a real SIP call through the
 * organization's trunk (sipp answers, then hangs up), and its execution finishes with the call's
 * outcome, read through the campaign API; the call's record names the agent that held it. SMS and
 * mixed campaigns on such a number are refused at start, with the reason (a trunk carries no SMS).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from './support/harness.js';
import { type SipOrganization, type SipRig, startSipRig } from './support/sip-rig.js';
import { startSipp } from './support/sipp.js';

let rig: SipRig;

beforeAll(async () => {
  rig = await startSipRig({ SIP_RING_TIMEOUT_SECONDS: '10' });
}, 60_000);
afterAll(async () => {
  await rig?.close();
});

const CONTACT = '+14155550177';

async function campaign(org: SipOrganization, body: Record<string, unknown>): Promise<number> {
  const created = await rig.t.app.inject({
    method: 'POST',
    url: '/api/v1/campaigns',
    headers: org.admin.headers,
    payload: { name: 'Trunk run', assistant_id: org.assistantId, retry_delay_minutes: 0, ...body },
  });
  expect(created.statusCode, created.body).toBe(201);
  const id = created.json().id as number;
  const added = await rig.t.app.inject({
    method: 'POST',
    url: `/api/v1/campaigns/${id}/contacts`,
    headers: org.admin.headers,
    payload: { contacts: [{ phone_number: CONTACT, name: 'ada' }] },
  });
  expect(added.statusCode, added.body).toBe(200);
  return id;
}

function start(org: SipOrganization, id: number) {
  return rig.t.app.inject({
    method: 'POST',
    url: `/api/v1/campaigns/${id}/start`,
    headers: org.admin.headers,
  });
}

async function read(org: SipOrganization, url: string) {
  const response = await rig.t.app.inject({ method: 'GET', url, headers: org.admin.headers });
  expect(response.statusCode, response.body).toBe(200);
  return response.json();
}

describe('a call campaign on a SIP trunk number', () => {
  it('calls its contact through the trunk and finishes the execution with the call’s outcome', async () => {
    const trunk = await startSipp({ scenario: 'uas_answer_then_bye.xml', timeoutSeconds: 40 });
    const org = await rig.organization({ port: trunk.port });
    const id = await campaign(org, { campaign_type: 'call', max_attempts: 1 });
    const started = await start(org, id);
    expect(started.statusCode, started.body).toBe(200);

    // While the trunk holds the call, the agent that placed it knows it (lookupCall).
    const live = await waitFor(async () => {
      const { executions } = await read(org, `/api/v1/campaigns/${id}/executions`);
      const callId = executions[0]?.call_id;
      if (!callId) return undefined;
      const call = await read(org, `/api/v1/calls/${callId}`);
      return call.status === 'in-progress' ? call : undefined;
    }, 20_000);
    const snapshot = await rig.agent.lookupCall(live.call_sid);
    expect(snapshot).toMatchObject({ callSid: live.call_sid, status: 'in-progress' });

    const sipp = await trunk.done;
    expect(sipp.code, sipp.errors || sipp.output).toBe(0);
    const done = await waitFor(async () => {
      const row = await read(org, `/api/v1/campaigns/${id}`);
      return row.status === 'completed' ? row : undefined;
    }, 20_000);
    expect(done).toMatchObject({ total_contacts: 1, completed_contacts: 1, failed_contacts: 0 });

    const { executions } = await read(org, `/api/v1/campaigns/${id}/executions`);
    expect(executions).toHaveLength(1);
    const [execution] = executions;
    expect(execution).toMatchObject({ status: 'completed', channel: 'call', attempt_number: 1 });
    expect(execution.finished_at).not.toBeNull();
    const { call, events } = await rig.finished(org, Number(execution.call_id));
    expect(call).toMatchObject({ status: 'completed', direction: 'outbound', call_sid: live.call_sid });
    expect(call.duration).toBeGreaterThanOrEqual(3);
    expect(execution.execution_data).toMatchObject({
      to_number: CONTACT,
      from_number: org.number,
      call_sid: live.call_sid,
      call_status: 'completed',
    });
    // The record names the agent that held the call, from the moment its INVITE went out.
    expect(call.call_meta).toMatchObject({ sip_agent: `127.0.0.1:${rig.agent.address.port}` });
    expect(events.map((event) => event.type)).toEqual(
      expect.arrayContaining(['call.queued', 'call.placed', 'call.in-progress', 'call.completed']),
    );
    // Ended: no process holds it any more.
    expect(await rig.agent.lookupCall(live.call_sid)).toBeUndefined();
  }, 90_000);
});

describe('an SMS on a SIP trunk number', () => {
  for (const type of ['sms', 'mixed'] as const) {
    it(`is refused: a ${type} campaign does not start, and says why`, async () => {
      const org = await rig.organization({ port: 5060 });
      const id = await campaign(org, { campaign_type: type, sms_message_template: 'Hello {{ name }}' });
      const started = await start(org, id);
      expect(started.statusCode, started.body).toBe(400);
      expect(started.body).toContain(`The number ${org.number} is on a SIP trunk, which carries no SMS`);
      expect((await read(org, `/api/v1/campaigns/${id}`)).status).toBe('draft');
    });
  }
});
